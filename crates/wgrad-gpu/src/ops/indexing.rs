//! Index-driven data movement: `index_select`, `gather` and `one_hot`.
//!
//! Shapes, dtypes and axes are checked on the host. Index *values* live on
//! the device and checking them here would need a readback, so the kernels
//! check them: an index outside its dimension sets the device fault (codes
//! 1, 2, 3 of `wgrad_device::FaultCode`) and is clamped, and the next
//! readback returns `Error::IndexOutOfRange` naming the op.

use wgrad_core::shape::check_rank;
use wgrad_core::{DType, Error, Result, checks};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{GatherParams, IndexSelectParams, OneHotParams};

impl GpuTensor {
    /// Picks the slices `index[0], index[1], ...` along `axis`
    /// (`torch.index_select`). `index` is 1-D I32 (any strides); the result
    /// has `index.len()` entries on `axis`. Any 32-bit dtype (F16/BF16 are
    /// refused: widen them first).
    pub fn index_select(&self, axis: isize, index: &GpuTensor) -> Result<GpuTensor> {
        const OP: &str = "index_select";
        self.same_device(OP, index)?;
        // The kernel moves one 32-bit word per element.
        self.reject_half(OP)?;
        index.expect_dtype(OP, DType::I32)?;
        let (a, out_shape) = checks::indexing::index_select(OP, axis, self.shape(), index.shape())?;
        let out = self.empty_like_device(OP, &out_shape, self.dtype)?;
        if out.numel() == 0 {
            if index.numel() > 0 {
                // The output is empty (another dim is 0), but PyTorch still
                // rejects an index outside the axis: the kernel checks each
                // index once, selecting from a stand-in source of that axis
                // (stride 0, so it reads element 0 of the bound buffer) into
                // scratch.
                let axis_size = self.shape()[a];
                let stand_in = wgrad_core::Layout::contiguous(&[1]).expand(&[axis_size])?;
                let scratch = self.empty_like_device(OP, &[index.numel()], self.dtype)?;
                let p = IndexSelectParams::new(OP, 0, &stand_in, &index.layout, scratch.shape())?;
                self.kernels().dispatch_1d(
                    &families::movement::INDEX_SELECT,
                    &[],
                    &[&self.buffer, &index.buffer, &scratch.buffer],
                    &p,
                    scratch.numel() as u64,
                )?;
            }
            return Ok(out);
        }
        let p = IndexSelectParams::new(OP, a, &self.layout, &index.layout, &out_shape)?;
        self.kernels().dispatch_1d(
            &families::movement::INDEX_SELECT,
            &[],
            &[&self.buffer, &index.buffer, &out.buffer],
            &p,
            out.numel() as u64,
        )?;
        Ok(out)
    }

    /// `torch.gather`: `out[i][j][k] = self[index[i][j][k]][j][k]` for
    /// `axis = 0` (likewise for other axes). `index` is I32 with the same
    /// rank, no larger than `self` on the other axes; the output has the
    /// index's shape and `self`'s dtype (any 32-bit one).
    pub fn gather(&self, axis: isize, index: &GpuTensor) -> Result<GpuTensor> {
        const OP: &str = "gather";
        self.same_device(OP, index)?;
        // The kernel moves one 32-bit word per element.
        self.reject_half(OP)?;
        index.expect_dtype(OP, DType::I32)?;
        let a = checks::indexing::gather(OP, axis, self.shape(), index.shape())?;
        let out = self.empty_like_device(OP, index.shape(), self.dtype)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let p = GatherParams::new(OP, a, &self.layout, &index.layout)?;
        self.kernels().dispatch_1d(
            &families::movement::GATHER,
            &[],
            &[&self.buffer, &index.buffer, &out.buffer],
            &p,
            out.numel() as u64,
        )?;
        Ok(out)
    }

    /// One-hot encoding of I32 labels in `0..num_classes`: appends a dim of
    /// size `num_classes` holding 1 at the label and 0 elsewhere, in `dtype`.
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<GpuTensor> {
        const OP: &str = "one_hot";
        self.expect_dtype(OP, DType::I32)?;
        if dtype.is_half() {
            // 0 and 1 are exact in every float dtype: the F32 encoding,
            // converted, is the 16-bit one.
            return self.one_hot(num_classes, DType::F32)?.cast(dtype);
        }
        let out_shape = checks::indexing::one_hot_shape(self.shape(), num_classes);
        check_rank(OP, &out_shape)?;
        let out = self.empty_like_device(OP, &out_shape, dtype)?;
        let rows = self.numel();
        if rows == 0 {
            return Ok(out);
        }
        // With no classes every label is out of range; one checking thread
        // per label still runs so that the fault reports one of them.
        let cols = num_classes.max(1);
        let threads = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::invalid(OP, format!("shape {out_shape:?} is too large")))?;
        let one = match dtype {
            DType::F32 => 1.0f32.to_bits(),
            DType::I32 | DType::U32 => 1,
            DType::F16 | DType::BF16 => {
                return Err(Error::invalid(OP, "16-bit dtypes take the F32 path above"));
            }
        };
        let p = OneHotParams::new(OP, &self.layout, threads, [num_classes, cols], one)?;
        self.kernels().dispatch_1d(
            &families::movement::ONE_HOT,
            &[],
            &[&self.buffer, &out.buffer],
            &p,
            threads as u64,
        )?;
        Ok(out)
    }
}
