//! Negative log-likelihood losses of distributions: `poisson_nll_loss` and
//! `gaussian_nll_loss`.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{DType, Error, Result};

use super::{Reduction, plain_reduction};
use crate::distance::clamp_min_straight_through;

/// `torch.nn.functional.poisson_nll_loss(input, target, log_input, full, eps,
/// reduction)` (PyTorch's defaults `log_input = true`, `full = false`, `eps =
/// 1e-8`): `exp(input) - target * input` when `input` is the log of the
/// rate, else `input - target * log(input + eps)`; with `full`, plus the
/// Stirling term `t log(t) - t + 0.5 log(2 pi t)` where `target > 1`.
/// `input` and `target` broadcast; `target` gets a gradient too.
pub fn poisson_nll_loss(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "poisson_nll_loss";
    let reduction = plain_reduction(OP, reduction)?;
    let (x, t) = (full_precision(input)?, full_precision(target)?);
    broadcast_shapes(OP, &x.shape(), &t.shape())?;
    let mut losses = if log_input {
        x.exp()?.sub(&t.mul(&x)?)?
    } else {
        x.sub(&t.mul(&x.add_scalar(eps)?.log()?)?)?
    };
    if full {
        let two_pi = (2.0 * std::f64::consts::PI) as f32;
        let stirling = t
            .mul(&t.log()?)?
            .sub(&t)?
            .add(&t.mul_scalar(two_pi)?.log()?.mul_scalar(0.5)?)?;
        let zero = Tensor::zeros(&[], &t.device())?;
        let masked = Tensor::where_cond(&t.le_scalar(1.0)?, &zero, &stirling)?;
        losses = losses.add(&masked)?;
    }
    reduction.apply(losses)
}

/// The variance of [`gaussian_nll_loss`]: PyTorch's `var` is a tensor or a
/// Python float, which behave differently (a float is taken for every
/// element of `input`; a 0-d tensor must fit the shape rules).
#[derive(Clone, Copy, Debug)]
pub enum Variance<'a> {
    /// One variance for every element (`var=0.5`).
    Value(f32),
    /// Per-element or broadcast variances (`var=tensor`).
    Tensor(&'a Tensor),
}

impl From<f32> for Variance<'_> {
    fn from(v: f32) -> Self {
        Variance::Value(v)
    }
}

impl<'a> From<&'a Tensor> for Variance<'a> {
    fn from(v: &'a Tensor) -> Self {
        Variance::Tensor(v)
    }
}

/// `torch.nn.functional.gaussian_nll_loss(input, target, var, full, eps,
/// reduction)` (PyTorch's defaults `full = false`, `eps = 1e-6`):
/// `0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps))`, plus
/// `0.5 log(2 pi)` with `full`. `var` is a float or a tensor (anything
/// [`Into<Variance>`]); a tensor must have `input`'s shape, or that shape
/// without its last dim (one variance per row), or `input`'s rank with one
/// mismatched dim of size 1; otherwise "var is of incorrect size". A
/// negative variance is PyTorch's error "var has negative entry/entries":
/// for a tensor that reads one flag back from the device, as PyTorch syncs.
/// The clamp at `eps` is PyTorch's `no_grad` one: `var`'s gradient passes
/// through it (at `var = 0`, `0.5 (1 / eps - d^2 / eps^2)`).
pub fn gaussian_nll_loss<'a>(
    input: &Tensor,
    target: &Tensor,
    var: impl Into<Variance<'a>>,
    full: bool,
    eps: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "gaussian_nll_loss";
    let (x, t) = (full_precision(input)?, full_precision(target)?);
    let negative = || Error::invalid(OP, "var has negative entry/entries");
    let var = match var.into() {
        Variance::Value(v) => {
            if v < 0.0 {
                return Err(negative());
            }
            Tensor::full(&x.shape(), f64::from(v), DType::F32, &x.device())?
        }
        Variance::Tensor(v) => {
            let v = full_precision(v)?;
            if v.numel() > 0 {
                let any = v.detach().lt_scalar(0.0)?.any_all()?.to_vec::<u32>()?;
                if any.first().is_some_and(|&a| a != 0) {
                    return Err(negative());
                }
            }
            v
        }
    };
    let var = fit_variance(OP, &x.shape(), var)?;
    let reduction = plain_reduction(OP, reduction)?;
    broadcast_shapes(OP, &x.shape(), &t.shape())?;
    let var = clamp_min_straight_through(&var, eps)?;
    let mut losses = var
        .log()?
        .add(&x.sub(&t)?.square()?.div(&var)?)?
        .mul_scalar(0.5)?;
    if full {
        let half_log_two_pi = (0.5 * (2.0 * std::f64::consts::PI).ln()) as f32;
        losses = losses.add_scalar(half_log_two_pi)?;
    }
    reduction.apply(losses)
}

/// PyTorch's shape rules for `var` against `input`'s shape: equal; one dim
/// short (unsqueezed at the end); or the same rank where the sizes of `var`
/// at the mismatched dims sum to 1 (one mismatched dim, of size 1 in `var`).
fn fit_variance(op: &'static str, input: &[usize], var: Tensor) -> Result<Tensor> {
    let shape = var.shape().to_vec();
    if shape == input {
        return Ok(var);
    }
    if !input.is_empty() && shape == input[..input.len() - 1] {
        return var.unsqueeze(-1);
    }
    let one_mismatch = shape.len() == input.len()
        && input
            .iter()
            .zip(&shape)
            .filter(|(i, v)| i != v)
            .map(|(_, &v)| v)
            .sum::<usize>()
            == 1;
    if one_mismatch {
        broadcast_shapes(op, input, &shape)?;
        return Ok(var);
    }
    Err(Error::invalid(op, "var is of incorrect size"))
}
