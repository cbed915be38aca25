//! Margin and soft-margin losses: `margin_ranking_loss`,
//! `hinge_embedding_loss`, `soft_margin_loss`, `multilabel_soft_margin_loss`.
//!
//! Each is composed as PyTorch computes it, so values, infinities, NaNs and
//! gradients at the kinks are PyTorch's: a hinge `max(0, v)` is a clamp at 0
//! whose gradient is 0 at `v = 0` and at NaN, as PyTorch 2.15's `clamp_min`.

use wgrad_autograd::autocast::full_precision;
use wgrad_autograd::{Tensor, is_grad_enabled};
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{Error, Result};

use super::{Reduction, plain_reduction};

/// `torch.nn.functional.margin_ranking_loss(input1, input2, target, margin,
/// reduction)` (PyTorch's default `margin = 0`): `max(0, -target * (input1 -
/// input2) + margin)`. The three must have the same number of dims (PyTorch's
/// error) and broadcast. `target` (usually +1/-1) gets a gradient too.
pub fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "margin_ranking_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x1, x2, t) = (
        full_precision(input1)?,
        full_precision(input2)?,
        full_precision(target)?,
    );
    if x1.rank() != x2.rank() || x1.rank() != t.rank() {
        return Err(Error::invalid(
            OP,
            format!(
                "All input tensors should have same dimension but got sizes: input1: {:?}, \
                 input2: {:?}, target: {:?}",
                x1.shape(),
                x2.shape(),
                t.shape()
            ),
        ));
    }
    let shape = broadcast_shapes(OP, &x1.shape(), &x2.shape())?;
    broadcast_shapes(OP, &shape, &t.shape())?;
    let losses = t
        .neg()?
        .mul(&x1.sub(&x2)?)?
        .add_scalar(margin)?
        .clamp(Some(0.0), None)?;
    reduction.apply(losses)
}

/// `torch.nn.functional.hinge_embedding_loss(input, target, margin,
/// reduction)` (PyTorch's default `margin = 1`): `input` where `target` is 1,
/// `max(0, margin - input)` where it is -1 (PyTorch's composition: a target
/// that is neither gets both terms). `input` and `target` broadcast.
pub fn hinge_embedding_loss(
    input: &Tensor,
    target: &Tensor,
    margin: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "hinge_embedding_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x, t) = (full_precision(input)?, full_precision(target)?);
    broadcast_shapes(OP, &x.shape(), &t.shape())?;
    let zero = Tensor::zeros(&[], &x.device())?;
    let margin_clamp = x
        .binary_scalar(wgrad_core::BinaryOp::Sub, margin, true)?
        .clamp(Some(0.0), None)?;
    let output_margin = Tensor::where_cond(&t.ne_scalar(1.0)?, &margin_clamp, &zero)?;
    let output_self = Tensor::where_cond(&t.ne_scalar(-1.0)?, &x, &zero)?;
    reduction.apply(output_margin.add(&output_self)?)
}

/// `torch.nn.functional.soft_margin_loss(input, target, reduction)`:
/// `log(1 + exp(-target * input))`, computed as PyTorch does (so it is
/// `inf`, with a NaN gradient, once `-target * input` passes about 88).
/// `target` must broadcast to `input`'s shape without enlarging it, and may
/// not require grad (PyTorch's errors).
pub fn soft_margin_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    const OP: &str = "soft_margin_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x, t) = (full_precision(input)?, full_precision(target)?);
    let shape = broadcast_shapes(OP, &x.shape(), &t.shape())?;
    if shape != x.shape() {
        return Err(Error::invalid(
            OP,
            format!(
                "output with shape {:?} doesn't match the broadcast shape {shape:?}",
                x.shape()
            ),
        ));
    }
    if t.requires_grad() && is_grad_enabled() {
        return Err(Error::invalid(
            OP,
            "The function 'soft_margin_loss' is not differentiable with respect to argument \
             'target'. This input cannot have requires_grad True.",
        ));
    }
    let losses = x.neg()?.mul(&t)?.exp()?.add_scalar(1.0)?.log()?;
    reduction.apply(losses)
}

/// `torch.nn.functional.multilabel_soft_margin_loss(input, target, weight,
/// reduction)`: `-(t log(sigmoid(x)) + (1 - t) log(sigmoid(-x)))`, times
/// `weight` (broadcast), summed over the class dim (`input`'s last) and
/// divided by its size: one loss per sample, then reduced. `target` and
/// `weight` broadcast; a 0-d input is PyTorch's error.
pub fn multilabel_soft_margin_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "multilabel_soft_margin_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x, t) = (full_precision(input)?, full_precision(target)?);
    if x.rank() == 0 {
        return Err(Error::BadAxis {
            op: OP,
            axis: -1,
            rank: 0,
        });
    }
    broadcast_shapes(OP, &x.shape(), &t.shape())?;
    let positive = t.mul(&log_sigmoid(&x)?)?;
    let negative = t
        .binary_scalar(wgrad_core::BinaryOp::Sub, 1.0, true)?
        .mul(&log_sigmoid(&x.neg()?)?)?;
    let mut losses = positive.add(&negative)?.neg()?;
    if let Some(w) = weight {
        let w = full_precision(w)?;
        broadcast_shapes(OP, &losses.shape(), &w.shape())?;
        losses = losses.mul(&w)?;
    }
    // PyTorch sums over dim `input.dim() - 1` of the (possibly broadcast,
    // larger) loss and divides by input's size there.
    let class_dim = x.rank() - 1;
    let classes = x.shape()[class_dim];
    let per_sample = losses
        .sum(&[class_dim as isize], false)?
        .div_scalar(classes as f32)?;
    reduction.apply(per_sample)
}

/// `log(sigmoid(x)) = -softplus(-x)` (`F.logsigmoid`), stable for large `|x|`.
fn log_sigmoid(x: &Tensor) -> Result<Tensor> {
    x.neg()?.softplus(1.0, 20.0)?.neg()
}
