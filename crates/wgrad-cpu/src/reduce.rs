//! Reductions over axes: sum, mean, prod, max, min, var, argmax, argmin.
//!
//! Each output element reduces one contiguous row: when the reduced axes
//! are the trailing ones of a contiguous tensor the rows are read in place,
//! otherwise the reduced axes are permuted to the end and copied. Sums and
//! means over the leading axes (bias gradients) instead add whole rows
//! into column accumulators, in exactly the order the row-wise sum would
//! use. Sums are pairwise in f32, close to the GPU's f32 tree reductions
//! (tests compare with relative tolerances) and far more accurate than a
//! running sum.

use std::borrow::Cow;
use std::ops::Range;

use wgrad_core::shape::{normalize_axes, normalize_axis, reduced_shape};
use wgrad_core::{BinaryOp, Error, Result};

use crate::alloc::{During, try_vec, try_zeroed};
use crate::parallel;
use crate::tensor::CpuTensor;

/// Rows shorter than this are summed directly; longer ones are split in two.
const PAIRWISE_BLOCK: usize = 32;

/// The value every `f32` sum starts from: `+0.0`, as in PyTorch and the GPU
/// kernels (so an empty sum is `0.0`, not `Iterator::sum`'s `-0.0`); the
/// column sums below start where a row sum does.
const SUM_START: f32 = 0.0;

/// Pairwise (tree) sum of `f(x)` over `xs`. Long halves run on two threads;
/// the tree, and so the result, is the same either way.
fn pairwise_sum(xs: &[f32], f: &(impl Fn(f32) -> f32 + Sync)) -> f32 {
    if xs.len() <= PAIRWISE_BLOCK {
        xs.iter().fold(SUM_START, |acc, &x| acc + f(x))
    } else {
        let (lo, hi) = xs.split_at(xs.len() / 2);
        if parallel::worth_splitting(xs.len()) {
            let (a, b) = rayon::join(|| pairwise_sum(lo, f), || pairwise_sum(hi, f));
            parallel::keep_warm();
            a + b
        } else {
            pairwise_sum(lo, f) + pairwise_sum(hi, f)
        }
    }
}

/// For each column `c` in `cols` of the row-major `[rows, width]` matrix
/// `data`, the [`pairwise_sum`] of that column over `rows`, into `out`
/// (`cols.len()` long): the same tree and leaf order, so bit-identical to
/// summing each column separately, but every step adds a whole row slice.
fn pairwise_columns(
    data: &[f32],
    width: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [f32],
) {
    let n = rows.len();
    if n <= PAIRWISE_BLOCK {
        out.fill(SUM_START);
        for r in rows {
            let row = &data[r * width + cols.start..r * width + cols.end];
            for (o, &x) in out.iter_mut().zip(row) {
                *o += x;
            }
        }
    } else {
        let mid = rows.start + n / 2;
        pairwise_columns(data, width, rows.start..mid, cols.clone(), out);
        // One column block: this branch needs more than PAIRWISE_BLOCK
        // rows, so `sum_leading`'s blocks are at most TASK_ELEMS /
        // PAIRWISE_BLOCK columns here. Small and bounded, so infallible.
        let mut hi = vec![0.0f32; out.len()];
        pairwise_columns(data, width, mid..rows.end, cols, &mut hi);
        for (o, &h) in out.iter_mut().zip(&hi) {
            *o += h;
        }
    }
}

/// The [`pairwise_columns`] sum of every column of the row-major `[rows,
/// width]` matrix `data` (`width` > 0), in column blocks of roughly one
/// task's worth of input each, over threads when large.
fn column_sums(op: &'static str, data: &[f32], rows: usize, width: usize) -> Result<Vec<f32>> {
    let mut out = try_zeroed(op, width)?;
    let block = (parallel::TASK_ELEMS / rows.max(1)).max(64).min(width);
    parallel::for_each_row(&mut out, block, rows * width, |i, o| {
        let cols = i * block..i * block + o.len();
        pairwise_columns(data, width, 0..rows, cols, o);
    });
    Ok(out)
}

/// A tensor regrouped so each output element owns one contiguous row.
struct Rows<'a> {
    data: Cow<'a, [f32]>,
    /// Number of rows (output elements).
    outer: usize,
    /// Length of each row (elements reduced into one output).
    inner: usize,
}

impl Rows<'_> {
    /// Applies `f` to every row (rows may be empty); `OutOfMemory` naming
    /// `op` if the output does not fit.
    fn map<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl Fn(&[f32]) -> T + Sync,
    ) -> Result<Vec<T>> {
        if self.inner == 0 {
            let mut out = try_vec(op, self.outer)?;
            out.extend((0..self.outer).map(|_| f(&[])));
            return Ok(out);
        }
        parallel::map_rows(&self.data, self.inner, 1, f).during(op)
    }
}

