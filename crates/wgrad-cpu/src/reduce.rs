//! Reductions over axes: sum, mean, max, min, var, argmax, argmin.
//!
//! Every reduction permutes the reduced axes to the end and copies, so each
//! output element reduces one contiguous row. Sums are pairwise in f32,
//! close to the GPU's f32 tree reductions (tests compare with relative
//! tolerances) and far more accurate than a running sum.

use wgrad_core::shape::{normalize_axes, normalize_axis, reduced_shape};
use wgrad_core::{BinaryOp, Error, Result};

use crate::tensor::CpuTensor;

/// Rows shorter than this are summed directly; longer ones are split in two.
const PAIRWISE_BLOCK: usize = 32;

/// Pairwise (tree) sum of `f(x)` over `xs`.
fn pairwise_sum(xs: &[f32], f: &impl Fn(f32) -> f32) -> f32 {
    if xs.len() <= PAIRWISE_BLOCK {
        xs.iter().map(|&x| f(x)).sum()
    } else {
        let (lo, hi) = xs.split_at(xs.len() / 2);
        pairwise_sum(lo, f) + pairwise_sum(hi, f)
    }
}

/// A tensor regrouped so each output element owns one contiguous row.
struct Rows {
    data: Vec<f32>,
    /// Number of rows (output elements).
    outer: usize,
    /// Length of each row (elements reduced into one output).
    inner: usize,
}

impl Rows {
    /// Applies `f` to every row (rows may be empty).
    fn map<T>(&self, f: impl Fn(&[f32]) -> T) -> Vec<T> {
        if self.inner == 0 {
            return (0..self.outer).map(|_| f(&[])).collect();
        }
        self.data.chunks_exact(self.inner).map(f).collect()
    }
}

impl CpuTensor {
    /// Copies the F32 tensor with the (sorted, normalised) `axes` moved last.
    /// The caller has checked the dtype.
    fn rows(&self, axes: &[usize]) -> Result<Rows> {
        let kept = (0..self.rank()).filter(|a| !axes.contains(a));
        let perm: Vec<isize> = kept
            .chain(axes.iter().copied())
            .map(|a| a as isize)
            .collect();
        let moved = self.with_layout(self.layout.permute(&perm)?);
        let inner: usize = axes.iter().map(|&a| self.shape()[a]).product();
        let outer: usize = (0..self.rank())
            .filter(|a| !axes.contains(a))
            .map(|a| self.shape()[a])
            .product();
        Ok(Rows {
            data: moved.to_vec::<f32>()?,
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
        f: impl Fn(&[f32]) -> f32,
    ) -> Result<Self> {
        self.f32_input(op)?;
        let axes = normalize_axes(op, axes, self.rank())?;
        let rows = self.rows(&axes)?;
        if nonempty && rows.inner == 0 {
            return Err(empty_reduction(op, self.shape(), &axes));
        }
        let out = rows.map(f);
        CpuTensor::from_vec(out, &reduced_shape(self.shape(), &axes, keepdim))
    }

    /// Sum over `axes` (`&[]` = all); the sum of nothing is 0.
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.reduce_with("sum", axes, keepdim, false, |r| pairwise_sum(r, &|x| x))
    }

    /// Mean over `axes` (`&[]` = all); the mean of nothing is NaN.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.reduce_with("mean", axes, keepdim, false, |r| {
            pairwise_sum(r, &|x| x) / r.len() as f32
        })
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
            let mean = pairwise_sum(r, &|x| x) / n as f32;
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
        better: impl Fn(f32, f32) -> bool,
    ) -> Result<Self> {
        self.f32_input(op)?;
        let a = normalize_axis(op, axis, self.rank())?;
        let rows = self.rows(&[a])?;
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
        let out: Vec<i32> = rows.map(|r| {
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
        });
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
