//! Logical ops on truth values (`torch.logical_and/or/xor/not`, `&`, `|`,
//! `^`, `!` on masks, `any`, `all`): any dtype is read as PyTorch reads it
//! (nonzero, NaN included, is true; a U32 mask as it is), the result is a
//! U32 0/1 mask, and no gradient flows (PyTorch's results are bool).

use std::ops::{BitAnd, BitOr, BitXor, Not};

use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result};

use crate::storage::Storage;
use crate::tensor::Tensor;

/// `t`'s truth values as I32 0/1.
fn truth(t: &Tensor) -> Result<Storage> {
    let s = t.storage();
    let mask = if s.dtype() == DType::U32 {
        s
    } else {
        s.compare_scalar(CompareOp::Ne, 0.0)?
    };
    mask.cast(DType::I32)
}

/// A U32 mask of `x != 0` for an I32 0/1 (or count) tensor.
fn mask_of(x: &Storage) -> Result<Tensor> {
    Ok(Tensor::from_storage_leaf(
        x.compare_scalar(CompareOp::Ne, 0.0)?,
    ))
}

impl Tensor {
    /// `torch.logical_and`: true where both are nonzero (broadcasting).
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        mask_of(&truth(self)?.binary(&truth(other)?, BinaryOp::Minimum)?)
    }

    /// `torch.logical_or`: true where either is nonzero (broadcasting).
    pub fn logical_or(&self, other: &Tensor) -> Result<Tensor> {
        mask_of(&truth(self)?.binary(&truth(other)?, BinaryOp::Maximum)?)
    }

    /// `torch.logical_xor`: true where exactly one is nonzero.
    pub fn logical_xor(&self, other: &Tensor) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            truth(self)?.compare(&truth(other)?, CompareOp::Ne)?,
        ))
    }

    /// `torch.logical_not`: true where zero.
    pub fn logical_not(&self) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            truth(self)?.compare_scalar(CompareOp::Eq, 0.0)?,
        ))
    }

    /// `torch.any(x, dim, keepdim)` over `axes` (`&[]` = all): a U32 mask,
    /// true where any element is nonzero (false over nothing).
    pub fn any(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        mask_of(&truth(self)?.sum(axes, keepdim)?)
    }

    /// `torch.all(x, dim, keepdim)` over `axes` (`&[]` = all): a U32 mask,
    /// true where every element is nonzero (true over nothing).
    pub fn all(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        // All true = no false one: the count of zeros is 0.
        let zeros = truth(self)?
            .compare_scalar(CompareOp::Eq, 0.0)?
            .cast(DType::I32)?;
        Ok(Tensor::from_storage_leaf(
            zeros
                .sum(axes, keepdim)?
                .compare_scalar(CompareOp::Eq, 0.0)?,
        ))
    }

    /// [`any`](Self::any) over every element (a 0-d mask).
    pub fn any_all(&self) -> Result<Tensor> {
        self.any(&[], false)
    }

    /// [`all`](Self::all) over every element (a 0-d mask).
    pub fn all_all(&self) -> Result<Tensor> {
        self.all(&[], false)
    }
}

/// The operators are PyTorch's on bool tensors (logical); on integers
/// PyTorch's are bitwise, which wgrad does not have: an error, not a
/// silently different answer.
fn masks_only(op: &'static str, operands: &[&Tensor]) -> Result<()> {
    match operands.iter().find(|t| t.dtype() != DType::U32) {
        Some(t) => Err(Error::invalid(
            op,
            format!(
                "the operator is defined here for boolean masks (U32) only, got {}; \
                 use logical_and/logical_or/logical_xor/logical_not",
                t.dtype()
            ),
        )),
        None => Ok(()),
    }
}

macro_rules! logical_operator {
    ($Trait:ident, $method:ident, $logical:ident, $name:literal) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            /// PyTorch's operator on bool tensors: the logical op.
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                masks_only($name, &[self, rhs])?;
                self.$logical(rhs)
            }
        }
    };
}

logical_operator!(BitAnd, bitand, logical_and, "&");
logical_operator!(BitOr, bitor, logical_or, "|");
logical_operator!(BitXor, bitxor, logical_xor, "^");

impl Not for &Tensor {
    type Output = Result<Tensor>;
    /// `~mask`: [`logical_not`](Tensor::logical_not).
    fn not(self) -> Result<Tensor> {
        masks_only("!", &[self])?;
        self.logical_not()
    }
}
