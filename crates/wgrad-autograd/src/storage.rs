//! `Storage`: the data behind a `Tensor`, on one device or the other.
//!
//! Every op is dispatched here exactly once (CPU or GPU, or a device
//! mismatch error), so the autograd layer above never matches on devices.

use wgrad_core::{BinaryOp, CompareOp, DType, Element, Error, Result, UnaryOp};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use crate::Device;

mod attention;
mod conv;
mod creation;
mod half_compute;
mod int_reduce;
mod int_unary;
mod layer_norm;
mod linear;
mod masks;
mod optim_steps;
mod pool;
mod sort;
pub(crate) use optim_steps::{AdamStepOutcome, SgdStepOutcome, StateStepOutcome};

/// Tensor data on the CPU or on a GPU.
#[derive(Clone, Debug)]
pub enum Storage {
    /// Host data, computed by `wgrad-cpu`.
    Cpu(CpuTensor),
    /// Data in a GPU buffer, computed by `wgrad-gpu` kernels on that tensor's device.
    Gpu(GpuTensor),
}

/// Applies `$e` to the backend tensor `$t` and rewraps the result.
macro_rules! unary_dispatch {
    ($s:expr, $t:ident => $e:expr) => {
        match $s {
            Storage::Cpu($t) => Ok(Storage::Cpu($e?)),
            Storage::Gpu($t) => Ok(Storage::Gpu($e?)),
        }
    };
}

/// Applies `$e` to two backend tensors of the same kind; a mix is an error.
macro_rules! pair_dispatch {
    ($op:expr, $a:expr, $b:expr, $x:ident, $y:ident => $e:expr) => {
        match ($a, $b) {
            (Storage::Cpu($x), Storage::Cpu($y)) => Ok(Storage::Cpu($e?)),
            (Storage::Gpu($x), Storage::Gpu($y)) => Ok(Storage::Gpu($e?)),
            (a, b) => Err(mismatch($op, a, b)),
        }
    };
}

/// [`unary_dispatch!`] for an op that computes: a 16-bit float operand is
/// computed in F32 and the result rounded back ([`half_compute::compute`]).
macro_rules! compute_dispatch {
    ($s:expr, $t:ident => $e:expr) => {
        half_compute::compute([$s], |[s]| unary_dispatch!(s, $t => $e))
    };
}

/// [`pair_dispatch!`] for an op that computes, as [`compute_dispatch!`].
macro_rules! compute_pair {
    ($op:expr, $a:expr, $b:expr, $x:ident, $y:ident => $e:expr) => {
        half_compute::compute([$a, $b], |[a, b]| pair_dispatch!($op, a, b, $x, $y => $e))
    };
}

// Declared after the dispatch macros, which it uses.
mod reduce;

/// The CPU tensors of `operands`, or `None` if any is elsewhere.
pub(super) fn all_cpu<const N: usize>(operands: [&Storage; N]) -> Option<[&CpuTensor; N]> {
    let mut out = Vec::with_capacity(N);
    for s in operands {
        match s {
            Storage::Cpu(t) => out.push(t),
            Storage::Gpu(_) => return None,
        }
    }
    out.try_into().ok()
}

/// The GPU tensors of `operands`, or `None` if any is elsewhere.
pub(super) fn all_gpu<const N: usize>(operands: [&Storage; N]) -> Option<[&GpuTensor; N]> {
    let mut out = Vec::with_capacity(N);
    for s in operands {
        match s {
            Storage::Gpu(t) => out.push(t),
            Storage::Cpu(_) => return None,
        }
    }
    out.try_into().ok()
}

