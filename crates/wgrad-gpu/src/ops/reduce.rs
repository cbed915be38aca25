//! Reductions over axes: sum, mean, prod, max, min, var, argmax, argmin.
//!
//! Every reduction views the input with the kept axes first and the reduced
//! axes last (a permuted layout, no copy) and records `kernels/reduce/
//! reduce.wgsl`, where each output row folds `inner` elements read through
//! the view's strides. The host picks how many threads share a row and, when
//! a few long rows would leave most of the GPU idle, splits rows into chunks
//! reduced in a second pass.

use wgrad_core::shape::{normalize_axes, normalize_axis, reduced_shape};
use wgrad_core::{DType, Error, MAX_RANK, Result};
use wgrad_device::GpuBuffer;
use wgrad_kernels::families;
use wgrad_kernels::families::reduce::Fold;

use crate::GpuTensor;
use crate::params::{self, ReduceParams};

/// Threads per workgroup of the reduce and softmax kernels.
const WG: usize = 256;
/// Fewest rows one workgroup serves when neighbouring threads take
/// neighbouring rows: 8 adjacent f32 loads fill one 32-byte memory sector.
const MIN_ROW_FAST_ROWS: usize = 8;
/// Threads strided rows are spread over before the row split adds more:
/// with the split providing parallelism, fewer and wider row groups read
/// memory better (H200: [4096, 4096] summed over dim 0, 0.034 ms against
/// 0.043 ms at 1 << 18).
const ROW_FAST_TARGET_THREADS: usize = 1 << 16;
/// Workgroups below which a single pass leaves a large GPU mostly idle and
/// long rows are split into chunks (H200: 132 SMs, several groups each).
pub(crate) const TARGET_GROUPS: usize = 1024;
/// Fewest elements each thread folds per chunk, so the split pays off.
const MIN_PER_THREAD: usize = 16;
/// Elements per thread the reduce kernel aims at (it loads four at a time).
const REDUCE_PER_THREAD: usize = 8;
/// Most chunks per row: the second pass then reduces rows of at most this
/// many partials, which never needs another split.
const MAX_CHUNKS: usize = 1024;

// Flags of `ReduceParams.flags` in reduce.wgsl.
const FLAG_ROW_FAST: u32 = 1;
const FLAG_IDX_FROM_AUX: u32 = 2;
const FLAG_WRITE_VAL: u32 = 4;
const FLAG_DIVIDE: u32 = 8;
const FLAG_SHIFT: u32 = 16;
const FLAG_UNSHIFT: u32 = 32;

/// What a row reduction reads per row through its aux binding.
enum RowAux<'a> {
    None,
    /// Each row's mean (the squared deviations of var).
    Means(&'a GpuBuffer),
    /// Each row's shift, its first element (var's mean, summed about it).
    Shifts(&'a GpuBuffer),
}

/// A strided view regrouped into rows: `dims[..kept_rank]` (size, stride)
/// unravel the row index, `dims[kept_rank..]` the element within a row.
#[derive(Debug)]
struct RowView {
    offset: usize,
    dims: Vec<(usize, usize)>,
    kept_rank: usize,
    rows: usize,
    inner: usize,
}

/// Drops size-1 dims and merges neighbours that step through memory as one
/// dim, so a contiguous reduction becomes a single stride-1 dim and the
/// kernel's index arithmetic stays short.
fn coalesce(dims: impl IntoIterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (size, stride) in dims {
        if size == 1 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == stride * size => *last = (last.0 * size, stride),
            _ => out.push((size, stride)),
        }
    }
    out
}

