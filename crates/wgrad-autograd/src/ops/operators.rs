//! `+ - * / %` and unary `-` on tensor references and scalars (`%` is
//! `torch.remainder`: the result has the divisor's sign).
//!
//! Operators cannot fail silently, so they return `Result<Tensor>`:
//! `let y = (&(&a * &b)? + 1.0)?;` — shape and device errors surface as
//! values, never as panics.

use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use wgrad_core::{BinaryOp, Result};

use crate::tensor::Tensor;

macro_rules! tensor_operator {
    ($Trait:ident, $method:ident, $op:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                self.binary(rhs, BinaryOp::$op)
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                self.binary(&rhs, BinaryOp::$op)
            }
        }
        impl $Trait<f32> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: f32) -> Result<Tensor> {
                self.binary_scalar(BinaryOp::$op, rhs, false)
            }
        }
        impl $Trait<&Tensor> for f32 {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                rhs.binary_scalar(BinaryOp::$op, self, true)
            }
        }
    };
}

tensor_operator!(Add, add, Add);
tensor_operator!(Sub, sub, Sub);
tensor_operator!(Mul, mul, Mul);
tensor_operator!(Div, div, Div);
tensor_operator!(Rem, rem, Remainder);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}
