//! Building blocks of reverse-mode autograd beyond the forward ops, so that
//! backward passes stay on the device: fused unary and (log-)softmax
//! backward, and the accumulating scatters `index_add` / `scatter_add`
//! (the backward of `index_select` / `gather`). Semantics are those of the
//! same methods on `wgrad_cpu::CpuTensor`.

use wgrad_core::shape::{contiguous_strides, normalize_axis};
use wgrad_core::{DType, Layout, Result, UnaryOp, checks};
use wgrad_kernels::{WORKGROUP_SIZE, families};

use crate::GpuTensor;
use crate::ops::unary::{coalesce, dense_or_strided};
use crate::params::{ScatterAddParams, SoftmaxBackwardParams, UnaryBackwardParams};

/// Fault codes raised by the scatter kernel (see `wgrad_device::FaultCode`).
const FAULT_INDEX_ADD: u32 = wgrad_device::FaultCode::IndexAdd as u32;
const FAULT_SCATTER_ADD: u32 = wgrad_device::FaultCode::ScatterAdd as u32;

impl GpuTensor {
    /// `self * op.derivative(x)` elementwise: the gradient of `x.unary(op)`
    /// given the upstream gradient `self`. Both F32 and of the same shape
    /// (either may be a strided view). One fused kernel.
    pub fn unary_backward(&self, x: &GpuTensor, op: UnaryOp) -> Result<GpuTensor> {
        const OP: &str = "unary_backward";
        self.same_device(OP, x)?;
        // Both F16 or both BF16: one pass (widened, f32 product, rounded).
        let half = self.dtype().is_half() && x.dtype() == self.dtype();
        if !half {
            self.expect_dtype(OP, DType::F32)?;
            x.expect_dtype(OP, DType::F32)?;
        }
        checks::same_shape(OP, self.shape(), x.shape())?;
        let out = self.empty_like_device(OP, self.shape(), self.dtype())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        if !half {
            // Coalesced, dense operands take 16-byte accesses.
            let (shape, views) = coalesce(OP, self.shape(), &[&self.layout, &x.layout])?;
            let p = UnaryBackwardParams::new(OP, &shape, &views[0], &views[1], op.params())?;
            // The strided kernel takes one element a thread.
            let (spec, threads) = dense_or_strided(
                &families::backward::UNARY_BACKWARD_VEC4,
                (&families::backward::UNARY_BACKWARD, 1),
                &shape,
                &views,
            );
            self.kernels().dispatch_1d(
                spec,
                &[("OP", f64::from(op.code()))],
                &[&self.buffer, &x.buffer, &out.buffer],
                &p,
                threads,
            )?;
            return Ok(out);
        }
        let p = UnaryBackwardParams::new(OP, self.shape(), &self.layout, &x.layout, op.params())?;
        self.kernels().dispatch_1d(
            &families::backward::UNARY_BACKWARD_HALF,
            &[
                ("OP", f64::from(op.code())),
                ("KIND", crate::ops::cast::code(self.dtype())),
            ],
            &[&self.buffer, &x.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(2),
        )?;
        Ok(out)
    }

    /// Gradient of `softmax(axis)` (`log = false`) or `log_softmax(axis)`
    /// (`log = true`) given the upstream gradient `self` and that op's
    /// output `y` (same shape, F32, either may be a strided view):
    /// softmax: `y * (g - sum(g * y, axis))`;
    /// log_softmax: `g - exp(y) * sum(g, axis)`. One fused row kernel,
    /// coalesced whether the axis is contiguous or strided.
    pub fn softmax_backward(&self, y: &GpuTensor, axis: isize, log: bool) -> Result<GpuTensor> {
        const OP: &str = "softmax_backward";
        self.same_device(OP, y)?;
        self.expect_dtype(OP, DType::F32)?;
        y.expect_dtype(OP, DType::F32)?;
        checks::same_shape(OP, self.shape(), y.shape())?;
        let a = normalize_axis(OP, axis, self.rank())?;
        let out = self.empty_like_device(OP, self.shape(), DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let len = self.shape()[a];
        let rows = out.numel() / len;
        // Along a contiguous axis a row's threads read consecutive elements:
        // enough threads for one element each, at most a workgroup. Along a
        // strided axis consecutive threads take consecutive rows instead, and
        // at most 8 threads per row keep 32 rows (a warp) per workgroup.
        let across = self.strides()[a] != 1 && len > 1;
        let cap = if across { WORKGROUP / 32 } else { WORKGROUP };
        let tpr = len.next_power_of_two().min(cap);
        let p = SoftmaxBackwardParams::new(OP, self.shape(), a, &self.layout, &y.layout)?;
        self.kernels().dispatch_groups(
            &families::backward::SOFTMAX_BACKWARD,
            &[
                ("LOG", f64::from(u32::from(log))),
                ("TPR", tpr as f64),
                ("ACROSS", f64::from(u32::from(across))),
            ],
            &[&self.buffer, &y.buffer, &out.buffer],
            &p,
            rows.div_ceil(WORKGROUP / tpr) as u64,
        )?;
        Ok(out)
    }

    /// `torch.Tensor.index_add`: a new tensor equal to `self` (the base)
    /// where, for every `i`, the slice `src.select(axis, i)` is added to the
    /// slice `index[i]` along `axis`; repeated indices accumulate (in an
    /// unspecified order). `index` is 1-D I32 with one entry per slice of
    /// `src` along `axis`; `src` has the base's shape except on `axis`; F32
    /// base and src. The backward of `index_select` and of an embedding
    /// lookup. An index out of range raises a device fault (reported by the
    /// next readback as `IndexOutOfRange`) and its slice is skipped.
    pub fn index_add(&self, axis: isize, index: &GpuTensor, src: &GpuTensor) -> Result<GpuTensor> {
        const OP: &str = "index_add";
        self.same_device(OP, index)?;
        self.same_device(OP, src)?;
        self.expect_dtype(OP, DType::F32)?;
        src.expect_dtype(OP, DType::F32)?;
        index.expect_dtype(OP, DType::I32)?;
        let a = checks::index_add::index_add(OP, axis, self.shape(), index.shape(), src.shape())?;
        // The 1-D index seen as a tensor of src's shape that repeats along
        // every other axis turns index_add into scatter_add.
        let mut strides = vec![0; src.rank()];
        strides[a] = index.strides()[0];
        let idx = Layout::from_parts(OP, src.shape().to_vec(), strides, index.layout.offset())?;
        self.scatter_into(OP, a, src.shape(), index, &idx, src, FAULT_INDEX_ADD)
    }

    /// `torch.Tensor.scatter_add`: a new tensor equal to `self` (the base)
    /// where, for every position `p` of `index`, `src[p]` is added at `p`
    /// with its `axis` coordinate replaced by `index[p]`; repeated targets
    /// accumulate (in an unspecified order). `index` (I32), `src` and the
    /// base share one rank; `index` is no larger than `src` on any axis and
    /// no larger than the base on the others. F32 base and src. The
    /// backward of `gather`. An index out of range raises a device fault
    /// (reported by the next readback as `IndexOutOfRange`) and is skipped.
    pub fn scatter_add(
        &self,
        axis: isize,
        index: &GpuTensor,
        src: &GpuTensor,
    ) -> Result<GpuTensor> {
        const OP: &str = "scatter_add";
        self.same_device(OP, index)?;
        self.same_device(OP, src)?;
        self.expect_dtype(OP, DType::F32)?;
        src.expect_dtype(OP, DType::F32)?;
        index.expect_dtype(OP, DType::I32)?;
        let a = checks::index_add::scatter_add(OP, axis, self.shape(), index.shape(), src.shape())?;
        let idx = index.layout.clone();
        self.scatter_into(OP, a, index.shape(), index, &idx, src, FAULT_SCATTER_ADD)
    }

    /// Copies the base into a fresh contiguous tensor, then records the
    /// scatter kernel over `shape` (index and src read through `idx` and
    /// src's own strides, restricted to `shape`).
    #[allow(clippy::too_many_arguments)]
    fn scatter_into(
        &self,
        op: &'static str,
        axis: usize,
        shape: &[usize],
        index: &GpuTensor,
        idx: &Layout,
        src: &GpuTensor,
        fault_code: u32,
    ) -> Result<GpuTensor> {
        let out = self.empty_like_device(op, self.shape(), DType::F32)?;
        if out.numel() > 0 {
            self.copy_into(&out)?;
        }
        let n: usize = shape.iter().product();
        if n == 0 {
            return Ok(out);
        }
        // src narrowed to the iteration shape keeps its strides and offset.
        let src_l = Layout::from_parts(
            op,
            shape.to_vec(),
            src.strides().to_vec(),
            src.layout.offset(),
        )?;
        // The output's own strides; the axis stride scales the target index
        // and the kernel skips the iteration coordinate on that axis.
        let out_l = Layout::from_parts(op, shape.to_vec(), contiguous_strides(self.shape()), 0)?;
        let p = ScatterAddParams::new(op, shape, [&src_l, idx, &out_l], axis, self.shape()[axis])?;
        self.kernels().dispatch_1d(
            &families::backward::SCATTER_ADD,
            &[("FAULT_CODE", f64::from(fault_code))],
            &[&src.buffer, &index.buffer, &out.buffer],
            &p,
            n as u64,
        )?;
        Ok(out)
    }
}

/// Threads per workgroup of the row kernel (its `@workgroup_size`).
const WORKGROUP: usize = WORKGROUP_SIZE as usize;
