//! `concat`: the inputs' dtypes, ranks and sizes and the joined shape.

use crate::shape::{check_rank, normalize_axis};
use crate::{DType, Error, Result};

/// Checks the inputs of `concat(tensors, axis)` and returns the normalised
/// axis and the joined shape. `shape` and `dtype` read an input's; every
/// later input must have the first one's dtype, rank and sizes on every
/// other axis. `also(first, t)` is the backend's own check of each later
/// input (the GPU's device check), run before its dtype and shape, so
/// errors come in input order.
pub fn inputs<T: ?Sized>(
    op: &'static str,
    tensors: &[&T],
    axis: isize,
    shape: impl Fn(&T) -> &[usize],
    dtype: impl Fn(&T) -> DType,
    also: impl Fn(&T, &T) -> Result<()>,
) -> Result<(usize, Vec<usize>)> {
    let first = *self::first(op, tensors)?;
    let a = normalize_axis(op, axis, shape(first).len())?;
    for &t in &tensors[1..] {
        also(first, t)?;
        super::expect_dtype(op, dtype(first), dtype(t))?;
        same_except_axis(op, shape(first), a, shape(t))?;
    }
    let joined = joined_shape(op, shape(first), a, tensors.iter().map(|&t| shape(t)[a]))?;
    Ok((a, joined))
}

/// The first input (the one the others are checked against); an empty list
/// is an error.
fn first<'a, T>(op: &'static str, inputs: &'a [T]) -> Result<&'a T> {
    inputs
        .first()
        .ok_or_else(|| Error::invalid(op, "needs at least one tensor"))
}

/// Error unless an input of shape `shape` has the rank of `first` and its
/// sizes on every axis but `axis`.
fn same_except_axis(op: &'static str, first: &[usize], axis: usize, shape: &[usize]) -> Result<()> {
    if super::fits_except(shape, first, axis, true) {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            op,
            lhs: first.to_vec(),
            rhs: shape.to_vec(),
        })
    }
}

/// The joined shape: `first` with the inputs' `axis` lengths summed.
fn joined_shape(
    op: &'static str,
    first: &[usize],
    axis: usize,
    lengths: impl IntoIterator<Item = usize>,
) -> Result<Vec<usize>> {
    let mut shape = first.to_vec();
    shape[axis] = lengths
        .into_iter()
        .try_fold(0usize, |n, len| n.checked_add(len))
        .ok_or_else(|| Error::invalid(op, "the joined axis is longer than a usize"))?;
    check_rank(op, &shape)?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_agree_except_on_the_axis() {
        assert!(first::<u8>("concat", &[]).is_err());
        assert!(same_except_axis("concat", &[2, 3], 1, &[2, 7]).is_ok());
        assert!(matches!(
            same_except_axis("concat", &[2, 3], 1, &[3, 3]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(same_except_axis("concat", &[2, 3], 1, &[2, 3, 1]).is_err());
    }

    #[test]
    fn inputs_report_in_order() {
        fn shape(t: &(Vec<usize>, DType)) -> &[usize] {
            &t.0
        }
        let dtype = |t: &(Vec<usize>, DType)| t.1;
        let ok = |_: &(Vec<usize>, DType), _: &(Vec<usize>, DType)| Ok(());
        let a = (vec![2, 3], DType::F32);
        let b = (vec![2, 4], DType::F32);
        let (axis, joined) = inputs("concat", &[&a, &b], 1, shape, dtype, ok).unwrap();
        assert_eq!((axis, joined), (1, vec![2, 7]));
        let bad_shape = (vec![3, 4], DType::F32);
        let bad_dtype = (vec![2, 4], DType::I32);
        assert!(matches!(
            inputs("concat", &[&a, &bad_shape, &bad_dtype], 1, shape, dtype, ok),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            inputs("concat", &[&a, &bad_dtype, &bad_shape], 1, shape, dtype, ok),
            Err(Error::DTypeMismatch { .. })
        ));
        let refuse = |_: &(Vec<usize>, DType), _: &(Vec<usize>, DType)| {
            Err(Error::invalid("concat", "elsewhere"))
        };
        assert!(matches!(
            inputs("concat", &[&a, &bad_dtype], 1, shape, dtype, refuse),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(inputs::<(Vec<usize>, DType)>("concat", &[], 0, shape, dtype, ok).is_err());
    }

    #[test]
    fn joined_length_is_checked() {
        assert_eq!(
            joined_shape("concat", &[2, 3], 1, [3, 7]).unwrap(),
            vec![2, 10]
        );
        assert!(joined_shape("concat", &[2, 3], 1, [usize::MAX, 1]).is_err());
    }
}
