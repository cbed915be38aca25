//! Regression losses: mean squared error, L1, smooth L1, Huber.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::{Error, Result};

use super::{Reduction, same_shape};

/// `(input - target)^2` reduced (`torch.nn.functional.mse_loss`).
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape("mse_loss", input, target)?;
    reduction.apply(input.sub(target)?.square()?)
}

/// `|input - target|` reduced (`torch.nn.functional.l1_loss`).
pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape("l1_loss", input, target)?;
    reduction.apply(input.sub(target)?.abs()?)
}

/// Smooth L1 (`torch.nn.functional.smooth_l1_loss`): with `d = |input -
/// target|`, `0.5 * d^2 / beta` where `d < beta` and `d - 0.5 * beta`
/// elsewhere; `beta = 0` is the L1 loss. torch's default `beta` is 1.
pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    beta: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape("smooth_l1_loss", input, target)?;
    if beta.is_nan() || beta < 0.0 {
        return Err(Error::invalid(
            "smooth_l1_loss",
            format!("beta must be >= 0, got {beta}"),
        ));
    }
    let d = input.sub(target)?.abs()?;
    if beta == 0.0 {
        return reduction.apply(d);
    }
    // The quadratic branch sees d clamped to beta, so it stays finite (and
    // its masked-out gradient 0, not 0 * inf) where d is infinite; PyTorch's
    // gradient there is sign(input - target).
    let quadratic = d
        .clamp(None, Some(beta))?
        .square()?
        .mul_scalar(0.5 / beta)?;
    let linear = d.sub_scalar(0.5 * beta)?;
    let losses = Tensor::where_cond(&d.lt_scalar(beta)?, &quadratic, &linear)?;
    reduction.apply(losses)
}

/// Huber loss (`torch.nn.functional.huber_loss`): with `d = |input -
/// target|`, `0.5 * d^2` where `d < delta` and `delta * (d - 0.5 * delta)`
/// elsewhere (`delta` times [`smooth_l1_loss`] with `beta = delta`).
/// torch's default `delta` is 1; it must be positive.
pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    delta: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape("huber_loss", input, target)?;
    if delta.is_nan() || delta <= 0.0 {
        return Err(Error::invalid(
            "huber_loss",
            format!("huber_loss does not support non-positive values for delta, got {delta}"),
        ));
    }
    let d = input.sub(target)?.abs()?;
    // Clamped as in smooth_l1_loss: finite where d is infinite.
    let quadratic = d.clamp(None, Some(delta))?.square()?.mul_scalar(0.5)?;
    let linear = d.sub_scalar(0.5 * delta)?.mul_scalar(delta)?;
    let losses = Tensor::where_cond(&d.lt_scalar(delta)?, &quadratic, &linear)?;
    reduction.apply(losses)
}
