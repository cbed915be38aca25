//! `matmul` / `matmul_t`: operand ranks, the contracted dim, the batch
//! broadcast and the output shape (PyTorch `torch.matmul` semantics).

use crate::shape::broadcast_shapes;
use crate::{Error, Layout, Result};

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