impl CpuTensor {
    /// The F32 tensor with the (sorted, normalised) `axes` moved last, in
    /// place when they already are and the tensor is contiguous, else as a
    /// copy (`OutOfMemory` naming `op` if it does not fit). The caller has
    /// checked the dtype.
    fn rows(&self, op: &'static str, axes: &[usize]) -> Result<Rows<'_>> {
        let rank = self.rank();
        let inner: usize = axes.iter().map(|&a| self.shape()[a]).product();
        let outer: usize = (0..rank)
            .filter(|a| !axes.contains(a))
            .map(|a| self.shape()[a])
            .product();
        let trailing = axes
            .iter()
            .enumerate()
            .all(|(i, &a)| a == rank - axes.len() + i);
        if trailing && let Some(data) = self.contiguous_slice::<f32>()? {
            return Ok(Rows {
                data: Cow::Borrowed(data),
                outer,
                inner,
            });
        }
        let kept = (0..rank).filter(|a| !axes.contains(a));
        let perm: Vec<isize> = kept
            .chain(axes.iter().copied())
            .map(|a| a as isize)
            .collect();
        let moved = self.with_layout(self.layout.permute(&perm)?);
        Ok(Rows {
            data: Cow::Owned(moved.to_vec_for::<f32>(op)?),
            outer,
            inner,
        })
    }

    /// Reduces `axes` (empty = all) with `f` applied to each row.
    fn reduce_with(
        &self,
        op: &'static str,
        axes: &[isize],
        keepdim: bool,
        nonempty: bool,
        f: impl Fn(&[f32]) -> f32 + Sync,
    ) -> Result<Self> {
        self.f32_input(op)?;
        let axes = normalize_axes(op, axes, self.rank())?;
        let rows = self.rows(op, &axes)?;
        if nonempty && rows.inner == 0 {
            return Err(empty_reduction(op, self.shape(), &axes));
        }
        let out = rows.map(op, f)?;
        CpuTensor::from_vec(out, &reduced_shape(self.shape(), &axes, keepdim))
    }

    /// Pairwise sums over the leading `axes` of a contiguous tensor, one per
    /// remaining element (`None` for any other case). Same values as the
    /// row-wise path, without transposing the data first.
    fn sum_leading(&self, op: &'static str, axes: &[usize]) -> Result<Option<Vec<f32>>> {
        let k = axes.len();
        let leading = k > 0 && k < self.rank() && axes.iter().enumerate().all(|(i, &a)| a == i);
        if !leading {
            return Ok(None);
        }
        let Some(data) = self.contiguous_slice::<f32>()? else {
            return Ok(None);
        };
        let rows: usize = self.shape()[..k].iter().product();
        let width: usize = self.shape()[k..].iter().product();
        if width == 0 {
            return Ok(Some(Vec::new()));
        }
        column_sums(op, data, rows, width).map(Some)
    }

    /// Pairwise sums over leading and trailing `axes` of a contiguous
    /// tensor with a kept block between them (a per-channel bias gradient:
    /// `[N, C, H, W]` over `(0, 2, 3)`), `None` for any other case. Each
    /// trailing block is summed in place, then the per-block sums down the
    /// leading axes, instead of transposing the data into rows first. The
    /// tree differs from the row-wise path's (both pairwise, as accurate).
    fn sum_leading_and_trailing(
        &self,
        op: &'static str,
        axes: &[usize],
    ) -> Result<Option<Vec<f32>>> {
        let rank = self.rank();
        let lead = axes
            .iter()
            .enumerate()
            .take_while(|&(i, &a)| a == i)
            .count();
        let trail = axes.len() - lead;
        let split = rank - trail;
        let shaped = lead > 0
            && trail > 0
            && split > lead
            && axes[lead..]
                .iter()
                .enumerate()
                .all(|(i, &a)| a == split + i);
        if !shaped {
            return Ok(None);
        }
        let Some(data) = self.contiguous_slice::<f32>()? else {
            return Ok(None);
        };
        let inner: usize = self.shape()[split..].iter().product();
        let kept: usize = self.shape()[lead..split].iter().product();
        let rows: usize = self.shape()[..lead].iter().product();
        if inner == 0 || kept == 0 || rows == 0 {
            return Ok(None); // the general path handles empty shapes
        }
        let blocks = Rows {
            data: Cow::Borrowed(data),
            outer: rows * kept,
            inner,
        };
        let partial = blocks.map(op, |r| pairwise_sum(r, &|x| x))?;
        column_sums(op, &partial, rows, kept).map(Some)
    }

    /// Shared body of sum and mean (`mean` divides by the reduced count).
    fn sum_or_mean(
        &self,
        op: &'static str,
        axes: &[isize],
        keepdim: bool,
        mean: bool,
    ) -> Result<Self> {
        self.f32_input(op)?;
        let norm = normalize_axes(op, axes, self.rank())?;
        let fast = match self.sum_leading(op, &norm)? {
            Some(out) => Some(out),
            None => self.sum_leading_and_trailing(op, &norm)?,
        };
        if let Some(mut out) = fast {
            if mean {
                let n: usize = norm.iter().map(|&a| self.shape()[a]).product();
                out.iter_mut().for_each(|x| *x /= n as f32);
            }
            return CpuTensor::from_vec(out, &reduced_shape(self.shape(), &norm, keepdim));
        }
        self.reduce_with(op, axes, keepdim, false, |r| {
            let s = pairwise_sum(r, &|x| x);
            if mean { s / r.len() as f32 } else { s }
        })
    }

    /// Sum over `axes` (`&[]` = all); the sum of nothing is 0.
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.sum_or_mean("sum", axes, keepdim, false)
    }