impl RowView {
    /// `shape`/`strides` of a view whose sorted `axes` are reduced.
    fn new(layout: &wgrad_core::Layout, axes: &[usize]) -> Self {
        let dim = |a: usize| (layout.shape()[a], layout.strides()[a]);
        let kept = coalesce((0..layout.rank()).filter(|a| !axes.contains(a)).map(dim));
        let mut reduced = coalesce(axes.iter().map(|&a| dim(a)));
        if reduced.is_empty() {
            // The kernel walks the innermost reduced dim; give it one.
            reduced.push((1, 0));
        }
        let rows = (0..layout.rank())
            .filter(|a| !axes.contains(a))
            .map(|a| layout.shape()[a])
            .product();
        let inner = axes.iter().map(|&a| layout.shape()[a]).product();
        let kept_rank = kept.len();
        RowView {
            offset: layout.offset(),
            dims: kept.into_iter().chain(reduced).collect(),
            kept_rank,
            rows,
            inner,
        }
    }

    /// The chunk-major partial results `[chunks, rows]` of a split pass,
    /// viewed as `rows` rows of `chunks` elements.
    fn partials(rows: usize, chunks: usize) -> Self {
        let kept = coalesce([(rows, 1)]);
        let kept_rank = kept.len();
        RowView {
            offset: 0,
            dims: kept.into_iter().chain([(chunks, rows)]).collect(),
            kept_rank,
            rows,
            inner: chunks,
        }
    }

    /// Whether the innermost reduced dim is unit-stride (rows are runs in memory).
    fn reduced_is_unit(&self) -> bool {
        self.dims.last().is_some_and(|&(_, s)| s == 1)
    }

    /// Whether neighbouring rows are neighbouring elements in memory.
    fn kept_is_unit(&self) -> bool {
        self.kept_rank > 0 && self.dims[self.kept_rank - 1].1 == 1
    }
}

/// How threads map onto a row-wise kernel: `lanes` threads per row (a power
/// of two), `WG / lanes` rows per workgroup, and whether neighbouring
/// threads take neighbouring rows (`row_fast`, for strided rows whose
/// starts are adjacent) or neighbouring elements of one row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes {
    pub(crate) lanes: usize,
    pub(crate) row_fast: bool,
}

impl Lanes {
    /// Picks the split for `rows` rows of `len` elements, aiming at about
    /// `per_thread` elements per thread. `row_unit`: a row's elements are
    /// adjacent in memory; `rows_unit`: row starts are. `target_threads`:
    /// how many threads strided rows should spread over (kernels that split
    /// long rows into chunks want fewer, wider groups).
    pub(crate) fn choose(
        rows: usize,
        len: usize,
        row_unit: bool,
        rows_unit: bool,
        per_thread: usize,
        target_threads: usize,
    ) -> Self {
        let len_p2 = len.max(1).next_power_of_two();
        if !row_unit && rows_unit {
            // e.g. summing the batch dim of [1024, 4096]: neighbouring
            // threads take neighbouring columns, so each load instruction
            // reads whole sectors, and each thread walks down its column.
            // More threads per row (fewer rows per group, down to one
            // sector's worth) only when the rows alone cannot fill the GPU.
            let rows_p2 = rows.max(1).next_power_of_two();
            let lanes = target_threads
                .div_ceil(rows.max(1))
                .next_power_of_two()
                .min(WG / MIN_ROW_FAST_ROWS.min(rows_p2))
                .min(len_p2);
            Lanes {
                lanes,
                row_fast: true,
            }
        } else {
            // Enough elements per thread to amortise the tree's barriers.
            // Short contiguous rows get one or two threads each; their
            // loads are not coalesced per instruction, but the lines are
            // reused from L1 by the following loads (measured faster on an
            // H200 than 8 threads per row: [1<<20, 16] 0.034 vs 0.110 ms).
            Lanes {
                lanes: len.div_ceil(per_thread).next_power_of_two().min(WG),
                row_fast: false,
            }
        }
    }

    pub(crate) fn rows_per_group(self) -> usize {
        WG / self.lanes
    }

    pub(crate) fn flag(self) -> u32 {
        if self.row_fast { FLAG_ROW_FAST } else { 0 }
    }
}

/// The buffers of one reduce_rows dispatch.
struct Bindings<'a> {
    src: &'a GpuBuffer,
    aux: &'a GpuBuffer,
    out_val: &'a GpuBuffer,
    out_idx: &'a GpuBuffer,
}

