//! Integer arithmetic and type promotion of the binary ops, the I32 sum
//! and product, and in-place writes into a view (`kernels/elementwise/binary_int.wgsl`,
//! `scalar_int.wgsl`, `reduce/sum_int.wgsl`, `movement/copy_view.wgsl`).
//!
//! An integer floor division or remainder by zero cannot be seen without a
//! readback: the kernel raises the device fault (code 10) and the next
//! readback returns PyTorch's ZeroDivisionError. A zero scalar divisor is
//! known on the host and is an error at once.

use wgrad_core::checks::arith::{self, binary_dtype, scalar_dtype};
use wgrad_core::shape::{self, normalize_axes, reduced_shape};
use wgrad_core::{BinaryOp, DType, Error, Result};
use wgrad_kernels::families;

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::{BinaryParams, CopyViewParams, ScalarParams, SumParams};

impl GpuTensor {
    /// `op(self, other)` for operands that are not both F32: promoted as
    /// PyTorch does (see `checks::arith::binary_dtype`).
    pub(crate) fn binary_promoted(&self, other: &GpuTensor, op: BinaryOp) -> Result<GpuTensor> {
        let name = op.name();
        self.same_device(name, other)?;
        // A 16-bit float computes in F32 only where the caller widened it
        // (and rounds the result back): promoting it here would hand back
        // an F32 tensor as if that were the op's dtype.
        self.reject_half(name)?;
        other.reject_half(name)?;
        if binary_dtype(op, self.dtype(), other.dtype())? != DType::I32 {
            return self.cast(DType::F32)?.binary(&other.cast(DType::F32)?, op);
        }
        let out_shape = shape::broadcast_shapes(name, self.shape(), other.shape())?;
        let a = self.layout.expand(&out_shape)?;
        let b = other.layout.expand(&out_shape)?;
        let out = self.empty_like_device(name, &out_shape, DType::I32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, &out_shape, &[&a, &b])?;
        let p = BinaryParams::new(name, &shape, &views[0], &views[1])?;
        self.kernels().dispatch_1d(
            &families::elementwise::BINARY_I32,
            &[("OP", f64::from(op.code()))],
            &[&self.buffer, &other.buffer, &out.buffer],
            &p,
            out.numel() as u64,
        )?;
        Ok(out)
    }

    /// `op(self, scalar)` (or `op(scalar, self)`) for a tensor that is not
    /// F32: I32 with a whole-number scalar stays I32 for the integer-closed
    /// ops; anything else computes in F32.
    pub(crate) fn binary_scalar_promoted(
        &self,
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    ) -> Result<GpuTensor> {
        let name = op.name();
        // As in `binary_promoted`: a 16-bit float is widened by the caller.
        self.reject_half(name)?;
        let Some(s) = scalar_dtype(op, self.dtype(), scalar, scalar_on_left)? else {
            return self
                .cast(DType::F32)?
                .binary_scalar(op, scalar, scalar_on_left);
        };
        if op.divides() && !scalar_on_left && s == 0 && self.numel() > 0 {
            return Err(arith::zero_division(name));
        }
        let out = self.empty_like_device(name, self.shape(), DType::I32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, self.shape(), &[&self.layout])?;
        let p = ScalarParams::new(name, &shape, &views[0], f32::from_bits(s as u32))?;
        self.kernels().dispatch_1d(
            &families::elementwise::BINARY_SCALAR_I32,
            &[
                ("OP", f64::from(op.code())),
                ("LEFT", f64::from(u8::from(scalar_on_left))),
            ],
            &[&self.buffer, &out.buffer],
            &p,
            out.numel() as u64,
        )?;
        Ok(out)
    }

