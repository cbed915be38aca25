//! Unary ops on I32 tensors, as PyTorch runs them on int32: the ops closed
//! over the integers (`neg`, `abs`, `relu`, `square`, `sign`, `floor`,
//! `ceil`, `round`, and `clamp` with whole-number bounds) stay I32, exact
//! (wrapping like int32: `abs(i32::MIN)` is `i32::MIN`), composed from the
//! backends' I32 arithmetic; the others (`exp`, `sqrt`, `sigmoid`, ...)
//! compute in F32, as PyTorch promotes an integer input to the default float
//! dtype. The backends' unary kernels are F32-only.

use wgrad_core::checks::arith::int_scalar;
use wgrad_core::{BinaryOp, CompareOp, DType, Result, UnaryOp};

use super::Storage;

impl Storage {
    /// `op` applied to an I32 tensor (see the module docs).
    pub(super) fn unary_i32(&self, op: UnaryOp) -> Result<Storage> {
        match op {
            UnaryOp::Neg => self.binary_scalar(BinaryOp::Sub, 0.0, true),
            UnaryOp::Abs => self.binary(&self.unary_i32(UnaryOp::Neg)?, BinaryOp::Maximum),
            UnaryOp::Relu => self.binary_scalar(BinaryOp::Maximum, 0.0, false),
            UnaryOp::Square => self.binary(self, BinaryOp::Mul),
            UnaryOp::Sign => {
                let positive = self.compare_scalar(CompareOp::Gt, 0.0)?.cast(DType::I32)?;
                let negative = self.compare_scalar(CompareOp::Lt, 0.0)?.cast(DType::I32)?;
                positive.binary(&negative, BinaryOp::Sub)
            }
            // A new tensor, as PyTorch's are (never the input's buffer).
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => {
                self.binary_scalar(BinaryOp::Add, 0.0, false)
            }
            UnaryOp::Clamp { min, max } if whole(min) && whole(max) => {
                let lower = match min {
                    Some(lo) => self.binary_scalar(BinaryOp::Maximum, lo, false)?,
                    None => self.binary_scalar(BinaryOp::Add, 0.0, false)?,
                };
                // PyTorch: with min > max every element is max.
                match max {
                    Some(hi) => lower.binary_scalar(BinaryOp::Minimum, hi, false),
                    None => Ok(lower),
                }
            }
            _ => self.cast(DType::F32)?.unary(op),
        }
    }
}

/// Whether a clamp bound keeps an I32 tensor I32 (none, or a whole number
/// within i32's range).
fn whole(bound: Option<f32>) -> bool {
    bound.is_none_or(|b| int_scalar(b).is_some())
}
