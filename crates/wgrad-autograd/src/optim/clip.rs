//! Gradient clipping (`torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`).
//!
//! Everything stays on the device: the total norm and the clipping factor
//! are 0-d device tensors and every gradient is multiplied by the factor
//! unconditionally (a factor of 1 when no clipping is needed), so clipping
//! never waits for a readback, exactly like PyTorch's implementation.

use wgrad_core::{BinaryOp, Error, Result, UnaryOp};

use super::first_device;
use crate::{Storage, Tensor};

/// Added to the norm before dividing, as PyTorch does.
const NORM_EPS: f32 = 1e-6;

/// Scales the gradients of `params` in place so that their global
/// `norm_type`-norm (over all gradients together) is at most `max_norm`,
/// and returns that total norm (before clipping) as a 0-d tensor on the
/// gradients' device. `norm_type` is any `p > 0` or `f64::INFINITY` (max
/// abs). Parameters without a gradient are skipped; with none at all the
/// norm is 0. Gradients on different devices are a `DeviceMismatch`.
///
/// `clip_coef = min(max_norm / (total_norm + 1e-6), 1)`; every gradient is
/// multiplied by it.
///
/// ```
/// use wgrad_autograd::optim::clip_grad_norm_;
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.5f32, 2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// w.square()?.sum_all()?.backward()?; // grad [3, 4], norm 5
/// let norm = clip_grad_norm_(&[w.clone()], 1.0, 2.0)?;
/// assert_eq!(norm.item()?, 5.0);
/// let g = w.grad().expect("w has a gradient").to_vec_f32()?;
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Tensor> {
    clip_grad_norm_with(params, max_norm, norm_type, false)
}

/// [`clip_grad_norm_`] with PyTorch's `error_if_nonfinite`: when set, a
/// NaN or infinite total norm is an error and no gradient changes. The
/// check reads the norm back to the host (PyTorch's synchronizes too).
pub fn clip_grad_norm_with(
    params: &[Tensor],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    const OP: &str = "clip_grad_norm_";
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("norm_type must be > 0 or inf, got {norm_type}"),
        ));
    }
    let inf = norm_type.is_infinite();
    let grads: Vec<(&Tensor, Storage)> = params
        .iter()
        .filter_map(|p| p.grad().map(|g| (p, g.storage())))
        .collect();
    let mut total: Option<Storage> = None;
    for (_, g) in &grads {
        let part = if inf {
            if g.numel() == 0 {
                // max over nothing is an error; an empty gradient adds nothing.
                continue;
            }
            g.unary(UnaryOp::Abs)?.max(&[], false)?
        } else if norm_type == 2.0 {
            g.unary(UnaryOp::Square)?.sum(&[], false)?
        } else if norm_type == 1.0 {
            g.unary(UnaryOp::Abs)?.sum(&[], false)?
        } else {
            g.unary(UnaryOp::Abs)?
                .binary_scalar(BinaryOp::Pow, norm_type as f32, false)?
                .sum(&[], false)?
        };
        total = Some(match total {
            None => part,
            Some(t) => t.binary(
                &part,
                if inf {
                    BinaryOp::Maximum
                } else {
                    BinaryOp::Add
                },
            )?,
        });
    }
    let total = match total {
        Some(t) => t,
        None => {
            let device = grads
                .first()
                .map_or_else(|| first_device(params), |(_, g)| g.device());
            return Tensor::scalar(0.0, &device);
        }
    };
    let norm = if inf || norm_type == 1.0 {
        total
    } else if norm_type == 2.0 {
        total.unary(UnaryOp::Sqrt)?
    } else {
        total.binary_scalar(BinaryOp::Pow, (1.0 / norm_type) as f32, false)?
    };
    if error_if_nonfinite {
        let value = norm.to_vec::<f32>()?.first().copied().unwrap_or(0.0);
        if !value.is_finite() {
            return Err(Error::invalid(
                OP,
                format!(
                    "the total norm of order {norm_type} for gradients from `parameters` is \
                     non-finite ({value}), so it cannot be clipped; set error_if_nonfinite=false \
                     to clip anyway"
                ),
            ));
        }
    }
    let coef = norm
        .binary_scalar(BinaryOp::Add, NORM_EPS, false)?
        .binary_scalar(BinaryOp::Div, max_norm as f32, true)?
        .unary(UnaryOp::Clamp {
            min: None,
            max: Some(1.0),
        })?;
    for (param, g) in &grads {
        let scaled = g.binary(&coef, BinaryOp::Mul)?;
        // A 0-d half gradient times the F32 coefficient promotes to F32;
        // the gradient keeps its parameter's dtype.
        let scaled = if scaled.dtype() == g.dtype() {
            scaled
        } else {
            scaled.cast(g.dtype())?
        };
        param.set_grad(Some(Tensor::from_storage_leaf(scaled)))?;
    }
    Ok(Tensor::from_storage_leaf(norm))
}

/// Clamps every gradient of `params` to `[-clip_value, clip_value]` in
/// place (on its device). Parameters without a gradient are skipped.
///
/// ```
/// use wgrad_autograd::optim::clip_grad_value_;
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![0.1f32, -3.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// w.square()?.sum_all()?.backward()?; // grad [0.2, -6]
/// clip_grad_value_(&[w.clone()], 1.0)?;
/// assert_eq!(w.grad().expect("w has a gradient").to_vec_f32()?, [0.2, -1.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    let v = clip_value as f32;
    for param in params {
        if let Some(g) = param.grad() {
            let clamped = g.storage().unary(UnaryOp::Clamp {
                min: Some(-v),
                max: Some(v),
            })?;
            param.set_grad(Some(Tensor::from_storage_leaf(clamped)))?;
        }
    }
    Ok(())
}
