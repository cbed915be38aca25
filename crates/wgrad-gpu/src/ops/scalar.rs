//! Binary arithmetic with a scalar operand (`kernels/elementwise/scalar.wgsl`).
//! The scalar travels in the dispatch's immediates: no buffer is uploaded.

use wgrad_core::{BinaryOp, DType, Result};
use wgrad_kernels::families;

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::ScalarParams;

/// Generates the named wrappers of [`GpuTensor::binary_scalar`] (scalar on the right).
macro_rules! named_scalar_ops {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self, scalar: f32) -> Result<GpuTensor> {
                self.binary_scalar($op, scalar, false)
            }
        )*
    };
}

impl GpuTensor {
    /// `op(self, scalar)` elementwise, or `op(scalar, self)` if
    /// `scalar_on_left` (e.g. `1 - x`, `2 ^ x`). An I32 tensor with a
    /// whole-number scalar stays I32 for the ops that keep integers. `x ^ 0.5`
    /// and `x ^ -0.5` are `sqrt` and `rsqrt`, as in PyTorch
    /// ([`BinaryOp::scalar_as_unary`]). Reads strided views in place; the
    /// result is contiguous.
    pub fn binary_scalar(
        &self,
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    ) -> Result<GpuTensor> {
        let name = op.name();
        if self.dtype() != DType::F32 {
            return self.binary_scalar_promoted(op, scalar, scalar_on_left);
        }
        if let Some(unary) = op.scalar_as_unary(scalar, scalar_on_left) {
            return self.unary(unary);
        }
        let out = self.empty_like_device(name, self.shape(), DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, self.shape(), &[&self.layout])?;
        let p = ScalarParams::new(name, &shape, &views[0], scalar)?;
        self.kernels().dispatch_1d(
            &families::elementwise::BINARY_SCALAR,
            &[
                ("OP", f64::from(op.code())),
                ("LEFT", f64::from(u8::from(scalar_on_left))),
            ],
            &[&self.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )?;
        Ok(out)
    }

    named_scalar_ops! {
        /// `self + scalar`.
        add_scalar => BinaryOp::Add;
        /// `self - scalar`.
        sub_scalar => BinaryOp::Sub;
        /// `self * scalar`.
        mul_scalar => BinaryOp::Mul;
        /// `self / scalar`.
        div_scalar => BinaryOp::Div;
        /// `self.powf(scalar)`.
        pow_scalar => BinaryOp::Pow;
        /// NaN-propagating `max(self, scalar)`.
        maximum_scalar => BinaryOp::Maximum;
        /// NaN-propagating `min(self, scalar)`.
        minimum_scalar => BinaryOp::Minimum;
        /// `floor(self / scalar)`.
        div_floor_scalar => BinaryOp::FloorDiv;
        /// Python-style `self % scalar`.
        remainder_scalar => BinaryOp::Remainder;
    }
}