    /// `floor(self / other)` with broadcasting (`torch.div(.., rounding_mode="floor")`).
    pub fn div_floor(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::FloorDiv)
    }
    /// Python-style remainder with broadcasting (`torch.remainder`).
    pub fn remainder(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Remainder)
    }

    /// Sum of an I32 tensor over `axes` (`&[]` = all), wrapping on overflow
    /// (PyTorch returns int64; wgrad keeps I32). The reduced axes are moved
    /// last and made contiguous, then one workgroup sums each row.
    pub fn sum_i32(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.fold_rows_i32("sum", false, axes, keepdim)
    }

    /// Product of an I32 tensor over `axes` (`&[]` = all), wrapping on
    /// overflow (PyTorch returns int64; wgrad keeps I32); the product of
    /// nothing is 1. One workgroup multiplies each row, as `sum_i32` adds.
    pub fn prod_i32(&self, axes: &[isize], keepdim: bool) -> Result<GpuTensor> {
        self.fold_rows_i32("prod", true, axes, keepdim)
    }

    /// `sum_i32` (`product` false) or `prod_i32` (`product` true):
    /// `reduce/sum_int.wgsl` under its `PRODUCT` override.
    fn fold_rows_i32(
        &self,
        op: &'static str,
        product: bool,
        axes: &[isize],
        keepdim: bool,
    ) -> Result<GpuTensor> {
        self.expect_dtype(op, DType::I32)?;
        let axes = normalize_axes(op, axes, self.rank())?;
        let out_shape = reduced_shape(self.shape(), &axes, keepdim);
        let out = self.empty_like_device(op, &out_shape, DType::I32)?;
        let rows: usize = out_shape.iter().product();
        if rows == 0 {
            return Ok(out);
        }
        let inner: usize = axes.iter().map(|&a| self.shape()[a]).product();
        if inner == 0 {
            out.fill_words(u32::from(product))?;
            return Ok(out);
        }
        let perm: Vec<isize> = (0..self.rank())
            .filter(|d| !axes.contains(d))
            .chain(axes.iter().copied())
            .map(|d| d as isize)
            .collect();
        let dense = self.permute(&perm)?.contiguous()?;
        let count = |n: usize| {
            u32::try_from(n).map_err(|_| Error::invalid(op, format!("{n} elements exceed u32")))
        };
        let p = SumParams {
            rows: count(rows)?,
            inner: count(inner)?,
            offset: count(dense.layout.offset())?,
            pad: 0,
        };
        self.kernels().dispatch_groups(
            &families::reduce::SUM_ROWS_I32,
            &[("PRODUCT", f64::from(u8::from(product)))],
            &[&dense.buffer, &out.buffer],
            &p,
            rows as u64,
        )?;
        Ok(out)
    }

    /// Writes `values` (this view's shape; cast to this dtype) into this
    /// view's elements of the shared buffer, so every view of the buffer
    /// sees them: the GPU half of an in-place op. One copy dispatch; a view
    /// whose elements overlap (an `expand`) is refused, and `values`
    /// reading this same buffer are copied out first.
    pub fn write_view(&self, values: &GpuTensor) -> Result<()> {
        const OP: &str = "copy_";
        self.same_device(OP, values)?;
        arith::writable_layout(OP, &self.layout)?;
        arith::inplace_shape(OP, self.shape(), values.shape())?;
        if self.numel() == 0 {
            return Ok(());
        }
        let mut src = values.cast(self.dtype())?;
        if src.buffer.id() == self.buffer.id() {
            let fresh = src.empty_like_device(OP, src.shape(), src.dtype())?;
            src.copy_into(&fresh)?;
            src = fresh;
        }
        let p = CopyViewParams::new(OP, self.shape(), &src.layout, &self.layout)?;
        // A strided 16-bit view can have its two halves of a word written by
        // two threads: the half kernel writes half-words atomically.
        let copy = if self.dtype.is_half() {
            &families::movement::COPY_HALF_TO_VIEW
        } else {
            &families::movement::COPY_TO_VIEW
        };
        self.kernels().dispatch_1d(
            copy,
            &[],
            &[&src.buffer, &self.buffer],
            &p,
            self.numel() as u64,
        )
    }
}
