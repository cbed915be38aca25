//! Max, min, argmax and argmin of I32 tensors (`torch.amax`, `max(dim)`,
//! `argmax` on int32), exact on both devices, composed from the F32
//! reductions and I32 arithmetic the backends have: a value x is
//! `256 * hi + lo` with `hi = x // 256` (within +-2^23, so exact as an f32)
//! and `lo = x % 256` in [0, 256). The extreme of x is the extreme `hi`,
//! then the extreme `lo` among the elements holding that `hi`; its index is
//! the first element equal to it. About fifteen dispatches on the GPU, none
//! through the host.

use wgrad_core::shape::{normalize_axes, reduced_shape};
use wgrad_core::{BinaryOp, CompareOp, DType, Result};

use super::Storage;

impl Storage {
    /// Largest (`largest`) or smallest element of an I32 tensor over `axes`
    /// (`&[]` = all), I32; an empty reduction is the F32 path's error.
    pub(super) fn extreme_i32(
        &self,
        axes: &[isize],
        keepdim: bool,
        largest: bool,
    ) -> Result<Storage> {
        let op = if largest { "max" } else { "min" };
        let hi = self
            .binary_scalar(BinaryOp::FloorDiv, 256.0, false)?
            .cast(DType::F32)?;
        let lo = self
            .binary_scalar(BinaryOp::Remainder, 256.0, false)?
            .cast(DType::F32)?;
        let best_hi = if largest {
            hi.max(axes, true)?
        } else {
            hi.min(axes, true)?
        };
        let on_best = hi.compare(&best_hi, CompareOp::Eq)?.cast(DType::F32)?;
        // lo where hi is the extreme, else a value that never wins:
        // (lo - loser) * on_best + loser, exact in f32.
        let loser = if largest { -1.0 } else { 256.0 };
        let candidates = lo
            .binary_scalar(BinaryOp::Sub, loser, false)?
            .binary(&on_best, BinaryOp::Mul)?
            .binary_scalar(BinaryOp::Add, loser, false)?;
        let best_lo = if largest {
            candidates.max(axes, true)?
        } else {
            candidates.min(axes, true)?
        };
        let value = best_hi
            .cast(DType::I32)?
            .binary_scalar(BinaryOp::Mul, 256.0, false)?
            .binary(&best_lo.cast(DType::I32)?, BinaryOp::Add)?;
        let axes = normalize_axes(op, axes, self.shape().len())?;
        let shape: Vec<isize> = reduced_shape(self.shape(), &axes, keepdim)
            .iter()
            .map(|&d| d as isize)
            .collect();
        value.reshape(&shape)
    }

    /// I32 index of the first largest (`largest`) or smallest element of an
    /// I32 tensor along `axis` (a real axis: 0-d inputs come reshaped).
    pub(super) fn arg_extreme_i32(
        &self,
        axis: isize,
        keepdim: bool,
        largest: bool,
    ) -> Result<Storage> {
        let best = self.extreme_i32(&[axis], true, largest)?;
        // The first 1 of the equality mask is the first extreme.
        self.compare(&best, CompareOp::Eq)?
            .cast(DType::F32)?
            .argmax(axis, keepdim)
    }
}