/// The first operand not on `q`'s device kind, for the error of a fused
/// op whose operands must all be on one device.
pub(super) fn stray<'a>(q: &'a Storage, operands: &[&'a Storage]) -> &'a Storage {
    operands
        .iter()
        .find(|s| {
            matches!(
                (q, s),
                (Storage::Cpu(_), Storage::Gpu(_)) | (Storage::Gpu(_), Storage::Cpu(_))
            )
        })
        .copied()
        .unwrap_or(q)
}

fn mismatch(op: &'static str, a: &Storage, b: &Storage) -> Error {
    Error::DeviceMismatch {
        op,
        lhs: a.device().to_string(),
        rhs: b.device().to_string(),
    }
}

impl Storage {
    /// The device the data lives on ([`Device::Cpu`] or that GPU).
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Gpu(t) => Device::Gpu(t.device().clone()),
        }
    }
    /// The dims of the data (empty for a 0-d scalar).
    pub fn shape(&self) -> &[usize] {
        match self {
            Storage::Cpu(t) => t.shape(),
            Storage::Gpu(t) => t.shape(),
        }
    }
    /// The element type (F32, I32 or U32).
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(t) => t.dtype(),
            Storage::Gpu(t) => t.dtype(),
        }
    }
    /// Whether the data is dense in row-major order (views of it then share
    /// its buffer; a non-contiguous one is copied by `reshape`/`contiguous`).
    pub fn is_contiguous(&self) -> bool {
        match self {
            Storage::Cpu(t) => t.is_contiguous(),
            Storage::Gpu(t) => t.is_contiguous(),
        }
    }
    /// Shape, strides and offset of the view.
    pub fn layout(&self) -> &wgrad_core::Layout {
        match self {
            Storage::Cpu(t) => t.layout(),
            Storage::Gpu(t) => t.layout(),
        }
    }
    /// Number of elements: the product of the shape (1 for a 0-d scalar).
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }

    /// Host data in row-major order (a readback on the GPU; blocks).
    pub fn to_vec<T: Element + bytemuck::Pod>(&self) -> Result<Vec<T>> {
        match self {
            Storage::Cpu(t) => t.to_vec(),
            Storage::Gpu(t) => t.to_vec_blocking(),
        }
    }

    // ---- views ----
    /// `torch.reshape` with at most one `-1`: a view when contiguous, else a
    /// contiguous copy first. A different element count is an error.
    pub fn reshape(&self, shape: &[isize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.reshape(shape))
    }
    /// Swaps axes `a` and `b` (a view, `torch.transpose`); negative axes
    /// count from the end, out of range is [`Error::BadAxis`].
    pub fn transpose(&self, a: isize, b: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.transpose(a, b))
    }
    /// Reorders axes: output axis `i` is input axis `dims[i]` (a view,
    /// `torch.permute`); `dims` must name every axis once.
    pub fn permute(&self, dims: &[isize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.permute(dims))
    }
    /// Keeps `len` elements of `axis` starting at `start` (a view,
    /// `torch.narrow`); `start + len` past the axis is an error.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Storage> {
        unary_dispatch!(self, t => t.narrow(axis, start, len))
    }
    /// Keeps `len` elements of `axis` from `start` on, every `step`-th one
    /// (a strided view, Python's `x[start::step]` along `axis`).
    pub fn narrow_step(
        &self,
        axis: isize,
        start: usize,
        len: usize,
        step: usize,
    ) -> Result<Storage> {
        unary_dispatch!(self, t => t.narrow_step(axis, start, len, step))
    }
    /// Broadcasts to `shape` (a view, `torch.Tensor.expand`): size-1 and
    /// missing leading dims repeat with stride 0; other sizes must match.
    pub fn expand(&self, shape: &[usize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.expand(shape))
    }
    /// Inserts a size-1 axis at `axis` in `-(rank+1)..=rank` (a view,
    /// `torch.unsqueeze`).
    pub fn unsqueeze(&self, axis: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.unsqueeze(axis))
    }
    /// Removes axis `axis` if it has size 1, else leaves the shape as it is
    /// (a view, `torch.squeeze(x, dim)`).
    pub fn squeeze(&self, axis: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.squeeze(axis))
    }
    /// The data itself if already dense row-major, else a row-major copy
    /// (`torch.Tensor.contiguous`).
    pub fn contiguous(&self) -> Result<Storage> {
        unary_dispatch!(self, t => t.contiguous())
    }
    /// Joins `parts` along `axis` (`torch.cat`): same dtype and rank, equal
    /// sizes on the other axes. An empty list is [`Error::InvalidArgument`],
    /// parts on different devices [`Error::DeviceMismatch`].
    pub fn concat(parts: &[&Storage], axis: isize) -> Result<Storage> {
        if let Some(dtype) = half_compute::concat_dtype(parts) {
            let cast = parts
                .iter()
                .map(|p| p.cast(dtype))
                .collect::<Result<Vec<_>>>()?;
            return Storage::concat(&cast.iter().collect::<Vec<_>>(), axis);
        }
        let first = parts
            .first()
            .ok_or_else(|| Error::invalid("concat", "needs at least one tensor"))?;
        match first {
            Storage::Cpu(_) => {
                let ts = parts
                    .iter()
                    .map(|s| match s {
                        Storage::Cpu(t) => Ok(t),
                        other => Err(mismatch("concat", first, other)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Storage::Cpu(CpuTensor::concat(&ts, axis)?))
            }
            Storage::Gpu(_) => {
                let ts = parts
                    .iter()
                    .map(|s| match s {
                        Storage::Gpu(t) => Ok(t),
                        other => Err(mismatch("concat", first, other)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Storage::Gpu(GpuTensor::concat(&ts, axis)?))
            }
        }
    }

    // ---- elementwise ----
    /// `op(self, other)` elementwise with broadcasting (`torch.add`, `mul`,
    /// ...); F32 operands on one device, else a dtype or device mismatch.
    pub fn binary(&self, other: &Storage, op: BinaryOp) -> Result<Storage> {
        if let Some((a, b)) = masks::unmasked_pair(self, other)? {
            return a.binary(&b, op);
        }
        if let Some((a, b)) = half_compute::common_operands(self, other, Some(op))? {
            return a.binary_common(&b, op);
        }
        self.binary_common(other, op)
    }
    /// [`binary`](Self::binary) of operands already in their common dtype.
    fn binary_common(&self, other: &Storage, op: BinaryOp) -> Result<Storage> {
        if let (Storage::Gpu(a), Storage::Gpu(b)) = (self, other)
            && (a.dtype().is_half() || b.dtype().is_half())
            && a.dtype().is_float()
            && b.dtype().is_float()
        {
            // One pass: 16-bit operands read as they are, rounded once.
            let to = half_compute::binary_result(self, other);
            return Ok(Storage::Gpu(a.binary_mixed(b, op, to)?));
        }
        half_compute::binary(
            self,
            other,
            |a, b| pair_dispatch!(op.name(), a, b, a, b => a.binary(b, op)),
        )
    }
    /// `op(self, scalar)` elementwise, or `op(scalar, self)` when
    /// `scalar_on_left` (e.g. `1 - x`); F32 only.
    pub fn binary_scalar(
        &self,
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    ) -> Result<Storage> {
        if let Some(x) = masks::unmasked(self, DType::F32)? {
            return x.binary_scalar(op, scalar, scalar_on_left);
        }
        // PyTorch (CPU) rounds a Python number to a 16-bit tensor's dtype
        // first, except for mul, div and floor_divide, which take it in
        // float (f16 3 * 0.1 is 0.300048828125, not 0.2998046875).
        // Python's `v / x` is `x.reciprocal() * v`: the reciprocal rounded first.
        if op == BinaryOp::Div && scalar_on_left && self.dtype().is_half() {
            return self
                .unary(UnaryOp::Recip)?
                .binary_scalar(BinaryOp::Mul, scalar, false);
        }
        let scalar = match op {
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::FloorDiv => scalar,
            _ => half_compute::round_scalar(scalar, self.dtype()),
        };
        compute_dispatch!(self, t => t.binary_scalar(op, scalar, scalar_on_left))
    }
    /// Elementwise comparison with broadcasting (`torch.eq`, `lt`, ...);
    /// operands both F32 or both I32 on one device; output a U32 0/1 mask.
    pub fn compare(&self, other: &Storage, op: CompareOp) -> Result<Storage> {
        if let Some((a, b)) = masks::comparable_pair(self, other)? {
            return a.compare(&b, op);
        }
        if let Some((a, b)) = half_compute::common_operands(self, other, None)? {
            return a.compare(&b, op);
        }
        half_compute::binary(
            self,
            other,
            |a, b| pair_dispatch!(op.name(), a, b, a, b => a.compare(b, op)),
        )
    }
    /// Compares every element with `scalar`; output a U32 0/1 mask. I32
    /// elements are compared exactly (2 < 2.5 holds).
    pub fn compare_scalar(&self, op: CompareOp, scalar: f32) -> Result<Storage> {
        if let Some(x) = masks::unmasked(self, DType::I32)? {
            return x.compare_scalar(op, scalar);
        }
        let scalar = half_compute::round_scalar(scalar, self.dtype());
        compute_dispatch!(self, t => t.compare_scalar(op, scalar))
    }
    /// `mask != 0 ? a : b` elementwise (`torch.where`): `mask` U32, `a`/`b`
    /// F32, all three broadcast together and on one device.
    pub fn where_cond(mask: &Storage, a: &Storage, b: &Storage) -> Result<Storage> {
        half_compute::compute([mask, a, b], |[mask, a, b]| match (mask, a, b) {
            (Storage::Cpu(m), Storage::Cpu(x), Storage::Cpu(y)) => {
                Ok(Storage::Cpu(CpuTensor::where_cond(m, x, y)?))
            }
            (Storage::Gpu(m), Storage::Gpu(x), Storage::Gpu(y)) => {
                Ok(Storage::Gpu(GpuTensor::where_cond(m, x, y)?))
            }
            (m, x, y) => {
                let odd = if m.device().same(&x.device()) { y } else { x };
                Err(mismatch("where", m, odd))
            }
        })
    }
    /// Applies `op` (`relu`, `exp`, ...) to every element; F32, F16/BF16,
    /// or I32 (int_unary.rs: integer-closed ops stay I32, the rest F32).
    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        if let UnaryOp::Clamp { min, max } = op
            && (min.is_some_and(f32::is_nan) || max.is_some_and(f32::is_nan))
        {
            // PyTorch: a NaN bound makes every element NaN (the kernels'
            // max/min would ignore it).
            let float = if self.dtype().is_float() {
                self.clone()
            } else {
                self.cast(DType::F32)?
            };
            return float.binary_scalar(BinaryOp::Add, f32::NAN, false);
        }
        if self.dtype() == DType::I32 {
            return self.unary_i32(op);
        }
        let op = half_compute::round_bounds(op, self.dtype());
        if let Storage::Gpu(t) = self
            && t.dtype().is_half()
        {
            // One pass on the GPU (widened, f32, rounded once).
            return Ok(Storage::Gpu(t.unary(op)?));
        }
        compute_dispatch!(self, t => t.unary(op))
    }
    /// Converts to `dtype` (`torch.Tensor.to(dtype)`): F32 to integers
    /// truncates toward zero and saturates, I32 <-> U32 wraps around.
    pub fn cast(&self, dtype: DType) -> Result<Storage> {
        unary_dispatch!(self, t => t.cast(dtype))
    }

    // ---- matmul and indexing ----
    /// `torch.matmul` of `self` and `other` after swapping the last two dims
    /// of `self` (if `trans_a`) and/or `other` (if `trans_b`), as free views.
    /// F32 on one device; transposed operands need at least 2 dims.
    pub fn matmul_t(&self, other: &Storage, trans_a: bool, trans_b: bool) -> Result<Storage> {
        if let (Storage::Gpu(a), Storage::Gpu(b)) = (self, other)
            && a.dtype() == DType::F16
            && b.dtype() == DType::F16
        {
            // Exact on the f16 tensor cores (f32 accumulation), where the
            // device has them; rounded once to F16 like any half op.
            let (a, b) = (a.cast(DType::F32)?, b.cast(DType::F32)?);
            let out = a.matmul_t_f16_operands(&b, trans_a, trans_b)?;
            return Ok(Storage::Gpu(out.cast(DType::F16)?));
        }
        compute_pair!("matmul", self, other, a, b => a.matmul_t(b, trans_a, trans_b))
    }
    /// Picks the slices `index[0], index[1], ...` along `axis`
    /// (`torch.index_select`); `index` is 1-D I32 on the same device.
    pub fn index_select(&self, axis: isize, index: &Storage) -> Result<Storage> {
        compute_pair!("index_select", self, index, a, i => a.index_select(axis, i))
    }
    /// `torch.gather`: `out[p] = self[p with its axis coordinate = index[p]]`;
    /// `index` is I32 of the same rank, and the output has its shape.
    pub fn gather(&self, axis: isize, index: &Storage) -> Result<Storage> {
        compute_pair!("gather", self, index, a, i => a.gather(axis, i))
    }
    /// One-hot encoding of I32 labels in `0..num_classes`
    /// (`torch.nn.functional.one_hot`): appends a dim of size `num_classes`.
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Storage> {
        unary_dispatch!(self, t => t.one_hot(num_classes, dtype))
    }

    // ---- backward building blocks ----
    /// `op.chain(self, x)` (`self * op.derivative(x)`, an exact 0 where PyTorch selects the gradient away): the gradient of `x.unary(op)` given the
    /// upstream gradient `self` (same shape, F32, one device).
    pub fn unary_backward(&self, x: &Storage, op: UnaryOp) -> Result<Storage> {
        if x.dtype().is_half() && half_compute::grad_from_output(op) {
            return half_compute::unary_backward_from_output(self, x, op);
        }
        let op = half_compute::round_bounds(op, x.dtype());
        if let (Storage::Gpu(g), Storage::Gpu(xg)) = (self, x)
            && g.dtype().is_half()
            && g.dtype() == xg.dtype()
        {
            return Ok(Storage::Gpu(g.unary_backward(xg, op)?));
        }
        compute_pair!(op.name(), self, x, g, x => g.unary_backward(x, op))
    }
    /// The gradient of softmax (or log-softmax if `log`) along `axis` given
    /// the upstream gradient `self` and that op's output `y` (same shape, F32).
    pub fn softmax_backward(&self, y: &Storage, axis: isize, log: bool) -> Result<Storage> {
        if wgrad_core::shape::is_scalar_axis(axis, y.shape().len()) {
            let y = y.reshape(&[1])?;
            return self
                .reshape(&[1])?
                .softmax_backward(&y, 0, log)?
                .reshape(&[]);
        }
        compute_pair!("softmax_backward", self, y, g, y => g.softmax_backward(y, axis, log))
    }
    /// `torch.Tensor.index_add`: a copy of `self` with slice `i` of `src` added
    /// to slice `index[i]` along `axis` (repeats accumulate); the backward of
    /// `index_select`. F32 base and `src`, 1-D I32 `index`, one device.
    pub fn index_add(&self, axis: isize, index: &Storage, src: &Storage) -> Result<Storage> {
        half_compute::compute([self, index, src], |[base, index, src]| {
            match (base, index, src) {
                (Storage::Cpu(b), Storage::Cpu(i), Storage::Cpu(s)) => {
                    Ok(Storage::Cpu(b.index_add(axis, i, s)?))
                }
                (Storage::Gpu(b), Storage::Gpu(i), Storage::Gpu(s)) => {
                    Ok(Storage::Gpu(b.index_add(axis, i, s)?))
                }
                (b, _, s) => Err(mismatch("index_add", b, s)),
            }
        })
    }
    /// `torch.Tensor.scatter_add`: a copy of `self` with `src[p]` added at `p`
    /// with its `axis` coordinate replaced by `index[p]`; the backward of
    /// `gather`. F32 base and `src`, I32 `index` of the same rank.
    pub fn scatter_add(&self, axis: isize, index: &Storage, src: &Storage) -> Result<Storage> {
        half_compute::compute([self, index, src], |[base, index, src]| {
            match (base, index, src) {
                (Storage::Cpu(b), Storage::Cpu(i), Storage::Cpu(s)) => {
                    Ok(Storage::Cpu(b.scatter_add(axis, i, s)?))
                }
                (Storage::Gpu(b), Storage::Gpu(i), Storage::Gpu(s)) => {
                    Ok(Storage::Gpu(b.scatter_add(axis, i, s)?))
                }
                (b, _, s) => Err(mismatch("scatter_add", b, s)),
            }
        })
    }

    /// Per-sample cross-entropy of logits `[N, C]` against I32 targets `[N]`
    /// (fused log-softmax + NLL; targets equal to `ignore_index` give 0).
    pub fn cross_entropy(
        &self,
        target: &Storage,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Storage> {
        compute_pair!("cross_entropy", self, target, x, t => x.cross_entropy(t, label_smoothing, ignore_index))
    }
    /// The 'mean' reduction of per-sample losses `[N]` over the samples
    /// whose `target` is not `ignore_index`: `(mean, count)`, both 0-d F32.
    pub fn cross_entropy_mean(
        &self,
        target: &Storage,
        ignore_index: i32,
    ) -> Result<(Storage, Storage)> {
        match (self, target) {
            (Storage::Cpu(l), Storage::Cpu(t)) => {
                let (mean, count) = l.cross_entropy_mean(t, ignore_index)?;
                Ok((Storage::Cpu(mean), Storage::Cpu(count)))
            }
            (Storage::Gpu(l), Storage::Gpu(t)) => {
                let (mean, count) = l.cross_entropy_mean(t, ignore_index)?;
                Ok((Storage::Gpu(mean), Storage::Gpu(count)))
            }
            (l, t) => Err(mismatch("cross_entropy_mean", l, t)),
        }
    }
    /// Checks that every element is in [0, 1] (not NaN), as
    /// `binary_cross_entropy` requires: the CPU's error is immediate, the
    /// GPU's comes at the next readback (a device fault).
    pub fn check_unit_interval(&self) -> Result<()> {
        match self {
            Storage::Cpu(t) => t.check_unit_interval(),
            Storage::Gpu(t) => t.check_unit_interval(),
        }
    }
    /// Gradient of [`cross_entropy`](Self::cross_entropy) w.r.t. the logits given the
    /// per-sample upstream gradient `grad` `[N]`.
    pub fn cross_entropy_backward(
        &self,
        target: &Storage,
        grad: &Storage,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Storage> {
        half_compute::compute([self, target, grad], |[x, t, g]| match (x, t, g) {
            (Storage::Cpu(x), Storage::Cpu(t), Storage::Cpu(g)) => Ok(Storage::Cpu(
                x.cross_entropy_backward(t, g, label_smoothing, ignore_index)?,
            )),
            (Storage::Gpu(x), Storage::Gpu(t), Storage::Gpu(g)) => Ok(Storage::Gpu(
                x.cross_entropy_backward(t, g, label_smoothing, ignore_index)?,
            )),
            (x, t, _) => Err(mismatch("cross_entropy", x, t)),
        })
    }

    /// The gradient of the 'mean'-reduced cross-entropy w.r.t. the logits
    /// (`self`): `grad / count` (both 0-d) on every row through
    /// [`cross_entropy_backward`](Self::cross_entropy_backward); one pass
    /// on a GPU (the division in the kernel).
    pub fn cross_entropy_mean_backward(
        &self,
        target: &Storage,
        grad: &Storage,
        count: &Storage,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Storage> {
        if let (Storage::Gpu(x), Storage::Gpu(t), Storage::Gpu(g), Storage::Gpu(c)) =
            (self, target, grad, count)
            && x.dtype() == DType::F32
        {
            let out = x.cross_entropy_mean_backward(t, g, c, label_smoothing, ignore_index)?;
            return Ok(Storage::Gpu(out));
        }
        let n = self.shape().first().copied().unwrap_or(0);
        let share = grad
            .binary(count, BinaryOp::Div)?
            .reshape(&[1])?
            .expand(&[n])?;
        self.cross_entropy_backward(target, &share, label_smoothing, ignore_index)
    }

    /// Sums a broadcast gradient back to `shape` — the one place where
    /// broadcasting is undone in backward.
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Storage> {
        let g = self.shape();
        if g == shape {
            return Ok(self.clone());
        }
        let lead = g
            .len()
            .checked_sub(shape.len())
            .ok_or_else(|| Error::ShapeMismatch {
                op: "sum_to_shape",
                lhs: g.to_vec(),
                rhs: shape.to_vec(),
            })?;
        let mut axes: Vec<isize> = (0..lead as isize).collect();
        for (i, &d) in shape.iter().enumerate() {
            if d == 1 && g[lead + i] != 1 {
                axes.push((lead + i) as isize);
            }
        }
        let summed = if axes.is_empty() {
            self.clone()
        } else {
            self.sum(&axes, true)?
        };
        let target: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
        summed.reshape(&target)
    }
}