impl GpuTensor {
    /// Records one reduce_rows dispatch of `view` (over `chunks` pieces of
    /// `chunk_len` elements per row).
    #[allow(clippy::too_many_arguments)]
    fn dispatch_rows(
        &self,
        op: &'static str,
        fold: Fold,
        view: &RowView,
        lanes: Lanes,
        chunks: usize,
        flags: u32,
        divisor: f32,
        b: &Bindings<'_>,
    ) -> Result<()> {
        if view.dims.len() > MAX_RANK {
            return Err(Error::invalid(
                op,
                format!("rank {} exceeds {MAX_RANK}", view.dims.len()),
            ));
        }
        let chunk_len = view.inner.div_ceil(chunks);
        let u = |what, v| params::to_u32(op, what, v);
        let mut p = ReduceParams {
            rows: u("row count", view.rows)?,
            inner: u("reduced element count", view.inner)?,
            chunks: u("chunk count", chunks)?,
            chunk_len: u("chunk length", chunk_len)?,
            kept_rank: view.kept_rank as u32,
            rank: view.dims.len() as u32,
            offset: u("offset", view.offset)?,
            lanes: lanes.lanes as u32,
            flags: flags | lanes.flag(),
            divisor,
            shape: [0; MAX_RANK],
            strides: [0; MAX_RANK],
        };
        for ((size, stride), &(s, st)) in p.shape.iter_mut().zip(&mut p.strides).zip(&view.dims) {
            *size = u("dimension", s)?;
            *stride = u("stride", st)?;
        }
        let virtual_rows = view.rows.checked_mul(chunks).ok_or_else(|| {
            Error::invalid(op, format!("{} rows x {chunks} chunks overflow", view.rows))
        })?;
        u("partial row count", virtual_rows)?;
        self.kernels().dispatch_groups(
            &families::reduce::REDUCE_ROWS,
            &[("OP", f64::from(fold.code()))],
            &[b.src, b.aux, b.out_val, b.out_idx],
            &p,
            virtual_rows.div_ceil(lanes.rows_per_group()) as u64,
        )
    }

