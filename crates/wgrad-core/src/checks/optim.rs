//! Optimizer steps (`torch.optim.SGD`, `Adam`/`AdamW`, `RMSprop`,
//! `Adagrad`): operand shapes and the f32 coefficients both backends'
//! update loops use.
//!
//! The coefficients are computed in f64 (as Python does) and rounded to f32
//! where PyTorch's kernels round them, so CPU and GPU start from the very
//! same bits.

use crate::{Error, Result};

/// Error unless an optimizer operand (gradient or state) has the
/// parameter's shape.
pub fn operand(op: &'static str, param: &[usize], t: &[usize]) -> Result<()> {
    super::same_shape(op, param, t)
}

/// The f32 coefficients of one SGD step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdCoefficients {
    /// `-lr`: the step adds `neg_lr` times the (decayed, momentum-adjusted)
    /// gradient to the parameter.
    pub neg_lr: f32,
    /// Momentum factor (0 disables the momentum buffer).
    pub momentum: f32,
    /// `1 - dampening`: weight of the new gradient in the momentum buffer.
    pub one_minus_dampening: f32,
    /// L2 penalty added to the gradient as `weight_decay * param` (0 disables it).
    pub weight_decay: f32,
}

impl SgdCoefficients {
    /// Rounds `torch.optim.SGD`'s hyperparameters (`lr`, `momentum`,
    /// `dampening`, `weight_decay`) to the f32 coefficients above; no validation.
    pub fn new(lr: f64, momentum: f64, dampening: f64, weight_decay: f64) -> Self {
        SgdCoefficients {
            neg_lr: (-lr) as f32,
            momentum: momentum as f32,
            one_minus_dampening: (1.0 - dampening) as f32,
            weight_decay: weight_decay as f32,
        }
    }
}

/// The f32 coefficients of one Adam step at step `t`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamCoefficients {
    /// `1 - beta1`: the weight `lerp` gives the gradient in the first moment.
    pub one_minus_beta1: f32,
    /// Decay of the second moment (`exp_avg_sq *= beta2`).
    pub beta2: f32,
    /// `1 - beta2`: weight of `grad^2` in the second moment.
    pub one_minus_beta2: f32,
    /// Added to the bias-corrected `sqrt` of the second moment before dividing.
    pub eps: f32,
    /// Weight decay: Adam adds `weight_decay * param` to the gradient, AdamW
    /// uses [`decay`](Self::decay) instead.
    pub weight_decay: f32,
    /// `1 - lr * weight_decay` (AdamW's decoupled decay factor).
    pub decay: f32,
    /// `-lr / (1 - beta1^t)`.
    pub neg_step_size: f32,
    /// `sqrt(1 - beta2^t)`.
    pub bias_correction2_sqrt: f32,
}

impl AdamCoefficients {
    /// The coefficients at `step` (1-based, already incremented for this
    /// update; 0 is an error). The bias corrections are Python floats (f64)
    /// in PyTorch and become f32 only when a tensor op consumes them.
    pub fn new(
        op: &'static str,
        step: u64,
        lr: f64,
        (beta1, beta2): (f64, f64),
        eps: f64,
        weight_decay: f64,
    ) -> Result<Self> {
        if step == 0 {
            return Err(Error::invalid(
                op,
                "step counts from 1 (bias correction 1 - beta^0 would divide by zero)",
            ));
        }
        // Exponents beyond i32 saturate: beta^t is 0 there anyway for beta < 1.
        let t = i32::try_from(step).unwrap_or(i32::MAX);
        let bias_correction1 = 1.0 - beta1.powi(t);
        let bias_correction2 = 1.0 - beta2.powi(t);
        Ok(AdamCoefficients {
            one_minus_beta1: (1.0 - beta1) as f32,
            beta2: beta2 as f32,
            one_minus_beta2: (1.0 - beta2) as f32,
            eps: eps as f32,
            weight_decay: weight_decay as f32,
            decay: (1.0 - lr * weight_decay) as f32,
            neg_step_size: (-(lr / bias_correction1)) as f32,
            bias_correction2_sqrt: bias_correction2.sqrt() as f32,
        })
    }

    /// All eight in declaration order (the order of the fused kernels'
    /// immediates).
    pub fn to_array(&self) -> [f32; 8] {
        [
            self.one_minus_beta1,
            self.beta2,
            self.one_minus_beta2,
            self.eps,
            self.weight_decay,
            self.decay,
            self.neg_step_size,
            self.bias_correction2_sqrt,
        ]
    }
}

