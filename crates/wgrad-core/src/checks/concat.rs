//! `concat`: the inputs' ranks and sizes and the joined shape. Each backend
//! checks devices and dtypes input by input between these calls, so errors
//! come in input order.

use crate::shape::{check_rank, normalize_axis};
use crate::{Error, Result};

/// The first input (the one the others are checked against); an empty list
/// is an error.
pub fn first<'a, T>(op: &'static str, inputs: &'a [T]) -> Result<&'a T> {
    inputs
        .first()
        .ok_or_else(|| Error::invalid(op, "needs at least one tensor"))
}

/// Error unless an input of shape `shape` has the rank of `first` and its
/// sizes on every axis but `axis`.
pub fn same_except_axis(
    op: &'static str,
    first: &[usize],
    axis: usize,
    shape: &[usize],
) -> Result<()> {
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

/// The normalised join axis for inputs of the rank of `first`.
pub fn axis(op: &'static str, first: &[usize], axis: isize) -> Result<usize> {
    normalize_axis(op, axis, first.len())
}

/// The joined shape: `first` with the inputs' `axis` lengths summed.
pub fn joined_shape(
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
        assert_eq!(axis("concat", &[2, 3], -1).unwrap(), 1);
        assert!(same_except_axis("concat", &[2, 3], 1, &[2, 7]).is_ok());
        assert!(matches!(
            same_except_axis("concat", &[2, 3], 1, &[3, 3]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(same_except_axis("concat", &[2, 3], 1, &[2, 3, 1]).is_err());
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