    /// Mean over `axes` (`&[]` = all); the mean of nothing is NaN.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.sum_or_mean("mean", axes, keepdim, true)
    }

    /// Product over `axes` (`&[]` = all; `torch.prod`), left to right in
    /// f32; the product of nothing is 1.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.reduce_with("prod", axes, keepdim, false, |r| r.iter().product())
    }

    /// Maximum over `axes` (`&[]` = all); NaN propagates. Empty reductions
    /// are an error.
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.reduce_with("max", axes, keepdim, true, |r| {
            r.iter()
                .copied()
                .fold(r[0], |m, x| BinaryOp::Maximum.apply(m, x))
        })
    }

    /// Minimum over `axes` (`&[]` = all); NaN propagates. Empty reductions
    /// are an error.
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.reduce_with("min", axes, keepdim, true, |r| {
            r.iter()
                .copied()
                .fold(r[0], |m, x| BinaryOp::Minimum.apply(m, x))
        })
    }

    /// Variance over `axes`: `sum((x - mean)^2) / max(0, n - correction)`
    /// (`correction = 1` is the unbiased estimator, as in `torch.var`).
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Self> {
        self.reduce_with("var", axes, keepdim, false, |r| {
            let n = r.len();
            // Shifted by the first element (as layer_norm): a constant
            // row's variance is exactly 0, as PyTorch's Welford gives.
            let k = crate::layer_norm::shift_of(r);
            let mean = k + pairwise_sum(r, &|x| x - k) / n as f32;
            let ss = pairwise_sum(r, &|x| (x - mean) * (x - mean));
            ss / n.saturating_sub(correction) as f32
        })
    }

    /// Index (I32) of the first maximum along `axis`; NaN counts as the
    /// maximum, as in PyTorch.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Self> {
        self.arg_extreme("argmax", axis, keepdim, |x, best| x > best)
    }

    /// Index (I32) of the first minimum along `axis`; NaN counts as the
    /// minimum, as in PyTorch.
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Self> {
        self.arg_extreme("argmin", axis, keepdim, |x, best| x < best)
    }

    /// Shared body of argmax/argmin: `better(x, best)` says whether `x`
    /// strictly beats the current extreme, so ties keep the first index.
    fn arg_extreme(
        &self,
        op: &'static str,
        axis: isize,
        keepdim: bool,
        better: impl Fn(f32, f32) -> bool + Sync,
    ) -> Result<Self> {
        self.f32_input(op)?;
        let a = normalize_axis(op, axis, self.rank())?;
        let rows = self.rows(op, &[a])?;
        if rows.inner == 0 {
            return Err(empty_reduction(op, self.shape(), &[a]));
        }
        if i32::try_from(rows.inner).is_err() {
            return Err(Error::invalid(
                op,
                format!(
                    "axis {axis} of shape {:?} is too long for I32 indices",
                    self.shape()
                ),
            ));
        }
        let out: Vec<i32> = rows.map(op, |r| {
            let mut best_i = 0;
            for (i, &x) in r.iter().enumerate().skip(1) {
                let best = r[best_i];
                if best.is_nan() {
                    break;
                }
                if x.is_nan() || better(x, best) {
                    best_i = i;
                }
            }
            best_i as i32
        })?;
        CpuTensor::from_vec(out, &reduced_shape(self.shape(), &[a], keepdim))
    }
}

/// The error for max/min/arg* over zero elements (they have no identity).
fn empty_reduction(op: &'static str, shape: &[usize], axes: &[usize]) -> Error {
    Error::invalid(
        op,
        format!("cannot reduce shape {shape:?} over axes {axes:?}: the reduction is empty"),
    )
}
