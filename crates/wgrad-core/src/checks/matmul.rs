//! `matmul` / `matmul_t`: operand ranks, the contracted dim, the batch
//! broadcast and the output shape (PyTorch `torch.matmul` semantics); and
//! `linear` (`F.linear`, a product with a bias row): its shapes, dtypes and
//! the matrix its input is multiplied as.

use crate::shape::broadcast_shapes;
use crate::{DType, Error, Layout, Result};

/// The shapes of one `matmul`: `[batch.., m, k] @ [batch.., k, n]` after
/// promoting 1-D operands and broadcasting the batch dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulShape {
    /// The broadcast batch dims (empty for a plain matrix product).
    pub batch: Vec<usize>,
    /// Rows of the left operand and of the result (1 for a 1-D left operand).
    pub m: usize,
    /// The contracted dim: columns of the left operand, rows of the right.
    pub k: usize,
    /// Columns of the right operand and of the result (1 for a 1-D right operand).
    pub n: usize,
    /// The result's shape: `batch`, then `m` unless the left operand was
    /// 1-D, then `n` unless the right operand was 1-D.
    pub out: Vec<usize>,
}

impl MatmulShape {
    /// `batch` followed by `rows, cols` (the shape an operand or the
    /// un-squeezed result is expanded to).
    pub fn batched(&self, rows: usize, cols: usize) -> Vec<usize> {
        let mut dims = self.batch.clone();
        dims.extend([rows, cols]);
        dims
    }
}

/// Checks `lhs @ rhs` and returns its shapes. A 1-D operand is promoted to a
/// matrix (`[k]` -> `[1, k]` on the left, `[k, 1]` on the right) and the
/// added dim is left out of `out`; leading (batch) dims broadcast. A
/// contracted-dim or batch mismatch is `ShapeMismatch` naming both operands.
pub fn matmul(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Result<MatmulShape> {
    let mismatch = || Error::ShapeMismatch {
        op,
        lhs: lhs.to_vec(),
        rhs: rhs.to_vec(),
    };
    if lhs.is_empty() || rhs.is_empty() {
        return Err(Error::invalid(
            op,
            format!("both operands need at least 1 dim, got shapes {lhs:?} and {rhs:?}"),
        ));
    }
    let (a_batch, m, k) = match lhs {
        [k] => (&[][..], 1, *k),
        [batch @ .., m, k] => (batch, *m, *k),
        [] => return Err(mismatch()),
    };
    let (b_batch, k2, n) = match rhs {
        [k] => (&[][..], *k, 1),
        [batch @ .., k, n] => (batch, *k, *n),
        [] => return Err(mismatch()),
    };
    if k != k2 {
        return Err(mismatch());
    }
    let batch = broadcast_shapes(op, a_batch, b_batch).map_err(|_| mismatch())?;
    let mut out = batch.clone();
    if lhs.len() > 1 {
        out.push(m);
    }
    if rhs.len() > 1 {
        out.push(n);
    }
    Ok(MatmulShape {
        batch,
        m,
        k,
        n,
        out,
    })
}

/// Error unless an operand of `shape` can have its last two dims swapped
/// (`matmul_t`'s `trans_a` / `trans_b`): it needs at least 2 dims.
pub fn transposable(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.len() < 2 {
        return Err(Error::invalid(
            op,
            format!("cannot transpose an operand of shape {shape:?}: it needs at least 2 dims"),
        ));
    }
    Ok(())
}

/// The layout of a `matmul_t` operand: `layout` with its last two dims
/// swapped when `on` (a free view; see [`transposable`]), else unchanged.
pub fn operand_layout(op: &'static str, layout: &Layout, on: bool) -> Result<Layout> {
    if !on {
        return Ok(layout.clone());
    }
    transposable(op, layout.shape())?;
    layout.transpose(-1, -2)
}

/// The shapes of one `linear` (`F.linear(x, weight, bias)`): `x` `[..., k]`
/// times `weight^T` (`weight` `[n, k]`) plus `bias` on every row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearShape {
    /// `in_features`: the last dim of `x` and of `weight`.
    pub k: usize,
    /// `out_features`: the rows of `weight`, the last dim of the result.
    pub n: usize,
    /// The result's shape: the leading dims of `x`, then `n` (`[n]` for a
    /// 1-D `x`).
    pub out: Vec<usize>,
}

