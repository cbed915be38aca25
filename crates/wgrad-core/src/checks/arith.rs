//! Integer arithmetic and in-place writes: PyTorch's type promotion of the
//! binary ops, the integer division-by-zero error and the checks an
//! in-place write runs before it touches any data.

use crate::{BinaryOp, DType, Error, Layout, Result};

/// The dtype `a (op) b` computes in and returns, following PyTorch's type
/// promotion: F32 with F32 or with I32 gives F32 (the I32 operand is cast
/// first); I32 with I32 stays I32 for the ops that keep integers
/// ([`BinaryOp::keeps_int`], `pow` included) and gives F32 for true
/// division. Any U32 (mask) operand is an error naming the op.
pub fn binary_dtype(op: BinaryOp, a: DType, b: DType) -> Result<DType> {
    let name = op.name();
    for got in [a, b] {
        if got == DType::U32 {
            return Err(Error::DTypeMismatch {
                op: name,
                expected: DType::F32,
                got,
            });
        }
    }
    match (a, b) {
        (DType::I32, DType::I32) if op.keeps_int() => Ok(DType::I32),
        _ => Ok(DType::F32),
    }
}

/// The dtype `tensor (op) scalar` computes in for a tensor of `dtype`: an
/// I32 tensor stays I32 when the op keeps integers and the scalar is an
/// integer that fits i32 (returned), else the tensor is cast to F32 (a
/// fractional scalar promotes, as `int_tensor + 2.5` does in PyTorch).
/// A negative exponent promotes too (`int_tensor ** -1` is an error in
/// PyTorch and `** -1.0` a float, which a wgrad scalar cannot tell apart;
/// the float is the useful one). U32 is an error.
pub fn scalar_dtype(
    op: BinaryOp,
    dtype: DType,
    scalar: f32,
    scalar_on_left: bool,
) -> Result<Option<i32>> {
    match dtype {
        DType::F32 => Ok(None),
        DType::I32 if op == BinaryOp::Pow && !scalar_on_left && scalar < 0.0 => Ok(None),
        DType::I32 => Ok(op.keeps_int().then(|| int_scalar(scalar)).flatten()),
        got => Err(Error::DTypeMismatch {
            op: op.name(),
            expected: DType::F32,
            got,
        }),
    }
}

/// `scalar` as an i32 when it is a whole number within i32's range.
pub fn int_scalar(scalar: f32) -> Option<i32> {
    let fits = scalar.fract() == 0.0 && scalar >= i32::MIN as f32 && scalar < i32::MAX as f32;
    fits.then_some(scalar as i32)
}

/// PyTorch's error for an integer floor division or remainder by zero.
pub fn zero_division(op: &'static str) -> Error {
    Error::invalid(
        op,
        "ZeroDivisionError: integer division by zero (a divisor element is 0)",
    )
}

/// An in-place write into `layout` is refused when two of its elements
/// share one memory location (an `expand`ed view), as PyTorch refuses it.
pub fn writable_layout(op: &'static str, layout: &Layout) -> Result<()> {
    let overlaps = layout
        .shape()
        .iter()
        .zip(layout.strides())
        .any(|(&n, &s)| n > 1 && s == 0);
    if overlaps {
        return Err(Error::invalid(
            op,
            format!(
                "unsupported operation: more than one element of the written-to tensor (shape {:?}, strides {:?}) refers to a single memory location; clone() it first",
                layout.shape(),
                layout.strides()
            ),
        ));
    }
    Ok(())
}

/// An in-place result of `shape` must have the written tensor's shape
/// `dst` (it may broadcast the other operand, never `dst` itself).
pub fn inplace_shape(op: &'static str, dst: &[usize], shape: &[usize]) -> Result<()> {
    if dst != shape {
        return Err(Error::invalid(
            op,
            format!("output with shape {dst:?} doesn't match the broadcast shape {shape:?}"),
        ));
    }
    Ok(())
}

/// An in-place result of `dtype` can be written into a tensor of `dst`
/// only when that is no narrowing (a float result into an I32 tensor is
/// PyTorch's "result type Float can't be cast to the desired output type
/// Int").
pub fn inplace_dtype(op: &'static str, dst: DType, dtype: DType) -> Result<()> {
    if dst.is_float() || dst == dtype {
        return Ok(());
    }
    Err(Error::invalid(
        op,
        format!("result type {dtype} can't be cast to the desired output type {dst}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_torch() {
        use BinaryOp::*;
        assert_eq!(
            binary_dtype(Add, DType::I32, DType::I32).ok(),
            Some(DType::I32)
        );
        assert_eq!(
            binary_dtype(Div, DType::I32, DType::I32).ok(),
            Some(DType::F32)
        );
        assert_eq!(
            binary_dtype(Mul, DType::I32, DType::F32).ok(),
            Some(DType::F32)
        );
        assert_eq!(
            binary_dtype(Pow, DType::I32, DType::I32).ok(),
            Some(DType::I32)
        );
        assert!(binary_dtype(Add, DType::U32, DType::F32).is_err());
        assert_eq!(
            scalar_dtype(Add, DType::I32, 2.0, false).ok(),
            Some(Some(2))
        );
        assert_eq!(scalar_dtype(Add, DType::I32, 2.5, false).ok(), Some(None));
        assert_eq!(scalar_dtype(Div, DType::I32, 2.0, false).ok(), Some(None));
        assert_eq!(
            scalar_dtype(Pow, DType::I32, 3.0, false).ok(),
            Some(Some(3))
        );
        assert_eq!(scalar_dtype(Pow, DType::I32, -1.0, false).ok(), Some(None));
        assert_eq!(
            scalar_dtype(Pow, DType::I32, -2.0, true).ok(),
            Some(Some(-2))
        );
        assert_eq!(int_scalar(3e9), None);
    }
}