    /// Records the reduction of every row of `view` (over `self`'s buffer)
    /// into the contiguous `out` (F32 values, or I32 indices for arg folds).
    /// `divisor` divides each final value; `aux` holds per-row means for
    /// [`Fold::SqDev`]. Expects `view.rows > 0` and `view.inner > 0`.
    fn reduce_view(
        &self,
        op: &'static str,
        fold: Fold,
        view: &RowView,
        divisor: Option<f32>,
        aux: RowAux<'_>,
        out: &GpuTensor,
    ) -> Result<()> {
        let lanes = Lanes::choose(
            view.rows,
            view.inner,
            view.reduced_is_unit(),
            view.kept_is_unit(),
            REDUCE_PER_THREAD,
            ROW_FAST_TARGET_THREADS,
        );
        let groups = view.rows.div_ceil(lanes.rows_per_group());
        let chunks = if groups < TARGET_GROUPS {
            let by_occupancy = TARGET_GROUPS.div_ceil(groups);
            let by_work = view.inner / (lanes.lanes * MIN_PER_THREAD);
            by_occupancy.min(by_work).clamp(1, MAX_CHUNKS)
        } else {
            1
        };
        // Rounding chunk_len up can leave fewer non-empty chunks.
        let chunks = view.inner.div_ceil(view.inner.div_ceil(chunks));
        let divide = if divisor.is_some() { FLAG_DIVIDE } else { 0 };
        let divisor = divisor.unwrap_or(1.0);
        // A shifted sum (var's mean) reads the per-row shifts through aux.
        let (aux, shifted) = match aux {
            RowAux::Shifts(k) => (k, FLAG_SHIFT),
            RowAux::Means(m) => (m, 0),
            RowAux::None => (&self.buffer, 0),
        };
        let unshift = if shifted != 0 { FLAG_UNSHIFT } else { 0 };

        if chunks == 1 {
            let b = Bindings {
                src: &self.buffer,
                aux,
                out_val: &out.buffer,
                out_idx: &out.buffer,
            };
            let flags = divide | shifted | unshift;
            return self.dispatch_rows(op, fold, view, lanes, 1, flags, divisor, &b);
        }

        // Pass 1: chunk-major partials [chunks, rows], so that rows adjacent
        // in the input stay adjacent in the partials.
        let n = view.rows * chunks;
        let part_val = self.empty_like_device(op, &[n], DType::F32)?;
        let part_idx = if fold.is_arg() {
            Some(self.empty_like_device(op, &[n], DType::I32)?)
        } else {
            None
        };
        let part_idx_buf = part_idx.as_ref().map_or(&part_val.buffer, |t| &t.buffer);
        let first = Bindings {
            src: &self.buffer,
            aux,
            out_val: &part_val.buffer,
            out_idx: part_idx_buf,
        };
        let write_val = if fold.is_arg() { FLAG_WRITE_VAL } else { 0 };
        self.dispatch_rows(
            op,
            fold,
            view,
            lanes,
            chunks,
            write_val | shifted,
            1.0,
            &first,
        )?;

        // Pass 2: each row folds its `chunks` partials (arg folds take the
        // element indices recorded by pass 1).
        let second_view = RowView::partials(view.rows, chunks);
        let second_lanes = Lanes::choose(
            second_view.rows,
            second_view.inner,
            second_view.reduced_is_unit(),
            second_view.kept_is_unit(),
            REDUCE_PER_THREAD,
            ROW_FAST_TARGET_THREADS,
        );
        let from_aux = if fold.is_arg() { FLAG_IDX_FROM_AUX } else { 0 };
        let second = Bindings {
            src: &part_val.buffer,
            aux: if shifted != 0 { aux } else { part_idx_buf },
            out_val: &out.buffer,
            out_idx: &out.buffer,
        };
        part_val.dispatch_rows(
            op,
            fold.of_partials(),
            &second_view,
            second_lanes,
            1,
            from_aux | divide | unshift,
            divisor,
            &second,
        )
    }

    /// Validates a reduction of `axes` and returns its row view, output
    /// shape and normalised axes.
    fn reduction(
        &self,
        op: &'static str,
        axes: &[isize],
        keepdim: bool,
    ) -> Result<(RowView, Vec<usize>, Vec<usize>)> {
        self.expect_dtype(op, DType::F32)?;
        let axes = normalize_axes(op, axes, self.rank())?;
        Ok((
            RowView::new(&self.layout, &axes),
            reduced_shape(self.shape(), &axes, keepdim),
            axes,
        ))
    }

    /// Shared body of sum, mean, prod, max and min.
    fn reduce_simple(
        &self,
        op: &'static str,
        fold: Fold,
        axes: &[isize],
        keepdim: bool,
        mean: bool,
    ) -> Result<GpuTensor> {
        let (view, out_shape, axes) = self.reduction(op, axes, keepdim)?;
        if view.inner == 0 && matches!(fold, Fold::Max | Fold::Min) {
            return Err(empty_reduction(op, self.shape(), &axes));
        }
        let out = self.empty_like_device(op, &out_shape, DType::F32)?;
        if view.rows == 0 {
            return Ok(out);
        }
        if view.inner == 0 {
            // The sum of nothing is 0, the product 1; the mean of nothing is 0/0.
            let fill = match fold {
                Fold::Prod => 1.0,
                _ if mean => f32::NAN,
                _ => 0.0,
            };
            out.fill_words(fill.to_bits())?;
            return Ok(out);
        }
        let divisor = mean.then_some(view.inner as f32);
        self.reduce_view(op, fold, &view, divisor, RowAux::None, &out)?;
        Ok(out)
    }

