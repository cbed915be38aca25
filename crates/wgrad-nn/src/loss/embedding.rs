//! Embedding losses over pairs and triplets of vectors:
//! `cosine_embedding_loss` and `triplet_margin_loss`.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{Error, Result};

use super::{Reduction, plain_reduction};
use crate::pairwise_distance;

/// PyTorch's `EPSILON` in `cosine_embedding_loss`, added to each squared
/// magnitude.
const EPSILON: f32 = 1e-12;

/// `torch.nn.functional.cosine_embedding_loss(input1, input2, target, margin,
/// reduction)` (PyTorch's default `margin = 0`): with `cos = x1 . x2 /
/// sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))` per row, `1 - cos` where
/// `target` is 1 and `max(0, cos - margin)` where it is -1 (0 elsewhere).
/// Inputs `[N, D]` with target `[N]`, or `[D]` with a 0-d target (PyTorch's
/// errors otherwise); the inputs broadcast against each other.
pub fn cosine_embedding_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "cosine_embedding_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x1, x2, t) = (
        full_precision(input1)?,
        full_precision(input2)?,
        full_precision(target)?,
    );
    let targ_dim = t.rank();
    if targ_dim > 1 {
        return Err(Error::invalid(
            OP,
            "0D or 1D target tensor expected, multi-target not supported",
        ));
    }
    if x1.rank() != targ_dim + 1 || x2.rank() != targ_dim + 1 {
        return Err(Error::invalid(
            OP,
            format!(
                "{targ_dim}D target tensor expects {}D input tensors, but found inputs with \
                 sizes {:?} and {:?}.",
                targ_dim + 1,
                x1.shape(),
                x2.shape()
            ),
        ));
    }
    let shape = broadcast_shapes(OP, &x1.shape(), &x2.shape())?;
    broadcast_shapes(OP, &shape[..targ_dim], &t.shape())?;
    let dim = [targ_dim as isize];
    let prod_sum = x1.mul(&x2)?.sum(&dim, false)?;
    let mag_square1 = x1.mul(&x1)?.sum(&dim, false)?.add_scalar(EPSILON)?;
    let mag_square2 = x2.mul(&x2)?.sum(&dim, false)?.add_scalar(EPSILON)?;
    let denom = mag_square1.mul(&mag_square2)?.sqrt()?;
    let cos = prod_sum.div(&denom)?;
    let zero = Tensor::zeros(&[], &cos.device())?;
    let pos = cos.binary_scalar(wgrad_core::BinaryOp::Sub, 1.0, true)?;
    let neg = cos.sub_scalar(margin)?.clamp(Some(0.0), None)?;
    let output_pos = Tensor::where_cond(&t.eq_scalar(1.0)?, &pos, &zero)?;
    let output_neg = Tensor::where_cond(&t.eq_scalar(-1.0)?, &neg, &zero)?;
    reduction.apply(output_pos.add(&output_neg)?)
}

/// `torch.nn.functional.triplet_margin_loss(anchor, positive, negative,
/// margin, p, eps, swap, reduction)` (PyTorch's defaults `margin = 1`, `p =
/// 2`, `eps = 1e-6`, `swap = false`): `max(d(a, p) - d(a, n) + margin, 0)`
/// with `d` [`pairwise_distance`]'s (`eps` added to the difference) over the
/// last dim; with `swap`, `d(a, n)` is `min(d(a, n), d(p, n))` (ties split
/// the gradient, as `torch.min`). The three must have the same number of
/// dims and broadcast; `margin` must be positive (PyTorch's errors).
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f32,
    p: f32,
    eps: f32,
    swap: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "triplet_margin_loss";
    let reduction = plain_reduction(OP, reduction)?;
    // NaN passes, as Python's `margin <= 0` test lets it.
    if margin <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("margin must be greater than 0, got {margin:?}"),
        ));
    }
    let (a, pos, neg) = (
        full_precision(anchor)?,
        full_precision(positive)?,
        full_precision(negative)?,
    );
    if a.rank() != pos.rank() || pos.rank() != neg.rank() {
        return Err(Error::invalid(
            OP,
            format!(
                "The anchor, positive, and negative tensors are expected to have the same \
                 number of dimensions, but got: anchor {}D, positive {}D, and negative {}D inputs",
                a.rank(),
                pos.rank(),
                neg.rank()
            ),
        ));
    }
    let shape = broadcast_shapes(OP, &a.shape(), &pos.shape())?;
    broadcast_shapes(OP, &shape, &neg.shape())?;
    let dist_pos = pairwise_distance(&a, &pos, p, eps, false)?;
    let mut dist_neg = pairwise_distance(&a, &neg, p, eps, false)?;
    if swap {
        let dist_swap = pairwise_distance(&pos, &neg, p, eps, false)?;
        dist_neg = dist_neg.minimum(&dist_swap)?;
    }
    let losses = dist_pos
        .add_scalar(margin)?
        .sub(&dist_neg)?
        .clamp(Some(0.0), None)?;
    reduction.apply(losses)
}
