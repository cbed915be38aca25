//! Shape arithmetic: element counts, contiguous strides, broadcasting, axes.

use crate::{Error, MAX_RANK, Result};

/// Number of elements of a shape (1 for a scalar, 0 if any dim is 0).
///
/// Only for shapes already known to be valid (those of existing tensors);
/// a user-given shape goes through [`checked_numel`] first.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Element count of a user-given shape: the one place shape arithmetic is
/// checked, so that a shape whose product overflows is an error on every
/// device (never a wrapped count or a debug-build panic). Also rejects ranks
/// above [`MAX_RANK`].
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    check_rank(op, shape)?;
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            Error::invalid(
                op,
                format!("shape {shape:?} has more elements than fit in a usize"),
            )
        })
}

/// Bytes a contiguous tensor of `shape` with `elem_size`-byte elements needs,
/// checked like [`checked_numel`].
pub fn checked_bytes(op: &'static str, shape: &[usize], elem_size: usize) -> Result<u64> {
    let n = checked_numel(op, shape)?;
    n.checked_mul(elem_size)
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| {
            Error::invalid(
                op,
                format!(
                    "shape {shape:?} ({n} elements of {elem_size} bytes) overflows a byte count"
                ),
            )
        })
}

/// Row-major (C order) strides, in elements, for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = acc;
        acc *= dim.max(1);
    }
    strides
}

/// Checks that `shape` has at most [`MAX_RANK`] dims.
pub fn check_rank(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.len() > MAX_RANK {
        return Err(Error::invalid(
            op,
            format!(
                "rank {} ({shape:?}) exceeds the supported maximum of {MAX_RANK}",
                shape.len()
            ),
        ));
    }
    Ok(())
}

/// NumPy/PyTorch broadcasting of two shapes: align on the right; each pair of
/// dims must be equal or one of them 1.
pub fn broadcast_shapes(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
    let rank = lhs.len().max(rhs.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let l = if i < rank - lhs.len() {
            1
        } else {
            lhs[i - (rank - lhs.len())]
        };
        let r = if i < rank - rhs.len() {
            1
        } else {
            rhs[i - (rank - rhs.len())]
        };
        out[i] = match (l, r) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: lhs.to_vec(),
                    rhs: rhs.to_vec(),
                });
            }
        };
    }
    check_rank(op, &out)?;
    Ok(out)
}

/// Strides that view a tensor of `shape`/`strides` as `target` (broadcast
/// dims get stride 0). Fails if `shape` cannot broadcast to `target`.
pub fn broadcast_strides(
    op: &'static str,
    shape: &[usize],
    strides: &[usize],
    target: &[usize],
) -> Result<Vec<usize>> {
    if shape.len() > target.len() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: shape.to_vec(),
            rhs: target.to_vec(),
        });
    }
    let lead = target.len() - shape.len();
    let mut out = vec![0; target.len()];
    for (i, &t) in target.iter().enumerate().skip(lead) {
        let (dim, stride) = (shape[i - lead], strides[i - lead]);
        out[i] = if dim == t {
            stride
        } else if dim == 1 {
            0
        } else {
            return Err(Error::ShapeMismatch {
                op,
                lhs: shape.to_vec(),
                rhs: target.to_vec(),
            });
        };
    }
    Ok(out)
}

/// Whether `axis` names the one implicit dim of a 0-d tensor: PyTorch lets a
/// scalar take dim `0` or `-1` in every op that takes a dim (reductions,
/// softmax, argmax, squeeze, transpose), treating it as one dim of size 1.
pub fn is_scalar_axis(axis: isize, rank: usize) -> bool {
    rank == 0 && (axis == 0 || axis == -1)
}

/// Maps a possibly negative axis (`-1` = last) into `0..rank`.
pub fn normalize_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(Error::BadAxis { op, axis, rank });
    }
    Ok(a as usize)
}

/// Normalises a list of axes; an empty list means "all axes". Duplicates are an error.
/// A 0-d tensor accepts `0` and `-1` (see [`is_scalar_axis`]); reducing over
/// that implicit dim reduces over nothing, so they normalise to no axes.
pub fn normalize_axes(op: &'static str, axes: &[isize], rank: usize) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..rank).collect());
    }
    if rank == 0 {
        if let Some(&bad) = axes.iter().find(|&&a| !is_scalar_axis(a, 0)) {
            return Err(Error::BadAxis {
                op,
                axis: bad,
                rank,
            });
        }
        if axes.len() > 1 {
            return Err(Error::invalid(
                op,
                format!("axis {} is given more than once in {axes:?}", axes[1]),
            ));
        }
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(axes.len());
    for &axis in axes {
        let a = normalize_axis(op, axis, rank)?;
        if out.contains(&a) {
            return Err(Error::invalid(
                op,
                format!("axis {axis} is given more than once in {axes:?}"),
            ));
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}

/// Shape after reducing `axes` (sorted, normalised), keeping them as size 1 if `keepdim`.
pub fn reduced_shape(shape: &[usize], axes: &[usize], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keepdim) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Resolves a reshape target that may contain one `-1` against `numel`.
pub fn infer_reshape(op: &'static str, from: &[usize], to: &[isize]) -> Result<Vec<usize>> {
    let total = numel(from);
    let mut unknown = None;
    let mut known = 1usize;
    let too_many = || {
        Error::invalid(
            op,
            format!("cannot reshape {from:?} ({total} elements) into {to:?}: too many elements"),
        )
    };
    for (i, &d) in to.iter().enumerate() {
        match d {
            -1 if unknown.is_none() => unknown = Some(i),
            d if d >= 0 => known = known.checked_mul(d as usize).ok_or_else(too_many)?,
            _ => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "invalid target shape {to:?}: only one -1 allowed and no other negatives"
                    ),
                ));
            }
        }
    }
    let mut out: Vec<usize> = to.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = unknown {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(Error::invalid(
                op,
                format!("cannot reshape {from:?} ({total} elements) into {to:?}"),
            ));
        }
        out[i] = total / known;
    }
    if numel(&out) != total {
        return Err(Error::invalid(
            op,
            format!("cannot reshape {from:?} ({total} elements) into {to:?}"),
        ));
    }
    check_rank(op, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_aligns_on_the_right() {
        assert_eq!(
            broadcast_shapes("t", &[3, 1, 5], &[4, 1]).unwrap(),
            vec![3, 4, 5]
        );
        assert_eq!(broadcast_shapes("t", &[], &[2]).unwrap(), vec![2]);
        assert_eq!(broadcast_shapes("t", &[0, 1], &[1, 3]).unwrap(), vec![0, 3]);
    }

    #[test]
    fn broadcast_mismatch_names_both_shapes() {
        let err = broadcast_shapes("add", &[2, 3], &[4])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[2, 3]") && err.contains("[4]") && err.contains("add"),
            "{err}"
        );
    }

    #[test]
    fn axes_wrap_and_reject() {
        assert_eq!(normalize_axis("t", -1, 3).unwrap(), 2);
        assert!(normalize_axis("t", 3, 3).is_err());
        assert!(normalize_axes("t", &[0, -3], 3).is_err());
        assert_eq!(normalize_axes("t", &[], 2).unwrap(), vec![0, 1]);
    }

    #[test]
    fn reshape_infers_one_dim() {
        assert_eq!(infer_reshape("t", &[2, 6], &[-1, 3]).unwrap(), vec![4, 3]);
        assert!(infer_reshape("t", &[2, 6], &[5, -1]).is_err());
        assert!(infer_reshape("t", &[2, 6], &[-1, -1]).is_err());
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]), Vec::<usize>::new());
    }
}
