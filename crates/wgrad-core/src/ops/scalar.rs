//! Scalar formulas of the activation-style unary ops whose reference takes
//! more than one line (softplus, mish, tanh-approximate GELU), each with
//! its derivative. `kernels/common/activation.wgsl` mirrors them.

use crate::math::{exp, sigmoid, sigmoid_derivative};

/// `sqrt(2 / pi)`, the scale inside tanh-approximate GELU.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic coefficient of tanh-approximate GELU.
const GELU_KAPPA: f32 = 0.044_715;

/// `sech^2(v) = 4e / (1 + e)^2` with `e = exp(-2|v|)`: the derivative of
/// tanh with full relative precision in the tails (unlike `1 - tanh^2`).
pub(crate) fn sech2(v: f32) -> f32 {
    let e = exp(-2.0 * v.abs());
    4.0 * e / ((1.0 + e) * (1.0 + e))
}

/// `torch.nn.functional.softplus(x, beta, threshold)`: `x` where
/// `beta * x > threshold` (the linear regime), else `log1p(e^(beta x)) / beta`.
pub(crate) fn softplus(x: f32, beta: f32, threshold: f32) -> f32 {
    let bx = beta * x;
    if bx > threshold {
        x
    } else {
        exp(bx).ln_1p() / beta
    }
}

/// d softplus / dx: 1 in the linear regime, `sigmoid(beta x)` elsewhere.
pub(crate) fn softplus_derivative(x: f32, beta: f32, threshold: f32) -> f32 {
    let bx = beta * x;
    if bx > threshold { 1.0 } else { sigmoid(bx) }
}

/// `torch.nn.functional.mish`: `x * tanh(softplus(x))`; above 20 the
/// softplus is `x` itself (its default threshold; `tanh` is 1 there anyway).
pub(crate) fn mish(x: f32) -> f32 {
    x * softplus(x, 1.0, 20.0).tanh()
}

/// d mish / dx = `tanh(sp) + x * sigmoid(x) * sech^2(sp)` with `sp = softplus(x)`.
pub(crate) fn mish_derivative(x: f32) -> f32 {
    let sp = softplus(x, 1.0, 20.0);
    sp.tanh() + x * sigmoid(x) * sech2(sp)
}

/// The tanh argument of approximate GELU, `sqrt(2/pi) (x + 0.044715 x^3)`.
fn gelu_inner(x: f32) -> f32 {
    SQRT_2_OVER_PI * (x + GELU_KAPPA * x * x * x)
}

/// `torch.nn.functional.gelu(x, approximate='tanh')`.
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + gelu_inner(x).tanh())
}

/// d gelu_tanh / dx = `0.5 (1 + tanh u) + 0.5 x sech^2(u) u'`, PyTorch's
/// formula with `1 - tanh^2` in its tail-accurate form.
pub(crate) fn gelu_tanh_derivative(x: f32) -> f32 {
    let u = gelu_inner(x);
    let du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_KAPPA * x * x);
    0.5 * (1.0 + u.tanh()) + 0.5 * x * sech2(u) * du
}

/// d silu / dx = `s(x) + x s'(x)`.
pub(crate) fn silu_derivative(x: f32) -> f32 {
    sigmoid(x) + x * sigmoid_derivative(x)
}

/// `torch.sign`: -1, 0 or 1; NaN gives 0 and `-0.0` gives `+0.0`, as
/// PyTorch's kernels do (the one unary op that does not propagate NaN).
pub(crate) fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}