/// Checks `F.linear(x, weight, bias)` and returns its shapes: `x` has at
/// least 1 dim, the last of which is `weight`'s `in_features`; `weight` is
/// 2-D `[out_features, in_features]`; `bias`, when given, is
/// `[out_features]` or a single value (`[1]` or 0-d) that broadcasts over
/// it, as PyTorch's addmm takes it. Errors name the op and the shapes.
pub fn linear(
    op: &'static str,
    x: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
) -> Result<LinearShape> {
    let [n, k] = *weight else {
        return Err(Error::invalid(
            op,
            format!("weight must be 2-D [out_features, in_features], got shape {weight:?}"),
        ));
    };
    let Some((&in_x, lead)) = x.split_last() else {
        return Err(Error::invalid(
            op,
            "input must have at least 1 dim (in_features last), got a 0-d tensor",
        ));
    };
    if in_x != k {
        return Err(Error::invalid(
            op,
            format!(
                "input {x:?} and weight {weight:?} cannot be multiplied: the input's last dim is \
                 {in_x}, the weight's in_features (dim 1) is {k}"
            ),
        ));
    }
    if let Some(b) = bias
        && !(b == [n] || b == [1] || b.is_empty())
    {
        return Err(Error::invalid(
            op,
            format!("bias must have shape [{n}] (out_features of weight {weight:?}), got {b:?}"),
        ));
    }
    let mut out = lead.to_vec();
    out.push(n);
    Ok(LinearShape { k, n, out })
}

