//! `Storage`: the data behind a `Tensor`, on one device or the other.
//!
//! Every op is dispatched here exactly once (CPU or GPU, or a device
//! mismatch error), so the autograd layer above never matches on devices.

use wgrad_core::{BinaryOp, CompareOp, DType, Element, Error, Result, UnaryOp};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use crate::Device;

mod conv;
mod optim_steps;
mod pool;
pub(crate) use optim_steps::{AdamStepOutcome, SgdStepOutcome};

/// Tensor data on the CPU or on a GPU.
#[derive(Clone, Debug)]
pub enum Storage {
    Cpu(CpuTensor),
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

fn mismatch(op: &'static str, a: &Storage, b: &Storage) -> Error {
    Error::DeviceMismatch {
        op,
        lhs: a.device().to_string(),
        rhs: b.device().to_string(),
    }
}

impl Storage {
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Gpu(t) => Device::Gpu(t.device().clone()),
        }
    }
    pub fn shape(&self) -> &[usize] {
        match self {
            Storage::Cpu(t) => t.shape(),
            Storage::Gpu(t) => t.shape(),
        }
    }
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

    pub fn from_vec<T: Element + bytemuck::Pod>(
        data: Vec<T>,
        shape: &[usize],
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::from_vec(data, shape)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::from_vec(g, data, shape)?)),
        }
    }

    pub fn full(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::full(shape, value, dtype)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::full(g, shape, value, dtype)?)),
        }
    }

    pub fn zeros_like(&self) -> Result<Storage> {
        Storage::full(self.shape(), 0.0, self.dtype(), &self.device())
    }

    pub fn arange(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::arange(start, end, step, dtype)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::arange(g, start, end, step, dtype)?)),
        }
    }

    pub fn rand(
        shape: &[usize],
        low: f32,
        high: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::rand(shape, low, high, seed)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::rand(g, shape, low, high, seed)?)),
        }
    }

    pub fn randn(
        shape: &[usize],
        mean: f32,
        std: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::randn(shape, mean, std, seed)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::randn(g, shape, mean, std, seed)?)),
        }
    }

    /// Copies to `device` (a no-op clone when already there).
    pub fn to_device(&self, device: &Device) -> Result<Storage> {
        if self.device().same(device) {
            return Ok(self.clone());
        }
        macro_rules! moved {
            ($T:ty) => {
                Storage::from_vec(self.to_vec::<$T>()?, self.shape(), device)
            };
        }
        match self.dtype() {
            DType::F32 => moved!(f32),
            DType::I32 => moved!(i32),
            DType::U32 => moved!(u32),
        }
    }

    // ---- views ----
    pub fn reshape(&self, shape: &[isize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.reshape(shape))
    }
    pub fn transpose(&self, a: isize, b: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.transpose(a, b))
    }
    pub fn permute(&self, dims: &[isize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.permute(dims))
    }
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Storage> {
        unary_dispatch!(self, t => t.narrow(axis, start, len))
    }
    pub fn expand(&self, shape: &[usize]) -> Result<Storage> {
        unary_dispatch!(self, t => t.expand(shape))
    }
    pub fn unsqueeze(&self, axis: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.unsqueeze(axis))
    }
    pub fn squeeze(&self, axis: isize) -> Result<Storage> {
        unary_dispatch!(self, t => t.squeeze(axis))
    }
    pub fn contiguous(&self) -> Result<Storage> {
        unary_dispatch!(self, t => t.contiguous())
    }
    pub fn concat(parts: &[&Storage], axis: isize) -> Result<Storage> {
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
    pub fn binary(&self, other: &Storage, op: BinaryOp) -> Result<Storage> {
        pair_dispatch!(op.name(), self, other, a, b => a.binary(b, op))
    }
    pub fn binary_scalar(
        &self,
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    ) -> Result<Storage> {
        unary_dispatch!(self, t => t.binary_scalar(op, scalar, scalar_on_left))
    }
    pub fn compare(&self, other: &Storage, op: CompareOp) -> Result<Storage> {
        pair_dispatch!(op.name(), self, other, a, b => a.compare(b, op))
    }
    pub fn compare_scalar(&self, op: CompareOp, scalar: f32) -> Result<Storage> {
        unary_dispatch!(self, t => t.compare_scalar(op, scalar))
    }
    pub fn where_cond(mask: &Storage, a: &Storage, b: &Storage) -> Result<Storage> {
        match (mask, a, b) {
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
        }
    }
    pub fn unary(&self, op: UnaryOp) -> Result<Storage> {
        unary_dispatch!(self, t => t.unary(op))
    }
    pub fn cast(&self, dtype: DType) -> Result<Storage> {
        unary_dispatch!(self, t => t.cast(dtype))
    }

    // ---- reductions ----
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        unary_dispatch!(self, t => t.sum(axes, keepdim))
    }
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        unary_dispatch!(self, t => t.mean(axes, keepdim))
    }
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        unary_dispatch!(self, t => t.max(axes, keepdim))
    }
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        unary_dispatch!(self, t => t.min(axes, keepdim))
    }
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Storage> {
        unary_dispatch!(self, t => t.var(axes, correction, keepdim))
    }
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Storage> {
        self.along_axis(axis, |s, a| unary_dispatch!(s, t => t.argmax(a, keepdim)))
    }
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Storage> {
        self.along_axis(axis, |s, a| unary_dispatch!(s, t => t.argmin(a, keepdim)))
    }
    pub fn softmax(&self, axis: isize) -> Result<Storage> {
        self.along_axis(axis, |s, a| unary_dispatch!(s, t => t.softmax(a)))
    }
    pub fn log_softmax(&self, axis: isize) -> Result<Storage> {
        self.along_axis(axis, |s, a| unary_dispatch!(s, t => t.log_softmax(a)))
    }

    /// Runs a one-axis op; on a 0-d tensor, axis `0`/`-1` names its implicit
    /// dim (as in PyTorch), so the op runs on the value viewed as shape `[1]`
    /// and the result is viewed back as 0-d.
    fn along_axis(
        &self,
        axis: isize,
        op: impl FnOnce(&Storage, isize) -> Result<Storage>,
    ) -> Result<Storage> {
        if !wgrad_core::shape::is_scalar_axis(axis, self.shape().len()) {
            return op(self, axis);
        }
        op(&self.reshape(&[1])?, 0)?.reshape(&[])
    }

    // ---- matmul and indexing ----
    pub fn matmul_t(&self, other: &Storage, trans_a: bool, trans_b: bool) -> Result<Storage> {
        pair_dispatch!("matmul", self, other, a, b => a.matmul_t(b, trans_a, trans_b))
    }
    pub fn index_select(&self, axis: isize, index: &Storage) -> Result<Storage> {
        pair_dispatch!("index_select", self, index, a, i => a.index_select(axis, i))
    }
    pub fn gather(&self, axis: isize, index: &Storage) -> Result<Storage> {
        pair_dispatch!("gather", self, index, a, i => a.gather(axis, i))
    }
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Storage> {
        unary_dispatch!(self, t => t.one_hot(num_classes, dtype))
    }

    // ---- backward building blocks ----
    pub fn unary_backward(&self, x: &Storage, op: UnaryOp) -> Result<Storage> {
        pair_dispatch!(op.name(), self, x, g, x => g.unary_backward(x, op))
    }
    pub fn softmax_backward(&self, y: &Storage, axis: isize, log: bool) -> Result<Storage> {
        if wgrad_core::shape::is_scalar_axis(axis, y.shape().len()) {
            let y = y.reshape(&[1])?;
            return self
                .reshape(&[1])?
                .softmax_backward(&y, 0, log)?
                .reshape(&[]);
        }
        pair_dispatch!("softmax_backward", self, y, g, y => g.softmax_backward(y, axis, log))
    }
    pub fn index_add(&self, axis: isize, index: &Storage, src: &Storage) -> Result<Storage> {
        match (self, index, src) {
            (Storage::Cpu(b), Storage::Cpu(i), Storage::Cpu(s)) => {
                Ok(Storage::Cpu(b.index_add(axis, i, s)?))
            }
            (Storage::Gpu(b), Storage::Gpu(i), Storage::Gpu(s)) => {
                Ok(Storage::Gpu(b.index_add(axis, i, s)?))
            }
            (b, _, s) => Err(mismatch("index_add", b, s)),
        }
    }
    pub fn scatter_add(&self, axis: isize, index: &Storage, src: &Storage) -> Result<Storage> {
        match (self, index, src) {
            (Storage::Cpu(b), Storage::Cpu(i), Storage::Cpu(s)) => {
                Ok(Storage::Cpu(b.scatter_add(axis, i, s)?))
            }
            (Storage::Gpu(b), Storage::Gpu(i), Storage::Gpu(s)) => {
                Ok(Storage::Gpu(b.scatter_add(axis, i, s)?))
            }
            (b, _, s) => Err(mismatch("scatter_add", b, s)),
        }
    }

    /// Per-sample cross-entropy of logits `[N, C]` against I32 targets `[N]`
    /// (fused log-softmax + NLL; targets equal to `ignore_index` give 0).
    pub fn cross_entropy(
        &self,
        target: &Storage,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Storage> {
        pair_dispatch!("cross_entropy", self, target, x, t => x.cross_entropy(t, label_smoothing, ignore_index))
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
        match (self, target, grad) {
            (Storage::Cpu(x), Storage::Cpu(t), Storage::Cpu(g)) => Ok(Storage::Cpu(
                x.cross_entropy_backward(t, g, label_smoothing, ignore_index)?,
            )),
            (Storage::Gpu(x), Storage::Gpu(t), Storage::Gpu(g)) => Ok(Storage::Gpu(
                x.cross_entropy_backward(t, g, label_smoothing, ignore_index)?,
            )),
            (x, t, _) => Err(mismatch("cross_entropy", x, t)),
        }
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
