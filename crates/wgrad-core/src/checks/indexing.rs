//! `index_select`, `gather` and `one_hot`: axes, index shapes and output
//! shapes. Index *values* are checked by each backend (the CPU before any
//! element moves, the GPU in its kernels through the device fault).

use super::fits_except;
use crate::shape::normalize_axis;
use crate::{Error, Result};

/// Error unless `index` is 1-D (the index of `index_select`/`index_add`).
pub fn index_1d(op: &'static str, index: &[usize]) -> Result<()> {
    if index.len() == 1 {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("index must be 1-D, got shape {index:?}"),
        ))
    }
}

/// `index_select(axis, index)` of a tensor of shape `input` with an index of
/// shape `index` (which must be 1-D): the normalised axis and the output
/// shape (`input` with `index.len()` entries on that axis).
pub fn index_select(
    op: &'static str,
    axis: isize,
    input: &[usize],
    index: &[usize],
) -> Result<(usize, Vec<usize>)> {
    index_1d(op, index)?;
    let a = normalize_axis(op, axis, input.len())?;
    let mut out = input.to_vec();
    out[a] = index[0];
    Ok((a, out))
}

/// `gather(axis, index)` of a tensor of shape `input`: the index has the
/// input's rank and is no larger on the other axes. Returns the normalised
/// axis; the output has the index's shape.
pub fn gather(op: &'static str, axis: isize, input: &[usize], index: &[usize]) -> Result<usize> {
    let a = normalize_axis(op, axis, input.len())?;
    if !fits_except(index, input, a, false) {
        return Err(Error::ShapeMismatch {
            op,
            lhs: input.to_vec(),
            rhs: index.to_vec(),
        });
    }
    Ok(a)
}

/// The shape of `one_hot(num_classes)` of labels of shape `labels`: a new
/// last dim of `num_classes`. (Rank and size limits are the caller's
/// allocation checks.)
pub fn one_hot_shape(labels: &[usize], num_classes: usize) -> Vec<usize> {
    let mut out = labels.to_vec();
    out.push(num_classes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_select_replaces_the_axis_length() {
        assert_eq!(
            index_select("t", -1, &[2, 3], &[5]).unwrap(),
            (1, vec![2, 5])
        );
        let err = index_select("t", 0, &[2, 3], &[1, 5]).unwrap_err();
        assert_eq!(err.to_string(), "t: index must be 1-D, got shape [1, 5]");
        // The index shape is checked before the axis.
        assert!(matches!(
            index_select("t", 7, &[2, 3], &[]),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            index_select("t", 7, &[2, 3], &[2]),
            Err(Error::BadAxis { .. })
        ));
    }

    #[test]
    fn gather_index_fits_except_on_the_axis() {
        assert_eq!(gather("t", 1, &[2, 3], &[1, 9]).unwrap(), 1);
        assert!(matches!(
            gather("t", 1, &[2, 3], &[3, 1]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            gather("t", 0, &[2, 3], &[2]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            gather("t", 2, &[2, 3], &[2, 3]),
            Err(Error::BadAxis { .. })
        ));
    }

    #[test]
    fn one_hot_appends_the_classes() {
        assert_eq!(one_hot_shape(&[4], 3), vec![4, 3]);
        assert_eq!(one_hot_shape(&[], 2), vec![2]);
    }
}
