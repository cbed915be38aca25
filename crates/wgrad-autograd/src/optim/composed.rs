//! The shared pieces of the optimizers whose step is composed from tensor
//! ops (NAdam, RAdam, Adamax, Adadelta): each runs PyTorch's
//! single-tensor arithmetic, op by op and in its order, as F32 tensor ops
//! under [`no_grad`](crate::no_grad) on the parameter's device (GPU steps
//! record their dispatches and read nothing back), and swaps the results
//! into the parameter and its state with [`Tensor::set_storage`] once
//! every one of them was computed, so a step that fails leaves both as
//! they were.
//!
//! Scalars enter the ops as f32, as PyTorch's CPU kernels read a Python
//! float against an f32 tensor; the coefficients made from them (bias
//! corrections, step sizes) are computed in f64 on the host, as Python does.
//! A 16-bit (F16/BF16) parameter is updated through an F32 copy and rounded
//! once; the state is F32 whatever the parameter's dtype.

use wgrad_core::{DType, Error, Result};

use super::device_mismatch;
use crate::Tensor;

/// Rejects betas outside `[0, 1)` (or NaN) as torch does.
pub(crate) fn check_betas(op: &'static str, betas: (f64, f64)) -> Result<()> {
    for (i, beta) in [betas.0, betas.1].into_iter().enumerate() {
        if !(0.0..1.0).contains(&beta) {
            return Err(Error::invalid(
                op,
                format!("Invalid beta parameter at index {i}: {beta}"),
            ));
        }
    }
    Ok(())
}

/// Checks a state tensor before a step uses it: F32, with the parameter's
/// shape and device (a state restored wrongly is an error before anything
/// changes, never a broadcast).
pub(crate) fn check_state(op: &'static str, param: &Tensor, state: &Tensor) -> Result<()> {
    if state.shape() != param.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: param.shape().to_vec(),
            rhs: state.shape().to_vec(),
        });
    }
    if state.dtype() != DType::F32 {
        return Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got: state.dtype(),
        });
    }
    if !param.device().same(&state.device()) {
        return Err(device_mismatch(op, &param.storage(), &state.storage()));
    }
    Ok(())
}

/// The F32 parameter and gradient a step works on: the gradient negated
/// under `maximize`, then with `l2 * param` added when `l2 != 0` (torch's
/// coupled weight decay, `grad.add(param, alpha=weight_decay)`).
pub(crate) fn operands(
    op: &'static str,
    param: &Tensor,
    grad: &Tensor,
    maximize: bool,
    l2: f64,
) -> Result<(Tensor, Tensor)> {
    if !param.device().same(&grad.device()) {
        return Err(device_mismatch(op, &param.storage(), &grad.storage()));
    }
    if grad.shape() != param.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: param.shape().to_vec(),
            rhs: grad.shape().to_vec(),
        });
    }
    let p = param.detach().cast(DType::F32)?;
    let mut g = grad.detach().cast(DType::F32)?;
    if maximize {
        g = g.neg()?;
    }
    if l2 != 0.0 {
        g = g.add(&p.mul_scalar(l2 as f32)?)?;
    }
    Ok((p, g))
}

/// `start.lerp(end, weight)` with torch's two formulas: `start + w (end -
/// start)` for `|w| < 0.5`, else `end - (1 - w)(end - start)`.
pub(crate) fn lerp(start: &Tensor, end: &Tensor, weight: f64) -> Result<Tensor> {
    let w = weight as f32;
    let diff = end.sub(start)?;
    if w.abs() < 0.5 {
        start.add(&diff.mul_scalar(w)?)
    } else {
        end.add(&diff.mul_scalar(w - 1.0)?)
    }
}

/// `avg.mul(beta).addcmul(x, x, value=1 - beta)`: the running average of
/// `x` squared.
pub(crate) fn ema_square(avg: &Tensor, x: &Tensor, beta: f64) -> Result<Tensor> {
    let term = x.mul_scalar((1.0 - beta) as f32)?.mul(x)?;
    avg.mul_scalar(beta as f32)?.add(&term)
}

/// `param.addcdiv(num, den, value=value)`: `param + value * num / den`.
pub(crate) fn addcdiv(param: &Tensor, num: &Tensor, den: &Tensor, value: f64) -> Result<Tensor> {
    param.add(&num.mul_scalar(value as f32)?.div(den)?)
}

/// Swaps the step's results in: the new F32 parameter, rounded once to the
/// parameter's dtype, then each state tensor's new value (all checked by
/// [`check_state`], so none of these can fail halfway).
pub(crate) fn commit(
    param: &Tensor,
    new_param: &Tensor,
    state: &[(&Tensor, &Tensor)],
) -> Result<()> {
    let new_param = new_param.cast(param.dtype())?;
    param.set_storage(new_param.storage())?;
    for (target, value) in state {
        target.set_storage(value.storage())?;
    }
    Ok(())
}