/// Error unless the operands of `linear` share one floating-point dtype,
/// as PyTorch's addmm requires (it does not promote `x` and `weight`): an
/// integer or mask operand is `DTypeMismatch` (F32 expected), mixed float
/// dtypes an error listing all three.
pub fn linear_dtypes(op: &'static str, x: DType, weight: DType, bias: Option<DType>) -> Result<()> {
    let all = [Some(x), Some(weight), bias];
    if let Some(&got) = all.iter().flatten().find(|d| !d.is_float()) {
        return Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got,
        });
    }
    if all.iter().flatten().any(|&d| d != x) {
        let names: Vec<String> = all.iter().flatten().map(|d| d.to_string()).collect();
        return Err(Error::invalid(
            op,
            format!(
                "input, weight and bias must have the same dtype, got {}",
                names.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The matrix `linear` multiplies for an input of layout `x` (`[..., k]`):
/// one `[rows, k]` matrix of every row where `x`'s leading dims merge as a
/// view (always for a contiguous `x`; `[1, k]` for a 1-D one), else `x`
/// itself, its leading dims a batch that the weight broadcasts over. Either
/// way no input is copied, and the product's contiguous result has the
/// elements of `[..., n]` in order.
pub fn linear_input(x: &Layout) -> Result<Layout> {
    let Some((&k, lead)) = x.shape().split_last() else {
        return Err(Error::invalid(
            "linear",
            "input must have at least 1 dim, got a 0-d tensor",
        ));
    };
    match lead.len() {
        0 => x.unsqueeze(0),
        1 => Ok(x.clone()),
        _ => {
            let rows: usize = lead.iter().product();
            let folded = x.reshape(&[rows as isize, k as isize])?;
            Ok(folded.unwrap_or_else(|| x.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_promoted_and_squeezed() {
        let s = matmul("t", &[3], &[3]).unwrap();
        assert_eq!((s.m, s.k, s.n), (1, 3, 1));
        assert!(s.out.is_empty());
        assert_eq!(matmul("t", &[3], &[3, 4]).unwrap().out, vec![4]);
        assert_eq!(matmul("t", &[2, 3], &[3]).unwrap().out, vec![2]);
    }

    #[test]
    fn batch_dims_broadcast() {
        let s = matmul("t", &[5, 1, 2, 3], &[4, 3, 6]).unwrap();
        assert_eq!(s.batch, vec![5, 4]);
        assert_eq!(s.out, vec![5, 4, 2, 6]);
        assert_eq!(s.batched(s.m, s.k), vec![5, 4, 2, 3]);
        let s = matmul("t", &[2, 3], &[7, 3, 1]).unwrap();
        assert_eq!(s.out, vec![7, 2, 1]);
    }

    #[test]
    fn mismatches_name_both_operands() {
        let Err(Error::ShapeMismatch { op, lhs, rhs }) = matmul("t", &[2, 3], &[4, 5]) else {
            panic!("expected ShapeMismatch");
        };
        assert_eq!((op, lhs, rhs), ("t", vec![2, 3], vec![4, 5]));
        // A batch mismatch reports the operands, not the batch dims.
        let Err(Error::ShapeMismatch { lhs, rhs, .. }) = matmul("t", &[2, 1, 3], &[3, 3, 1]) else {
            panic!("expected ShapeMismatch");
        };
        assert_eq!((lhs, rhs), (vec![2, 1, 3], vec![3, 3, 1]));
        assert_eq!(
            matmul("t", &[], &[3]).unwrap_err().to_string(),
            "t: both operands need at least 1 dim, got shapes [] and [3]"
        );
    }

    #[test]
    fn linear_shapes_and_errors() {
        let s = linear("linear", &[2, 5, 3], &[4, 3], Some(&[4])).unwrap();
        assert_eq!((s.k, s.n, s.out), (3, 4, vec![2, 5, 4]));
        assert_eq!(linear("linear", &[3], &[4, 3], None).unwrap().out, vec![4]);
        assert_eq!(
            linear("linear", &[0, 3], &[4, 3], Some(&[1])).unwrap().out,
            vec![0, 4]
        );
        assert!(linear("linear", &[2, 3], &[4, 3], Some(&[])).is_ok());
        let err = |x: &[usize], w: &[usize], b: Option<&[usize]>| {
            linear("linear", x, w, b).unwrap_err().to_string()
        };
        assert_eq!(
            err(&[2, 3], &[4, 5], None),
            "linear: input [2, 3] and weight [4, 5] cannot be multiplied: the input's last dim \
             is 3, the weight's in_features (dim 1) is 5"
        );
        assert_eq!(
            err(&[2, 3], &[4, 3], Some(&[5])),
            "linear: bias must have shape [4] (out_features of weight [4, 3]), got [5]"
        );
        assert!(err(&[2, 3], &[3], None).contains("weight must be 2-D"));
        assert!(err(&[], &[4, 3], None).contains("0-d"));
        assert!(err(&[2, 3], &[4, 3], Some(&[2, 4])).contains("bias must have shape [4]"));
    }

    #[test]
    fn linear_dtypes_must_agree() {
        use DType::*;
        assert!(linear_dtypes("linear", F16, F16, Some(F16)).is_ok());
        assert!(linear_dtypes("linear", BF16, BF16, None).is_ok());
        assert_eq!(
            linear_dtypes("linear", F32, F16, Some(F32))
                .unwrap_err()
                .to_string(),
            "linear: input, weight and bias must have the same dtype, got float32, float16, float32"
        );
        assert!(matches!(
            linear_dtypes("linear", F32, F32, Some(I32)),
            Err(Error::DTypeMismatch { got: I32, .. })
        ));
    }

    #[test]
    fn linear_input_folds_rows_where_a_view_can() {
        let x = Layout::contiguous(&[2, 5, 3]);
        let a = linear_input(&x).unwrap();
        assert_eq!((a.shape(), a.strides()), (&[10, 3][..], &[3, 1][..]));
        let v = linear_input(&Layout::contiguous(&[3])).unwrap();
        assert_eq!(v.shape(), &[1, 3]);
        // [5, 2, 3] stored as [2, 5, 3]: the rows do not merge, so x stays batched.
        let p = x.transpose(0, 1).unwrap();
        assert_eq!(linear_input(&p).unwrap(), p);
        // A transposed 2-D input is read through its strides.
        let t = Layout::contiguous(&[3, 4]).transpose(0, 1).unwrap();
        assert_eq!(linear_input(&t).unwrap(), t);
    }

    #[test]
    fn transposing_needs_two_dims() {
        assert!(transposable("t", &[2, 3]).is_ok());
        let l = Layout::contiguous(&[4, 2, 3]);
        assert_eq!(operand_layout("t", &l, false).unwrap(), l);
        let t = operand_layout("t", &l, true).unwrap();
        assert_eq!((t.shape(), t.strides()), (&[4, 3, 2][..], &[6, 1, 3][..]));
        assert!(operand_layout("t", &Layout::contiguous(&[3]), true).is_err());
        assert!(operand_layout("t", &Layout::contiguous(&[3]), false).is_ok());
        assert_eq!(
            transposable("t", &[3]).unwrap_err().to_string(),
            "t: cannot transpose an operand of shape [3]: it needs at least 2 dims"
        );
    }
}
