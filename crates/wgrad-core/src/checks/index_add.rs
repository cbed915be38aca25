//! `index_add` and `scatter_add` (the backward of `index_select` and
//! `gather`): axes and the shapes of base, index and src.

use super::fits_except;
use super::indexing::index_1d;
use crate::shape::{normalize_axis, numel};
use crate::{Error, Result};

/// `base.index_add(axis, index, src)`: `index` is 1-D with one entry per
/// slice of `src` along `axis`, and `src` has the base's shape except on
/// `axis`. Returns the normalised axis.
pub fn index_add(
    op: &'static str,
    axis: isize,
    base: &[usize],
    index: &[usize],
    src: &[usize],
) -> Result<usize> {
    let a = normalize_axis(op, axis, base.len())?;
    index_1d(op, index)?;
    if !fits_except(src, base, a, true) {
        return Err(Error::ShapeMismatch {
            op,
            lhs: base.to_vec(),
            rhs: src.to_vec(),
        });
    }
    if numel(index) != src[a] {
        return Err(Error::invalid(
            op,
            format!(
                "index of shape {index:?} needs one entry per slice of src {src:?} along axis {axis}"
            ),
        ));
    }
    Ok(a)
}

/// `base.scatter_add(axis, index, src)`: base, index and src share one
/// rank; the index is no larger than src on any axis and no larger than the
/// base on the others. Returns the normalised axis.
pub fn scatter_add(
    op: &'static str,
    axis: isize,
    base: &[usize],
    index: &[usize],
    src: &[usize],
) -> Result<usize> {
    let a = normalize_axis(op, axis, base.len())?;
    let rank = base.len();
    if src.len() != rank {
        return Err(Error::ShapeMismatch {
            op,
            lhs: base.to_vec(),
            rhs: src.to_vec(),
        });
    }
    let fits = index.len() == rank
        && (0..rank).all(|d| index[d] <= src[d] && (d == a || index[d] <= base[d]));
    if !fits {
        return Err(Error::invalid(
            op,
            format!(
                "index of shape {index:?} must have the rank of base {base:?} and src {src:?}, be no larger than src, and no larger than base except on axis {axis}"
            ),
        ));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_add_checks_in_order() {
        assert_eq!(index_add("t", -2, &[5, 3], &[4], &[4, 3]).unwrap(), 0);
        assert!(matches!(
            index_add("t", 2, &[5, 3], &[4, 1], &[4, 3]),
            Err(Error::BadAxis { .. })
        ));
        assert_eq!(
            index_add("t", 0, &[5, 3], &[4, 1], &[4, 3])
                .unwrap_err()
                .to_string(),
            "t: index must be 1-D, got shape [4, 1]"
        );
        assert!(matches!(
            index_add("t", 0, &[5, 3], &[4], &[4, 2]),
            Err(Error::ShapeMismatch { .. })
        ));
        assert_eq!(
            index_add("t", 0, &[5, 3], &[3], &[4, 3])
                .unwrap_err()
                .to_string(),
            "t: index of shape [3] needs one entry per slice of src [4, 3] along axis 0"
        );
    }

    #[test]
    fn scatter_add_index_is_bounded_by_src_and_base() {
        assert_eq!(scatter_add("t", 1, &[2, 3], &[2, 5], &[2, 6]).unwrap(), 1);
        assert!(matches!(
            scatter_add("t", 1, &[2, 3], &[2, 5], &[2]),
            Err(Error::ShapeMismatch { .. })
        ));
        // Larger than src.
        assert!(matches!(
            scatter_add("t", 1, &[2, 3], &[2, 7], &[2, 6]),
            Err(Error::InvalidArgument { .. })
        ));
        // Larger than base off the axis.
        let err = scatter_add("t", 1, &[2, 3], &[3, 1], &[3, 6]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: index of shape [3, 1] must have the rank of base [2, 3] and src [3, 6], be no larger than src, and no larger than base except on axis 1"
        );
    }
}
