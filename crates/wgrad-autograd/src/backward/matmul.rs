//! The backward rule of `matmul_t` (`torch.matmul`).

use wgrad_core::Result;

use super::Saved;
use crate::storage::Storage;

/// The gradients of `op(a) @ op(b)` (`op` transposes the last two dims when
/// its flag is set) for the inputs that need one. Each product runs only
/// for an input that requires grad (a data operand's would be a whole
/// wasted GEMM), reading only the saved operand it uses.
///
/// A matrix `b` under a batch of `a`s (`x[B, T, C] @ w[C, D]`) gets its
/// gradient from one product over the folded rows, as PyTorch folds that
/// call into one `mm`: one GEMM accumulating every row in f32, where a
/// batched product and a sum over the batch would round each batch's
/// product first (to F16/BF16 for half operands, where the sum of rounded
/// terms can cancel to a different value).
pub(super) fn matmul_t_grads(
    g: &Storage,
    saved: &Saved,
    need: [bool; 2],
    trans_a: bool,
    trans_b: bool,
) -> Result<Vec<Option<Storage>>> {
    let (ta, tb) = (trans_a, trans_b);
    let x = |i: usize| saved.input(i);
    let (shape_a, shape_b) = (saved.shape(0), saved.shape(1));
    let ga = if !need[0] {
        None
    } else if ta {
        Some(x(1)?.matmul_t(g, tb, true)?)
    } else {
        Some(g.matmul_t(&x(1)?, false, !tb)?)
    };
    let fold_b = !ta && shape_b.len() == 2 && shape_a.len() > 2;
    let gb = if !need[1] {
        None
    } else if fold_b {
        let k = shape_a[shape_a.len() - 1] as isize;
        let n = g.shape()[g.shape().len() - 1] as isize;
        // The folded row count spelled out: -1 cannot be inferred when a
        // dim is 0 (x[1, 0, C] @ w[C, 0]).
        let rows = shape_a[..shape_a.len() - 1].iter().product::<usize>() as isize;
        let a = x(0)?.reshape(&[rows, k])?;
        let g = g.reshape(&[rows, n])?;
        Some(if tb {
            g.matmul_t(&a, true, false)?
        } else {
            a.matmul_t(&g, true, false)?
        })
    } else if tb {
        Some(g.matmul_t(&x(0)?, true, ta)?)
    } else {
        Some(x(0)?.matmul_t(g, !ta, false)?)
    };
    Ok(vec![
        ga.map(|ga| ga.sum_to_shape(&shape_a)).transpose()?,
        gb.map(|gb| gb.sum_to_shape(&shape_b)).transpose()?,
    ])
}