    /// Sum over `axes` (`&[]` = all); the sum of nothing is 0.
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.reduce_simple("sum", Fold::Sum, axes, keepdim, false)
    }

    /// Mean over `axes` (`&[]` = all); the mean of nothing is NaN.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.reduce_simple("mean", Fold::Sum, axes, keepdim, true)
    }

    /// Product over `axes` (`&[]` = all; `torch.prod`); the product of
    /// nothing is 1.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.reduce_simple("prod", Fold::Prod, axes, keepdim, false)
    }

    /// Maximum over `axes` (`&[]` = all); NaN propagates. Empty reductions
    /// are an error.
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.reduce_simple("max", Fold::Max, axes, keepdim, false)
    }

    /// Minimum over `axes` (`&[]` = all); NaN propagates. Empty reductions
    /// are an error.
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.reduce_simple("min", Fold::Min, axes, keepdim, false)
    }

    /// Variance over `axes`: `sum((x - mean)^2) / max(0, n - correction)`
    /// (`correction = 1` is the unbiased estimator, as in `torch.var`).
    /// Two passes over the data (mean, then squared deviations), which stays
    /// accurate where `E[x^2] - E[x]^2` would cancel.
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<GpuTensor> {
        let op = "var";
        let (view, out_shape, reduced_axes) = self.reduction(op, axes, keepdim)?;
        let out = self.empty_like_device(op, &out_shape, DType::F32)?;
        if view.rows == 0 {
            return Ok(out);
        }
        if view.inner == 0 {
            out.fill_words(f32::NAN.to_bits())?;
            return Ok(out);
        }
        // Each row's mean is summed about its first element (kernels/reduce/
        // reduce.wgsl, FLAG_SHIFT): a constant row's variance is exactly 0.
        let mut firsts = self.clone();
        for &a in &reduced_axes {
            firsts = firsts.narrow(a as isize, 0, 1)?;
        }
        let firsts = firsts.contiguous()?;
        let means = self.empty_like_device(op, &[view.rows], DType::F32)?;
        let n = Some(view.inner as f32);
        self.reduce_view(
            op,
            Fold::Sum,
            &view,
            n,
            RowAux::Shifts(&firsts.buffer),
            &means,
        )?;
        let divisor = view.inner.saturating_sub(correction) as f32;
        self.reduce_view(
            op,
            Fold::SqDev,
            &view,
            Some(divisor),
            RowAux::Means(&means.buffer),
            &out,
        )?;
        Ok(out)
    }

    /// Index (I32) of the first maximum along `axis`; NaN counts as the
    /// maximum, as in PyTorch.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<GpuTensor> {
        self.arg_extreme("argmax", Fold::ArgMax, axis, keepdim)
    }

    /// Index (I32) of the first minimum along `axis`; NaN counts as the
    /// minimum, as in PyTorch.
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<GpuTensor> {
        self.arg_extreme("argmin", Fold::ArgMin, axis, keepdim)
    }

    fn arg_extreme(
        &self,
        op: &'static str,
        fold: Fold,
        axis: isize,
        keepdim: bool,
    ) -> Result<GpuTensor> {
        self.expect_dtype(op, DType::F32)?;
        let a = normalize_axis(op, axis, self.rank())?;
        let len = self.shape()[a];
        if len == 0 {
            return Err(empty_reduction(op, self.shape(), &[a]));
        }
        if i32::try_from(len).is_err() {
            return Err(Error::invalid(
                op,
                format!(
                    "axis {axis} of shape {:?} is too long for I32 indices",
                    self.shape()
                ),
            ));
        }
        let view = RowView::new(&self.layout, &[a]);
        let out =
            self.empty_like_device(op, &reduced_shape(self.shape(), &[a], keepdim), DType::I32)?;
        if view.rows > 0 {
            self.reduce_view(op, fold, &view, None, RowAux::None, &out)?;
        }
        Ok(out)
    }
}

/// The error for max/min/arg* over zero elements (they have no identity);
/// worded as the CPU backend's.
fn empty_reduction(op: &'static str, shape: &[usize], axes: &[usize]) -> Error {
    Error::invalid(
        op,
        format!("cannot reduce shape {shape:?} over axes {axes:?}: the reduction is empty"),
    )
}
