//! `layer_norm` (`torch.nn.functional.layer_norm`): the operand checks and
//! the row geometry both backends use.
//!
//! The input is viewed as `rows x cols` with `cols` the product of
//! `normalized_shape` (its trailing dims); each row is normalised by its
//! own mean and biased variance, `y = (x - mean) / sqrt(var + eps)`, then
//! scaled by `weight` and shifted by `bias` (each of `normalized_shape`,
//! both optional). The forward also gives each row's mean and
//! `rstd = 1 / sqrt(var + eps)`, which the backward reuses.

use crate::{DType, Error, Result};

/// The op's name in errors.
pub const OP: &str = "layer_norm";

/// Rows, row length and epsilon of one `layer_norm` call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNormGeometry {
    /// Product of the dims before `normalized_shape`.
    pub rows: usize,
    /// Product of `normalized_shape`: the elements each row normalises.
    pub cols: usize,
    /// Added to the variance.
    pub eps: f32,
    /// Number of normalised (trailing) dims: the weight's, bias's and
    /// their gradients' rank.
    pub normalized_rank: usize,
}

/// Checks `layer_norm(x, normalized_shape, weight, bias, eps)` (dtypes
/// and shapes; `weight`/`bias` as `(shape, dtype)`) and gives its geometry.
pub fn layer_norm(
    x: (&[usize], DType),
    normalized_shape: &[usize],
    weight: Option<(&[usize], DType)>,
    bias: Option<(&[usize], DType)>,
    eps: f32,
) -> Result<LayerNormGeometry> {
    let (shape, dtype) = x;
    super::expect_float(OP, dtype)?;
    if normalized_shape.is_empty() {
        return Err(Error::invalid(
            OP,
            "normalized_shape must have at least one dim",
        ));
    }
    let k = normalized_shape.len();
    if shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
        return Err(Error::invalid(
            OP,
            format!(
                "normalized_shape {normalized_shape:?} must be the trailing dims of the \
                 input, whose shape is {shape:?}"
            ),
        ));
    }
    for (what, operand) in [("weight", weight), ("bias", bias)] {
        if let Some((s, d)) = operand {
            super::expect_float(OP, d)?;
            if s != normalized_shape {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{what} has shape {s:?}; it must be normalized_shape {normalized_shape:?}"
                    ),
                ));
            }
        }
    }
    if eps.is_nan() {
        return Err(Error::invalid(OP, "eps is NaN"));
    }
    let cols: usize = normalized_shape.iter().product();
    let rows: usize = shape[..shape.len() - k].iter().product();
    Ok(LayerNormGeometry {
        rows,
        cols,
        eps,
        normalized_rank: k,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_and_errors() {
        let f = DType::F32;
        let g = layer_norm((&[2, 3, 4], f), &[4], Some((&[4], f)), None, 1e-5).unwrap();
        assert_eq!((g.rows, g.cols), (6, 4));
        let g = layer_norm((&[2, 3, 4], f), &[3, 4], None, None, 1e-5).unwrap();
        assert_eq!((g.rows, g.cols), (2, 12));
        let g = layer_norm((&[4], f), &[4], None, None, 0.0).unwrap();
        assert_eq!((g.rows, g.cols), (1, 4));
        let err = |r: Result<LayerNormGeometry>| r.unwrap_err().to_string();
        assert!(err(layer_norm((&[2, 3], f), &[2], None, None, 1e-5)).contains("trailing dims"));
        assert!(err(layer_norm((&[2, 3], f), &[], None, None, 1e-5)).contains("at least one"));
        let e = err(layer_norm((&[2, 3], f), &[3], None, Some((&[2], f)), 1e-5));
        assert!(e.contains("bias has shape [2]"), "{e}");
        assert!(err(layer_norm((&[2, 3], DType::I32), &[3], None, None, 1e-5)).contains("int32"));
        assert!(err(layer_norm((&[2, 3], f), &[3], None, None, f32::NAN)).contains("NaN"));
    }
}
