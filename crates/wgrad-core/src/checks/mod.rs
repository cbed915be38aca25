//! Argument checks and output-shape rules, written once for both backends.
//!
//! Every function here looks only at shapes, axes, dtypes and scalar
//! hyper-parameters (never at tensor data), so `wgrad-cpu` and `wgrad-gpu`
//! call the same code and reject the same calls with the same errors. Each
//! backend still checks what only it knows (devices, dtypes of its own
//! tensor type, index values) in its own place, before or after these.
//!
//! One file per op family: [`matmul`], [`indexing`] (`index_select`,
//! `gather`, `one_hot`), [`index_add`] (`index_add`, `scatter_add`),
//! [`concat`](mod@concat), [`conv`] (conv2d, conv_transpose2d), [`loss`] (cross-entropy), [`optim`]
//! (optimizer operands and step coefficients) and [`pool`] (max_pool2d,
//! avg_pool2d, adaptive_avg_pool2d), [`sort`] (sort, topk, cumsum and
//! the random samplers) and [`layer_norm`].

pub mod arith;
pub mod attention;
pub mod concat;
pub mod conv;
pub mod index_add;
pub mod indexing;
pub mod layer_norm;
pub mod loss;
pub mod matmul;
pub mod optim;
pub mod pool;
pub mod sort;

use crate::{DType, Error, Result};

/// Error unless an operand's dtype is `expected`.
pub fn expect_dtype(op: &'static str, expected: DType, got: DType) -> Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::DTypeMismatch { op, expected, got })
    }
}

/// Error unless `lhs` and `rhs` are identical shapes (no broadcasting).
pub fn same_shape(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Result<()> {
    if lhs == rhs {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            op,
            lhs: lhs.to_vec(),
            rhs: rhs.to_vec(),
        })
    }
}

/// A float operand (F32, F16 or BF16), else a dtype error naming `op`.
pub fn expect_float(op: &'static str, got: DType) -> Result<()> {
    if got.is_float() {
        Ok(())
    } else {
        Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got,
        })
    }
}

/// Comparisons accept floats or I32 (masks are not ordered data).
pub fn comparable(op: &'static str, got: DType) -> Result<()> {
    match got {
        DType::F32 | DType::F16 | DType::BF16 | DType::I32 => Ok(()),
        got => Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got,
        }),
    }
}

/// Whether `small` fits into `big` on every axis but `axis`: same rank, and
/// on the other axes `small[d] <= big[d]` (`exact`: `small[d] == big[d]`).
fn fits_except(small: &[usize], big: &[usize], axis: usize, exact: bool) -> bool {
    small.len() == big.len()
        && small
            .iter()
            .zip(big)
            .enumerate()
            .all(|(d, (&s, &b))| d == axis || if exact { s == b } else { s <= b })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_and_shape_checks_name_both_sides() {
        assert!(expect_dtype("t", DType::F32, DType::F32).is_ok());
        assert!(matches!(
            expect_dtype("t", DType::F32, DType::I32),
            Err(Error::DTypeMismatch {
                op: "t",
                expected: DType::F32,
                got: DType::I32
            })
        ));
        assert!(same_shape("t", &[2, 3], &[2, 3]).is_ok());
        let Err(Error::ShapeMismatch { lhs, rhs, .. }) = same_shape("t", &[2, 3], &[3, 2]) else {
            panic!("expected ShapeMismatch");
        };
        assert_eq!((lhs, rhs), (vec![2, 3], vec![3, 2]));
    }

    #[test]
    fn masks_are_not_comparable() {
        assert!(comparable("lt", DType::F32).is_ok());
        assert!(comparable("lt", DType::I32).is_ok());
        assert!(matches!(
            comparable("lt", DType::U32),
            Err(Error::DTypeMismatch {
                expected: DType::F32,
                got: DType::U32,
                ..
            })
        ));
    }

    #[test]
    fn fits_except_skips_the_axis() {
        assert!(fits_except(&[2, 9], &[2, 3], 1, true));
        assert!(!fits_except(&[3, 9], &[2, 3], 1, true));
        assert!(fits_except(&[1, 9], &[2, 3], 1, false));
        assert!(!fits_except(&[1, 9], &[2, 3], 1, true));
        assert!(!fits_except(&[2], &[2, 3], 1, false));
    }
}
