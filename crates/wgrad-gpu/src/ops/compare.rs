//! Comparisons producing a U32 mask (`kernels/elementwise/compare.wgsl`).

use wgrad_core::{CompareOp, DType, Layout, Result, checks, shape};
use wgrad_kernels::families;

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::CompareParams;

/// Generates the named tensor-tensor wrappers of [`GpuTensor::compare`].
macro_rules! named_compare_ops {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self, other: &GpuTensor) -> Result<GpuTensor> {
                self.compare(other, $op)
            }
        )*
    };
}

/// Generates the named wrappers of [`GpuTensor::compare_scalar`].
macro_rules! named_compare_scalar_ops {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self, scalar: f32) -> Result<GpuTensor> {
                self.compare_scalar($op, scalar)
            }
        )*
    };
}

impl GpuTensor {
    /// Elementwise comparison with broadcasting; inputs both F32 or both
    /// I32; output a U32 mask of 0/1. Any comparison with NaN is false
    /// except `ne`.
    pub fn compare(&self, other: &GpuTensor, op: CompareOp) -> Result<GpuTensor> {
        let name = op.name();
        self.same_device(name, other)?;
        // The kernels read one element per 32-bit word; 16-bit floats are
        // widened by the caller.
        self.reject_half(name)?;
        other.reject_half(name)?;
        checks::comparable(name, self.dtype())?;
        checks::comparable(name, other.dtype())?;
        if self.dtype() != other.dtype() {
            // One F32 and one I32: PyTorch compares in F32.
            return self.cast(DType::F32)?.compare(&other.cast(DType::F32)?, op);
        }
        let out_shape = shape::broadcast_shapes(name, self.shape(), other.shape())?;
        let a = self.layout.expand(&out_shape)?;
        let b = other.layout.expand(&out_shape)?;
        let out = self.empty_like_device(name, &out_shape, DType::U32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (merged, views) = coalesce(name, &out_shape, &[&a, &b])?;
        self.record_compare(op, other, &merged, &views, None, &out)?;
        Ok(out)
    }

    /// Compares every element with `scalar`; output a U32 mask. I32 inputs
    /// are compared exactly, as if both sides were widened to f64 (so
    /// `lt_scalar(2.5)` is true for 2, as with PyTorch's type promotion); the
    /// kernel does this without rounding the integer to f32, so it holds for
    /// every i32, not only for |x| < 2^24.
    pub fn compare_scalar(&self, op: CompareOp, scalar: f32) -> Result<GpuTensor> {
        let name = op.name();
        // The kernels read one element per 32-bit word; 16-bit floats are
        // widened by the caller.
        self.reject_half(name)?;
        checks::comparable(name, self.dtype())?;
        let out = self.empty_like_device(name, self.shape(), DType::U32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        // The kernel's second operand is unused in scalar mode; give it the
        // first one's view (and buffer) so that the layout is well formed.
        let (merged, views) = coalesce(name, self.shape(), &[&self.layout, &self.layout])?;
        self.record_compare(op, self, &merged, &views, Some(scalar), &out)?;
        Ok(out)
    }

    /// Records one `compare` dispatch over coalesced views of `self`/`other`
    /// (`scalar` set: compare `self` with it instead of reading `other`).
    fn record_compare(
        &self,
        op: CompareOp,
        other: &GpuTensor,
        shape: &[usize],
        views: &[Layout],
        scalar: Option<f32>,
        out: &GpuTensor,
    ) -> Result<()> {
        let name = op.name();
        let p = CompareParams::new(name, shape, &views[0], &views[1], scalar)?;
        self.kernels().dispatch_1d(
            &families::elementwise::COMPARE,
            &[
                ("OP", f64::from(op.code())),
                ("INT", f64::from(u8::from(self.dtype == DType::I32))),
                ("SCALAR", f64::from(u8::from(scalar.is_some()))),
            ],
            &[&self.buffer, &other.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )
    }

    named_compare_ops! {
        /// U32 mask of `self == other`.
        eq => CompareOp::Eq;
        /// U32 mask of `self != other`.
        ne => CompareOp::Ne;
        /// U32 mask of `self < other`.
        lt => CompareOp::Lt;
        /// U32 mask of `self <= other`.
        le => CompareOp::Le;
        /// U32 mask of `self > other`.
        gt => CompareOp::Gt;
        /// U32 mask of `self >= other`.
        ge => CompareOp::Ge;
    }

    named_compare_scalar_ops! {
        /// U32 mask of `self == scalar`.
        eq_scalar => CompareOp::Eq;
        /// U32 mask of `self != scalar`.
        ne_scalar => CompareOp::Ne;
        /// U32 mask of `self < scalar`.
        lt_scalar => CompareOp::Lt;
        /// U32 mask of `self <= scalar`.
        le_scalar => CompareOp::Le;
        /// U32 mask of `self > scalar`.
        gt_scalar => CompareOp::Gt;
        /// U32 mask of `self >= scalar`.
        ge_scalar => CompareOp::Ge;
    }
}