/// The f32 coefficients of one RMSprop step (`torch.optim.RMSprop`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmsPropCoefficients {
    /// `-lr`.
    pub neg_lr: f32,
    /// Decay of the square average (`square_avg *= alpha`).
    pub alpha: f32,
    /// `1 - alpha`: weight of `grad^2` in the square average (and of the
    /// gradient in the centered gradient average).
    pub one_minus_alpha: f32,
    /// Added to the root of the (centered) square average before dividing.
    pub eps: f32,
    /// L2 penalty added to the gradient as `weight_decay * param` (0: none).
    pub weight_decay: f32,
    /// Momentum factor (used only with a momentum buffer).
    pub momentum: f32,
    /// Maximize the objective (the gradient is negated first).
    pub maximize: bool,
}

impl RmsPropCoefficients {
    /// Rounds RMSprop's hyper-parameters to f32 as torch's kernels do
    /// (`1 - alpha` in f64 first, as Python computes it); no validation.
    pub fn new(
        lr: f64,
        alpha: f64,
        eps: f64,
        weight_decay: f64,
        momentum: f64,
        maximize: bool,
    ) -> Self {
        RmsPropCoefficients {
            neg_lr: (-lr) as f32,
            alpha: alpha as f32,
            one_minus_alpha: (1.0 - alpha) as f32,
            eps: eps as f32,
            weight_decay: weight_decay as f32,
            momentum: momentum as f32,
            maximize,
        }
    }
}

/// The f32 coefficients of one Adagrad step (`torch.optim.Adagrad`) at step `t`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdagradCoefficients {
    /// `-clr` with `clr = lr / (1 + (t - 1) * lr_decay)`, computed in f64.
    pub neg_clr: f32,
    /// Added to the root of the sum of squares before dividing.
    pub eps: f32,
    /// L2 penalty added to the gradient as `weight_decay * param` (0: none).
    pub weight_decay: f32,
    /// Maximize the objective (the gradient is negated first).
    pub maximize: bool,
}

impl AdagradCoefficients {
    /// The coefficients at `step` (1-based, already incremented for this
    /// update; 0 is an error); no other validation.
    pub fn new(
        op: &'static str,
        step: u64,
        lr: f64,
        lr_decay: f64,
        eps: f64,
        weight_decay: f64,
        maximize: bool,
    ) -> Result<Self> {
        if step == 0 {
            return Err(Error::invalid(op, "step counts from 1"));
        }
        // torch keeps the step as a float tensor and reads it with .item().
        let clr = lr / (1.0 + (step as f64 - 1.0) * lr_decay);
        Ok(AdagradCoefficients {
            neg_clr: (-clr) as f32,
            eps: eps as f32,
            weight_decay: weight_decay as f32,
            maximize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_have_the_parameter_shape() {
        assert!(operand("sgd_step", &[2, 3], &[2, 3]).is_ok());
        assert!(matches!(
            operand("sgd_step", &[2, 3], &[3, 2]),
            Err(Error::ShapeMismatch { .. })
        ));
    }

    #[test]
    fn sgd_coefficients_round_to_f32() {
        let c = SgdCoefficients::new(0.1, 0.9, 0.25, 1e-4);
        assert_eq!(c.neg_lr, -0.1f32);
        assert_eq!(c.one_minus_dampening, 0.75);
        assert_eq!(c.weight_decay, 1e-4f32);
    }

    #[test]
    fn adagrad_decays_the_rate_per_step() {
        assert!(AdagradCoefficients::new("adagrad_step", 0, 0.1, 0.0, 1e-10, 0.0, false).is_err());
        let c = AdagradCoefficients::new("adagrad_step", 3, 0.1, 0.5, 1e-10, 0.0, false).unwrap();
        assert_eq!(c.neg_clr, (-(0.1f64 / 2.0)) as f32);
        let r = RmsPropCoefficients::new(0.01, 0.99, 1e-8, 0.0, 0.9, false);
        assert_eq!(r.one_minus_alpha, (1.0f64 - 0.99) as f32);
        assert_eq!(r.neg_lr, -0.01f32);
    }

    #[test]
    fn adam_bias_corrections() {
        assert!(matches!(
            AdamCoefficients::new("adam_step", 0, 1e-3, (0.9, 0.999), 1e-8, 0.0),
            Err(Error::InvalidArgument { .. })
        ));
        let c = AdamCoefficients::new("adam_step", 1, 1e-3, (0.9, 0.999), 1e-8, 0.5).unwrap();
        assert_eq!(c.neg_step_size, (-(1e-3f64 / (1.0 - 0.9))) as f32);
        assert_eq!(c.bias_correction2_sqrt, (1.0f64 - 0.999).sqrt() as f32);
        assert_eq!(c.decay, (1.0 - 1e-3f64 * 0.5) as f32);
        assert_eq!(c.to_array()[6], c.neg_step_size);
        // Huge steps saturate instead of overflowing the exponent.
        let late =
            AdamCoefficients::new("adam_step", u64::MAX, 1e-3, (0.9, 0.999), 1e-8, 0.0).unwrap();
        assert_eq!(late.bias_correction2_sqrt, 1.0);
    }
}
