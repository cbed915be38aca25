//! [`UnaryOp`]: the elementwise unary selectors, their reference
//! semantics and derivatives.

use super::scalar;
use crate::math::{erf, exp, gelu, gelu_derivative, sigmoid, sigmoid_derivative};

/// Elementwise unary math on f32. Parameterised variants carry their parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// `-x` (`torch.neg`).
    Neg,
    /// `|x|` (`torch.abs`).
    Abs,
    /// `e^x` (`torch.exp`).
    Exp,
    /// Natural logarithm (`torch.log`); `-inf` at 0, NaN below.
    Log,
    /// Square root (`torch.sqrt`); NaN for negative `x`.
    Sqrt,
    /// `1 / sqrt(x)` (`torch.rsqrt`).
    Rsqrt,
    /// Sine, `x` in radians (`torch.sin`).
    Sin,
    /// Cosine, `x` in radians (`torch.cos`).
    Cos,
    /// Hyperbolic tangent (`torch.tanh`).
    Tanh,
    /// Logistic `1 / (1 + e^-x)` (`torch.sigmoid`).
    Sigmoid,
    /// `max(x, 0)`, NaN passing through (`torch.relu`).
    Relu,
    /// Exact (erf-based) GELU `x * Phi(x)`: `torch.nn.functional.gelu` with
    /// `approximate='none'`.
    Gelu,
    /// `x * sigmoid(x)` (`torch.nn.functional.silu`).
    Silu,
    /// `x * x` (`torch.square`).
    Square,
    /// `1 / x` (`torch.reciprocal`).
    Recip,
    /// `x` for `x > 0`, else `slope * x` (`torch.nn.functional.leaky_relu`).
    LeakyRelu {
        /// Factor applied to non-positive inputs (PyTorch's `negative_slope`).
        slope: f32,
    },
    /// `x` limited to `[min, max]`, NaN passing through (`torch.clamp`).
    /// `None` bounds are open (use `f32::NEG_INFINITY`/`INFINITY` in kernels).
    Clamp {
        /// Lower bound, or `None` for none.
        min: Option<f32>,
        /// Upper bound, or `None` for none.
        max: Option<f32>,
    },
    /// The error function `erf(x) = 2/sqrt(pi) * int_0^x exp(-t^2) dt`
    /// (`torch.erf`).
    Erf,
    /// `ln(1 + x)`, accurate near 0 (`torch.log1p`).
    Log1p,
    /// `e^x - 1`, accurate near 0 (`torch.expm1`).
    Expm1,
    /// -1, 0 or 1 by the sign of `x` (`torch.sign`); NaN gives 0, as in
    /// PyTorch.
    Sign,
    /// Largest integer `<= x` (`torch.floor`); derivative 0.
    Floor,
    /// Smallest integer `>= x` (`torch.ceil`); derivative 0.
    Ceil,
    /// Nearest integer, halves to even (`torch.round`); derivative 0.
    Round,
    /// `log(1 + e^(beta x)) / beta`, and `x` itself where `beta x > threshold`
    /// (`torch.nn.functional.softplus`, defaults beta 1, threshold 20).
    Softplus {
        /// Sharpness (PyTorch's `beta`).
        beta: f32,
        /// Above `beta * x > threshold` the op is linear (PyTorch's `threshold`).
        threshold: f32,
    },
    /// `x` for `x > 0`, else `alpha (e^x - 1)` (`torch.nn.functional.elu`).
    Elu {
        /// Scale of the negative part (PyTorch's `alpha`, default 1).
        alpha: f32,
    },
    /// `x * tanh(softplus(x))` (`torch.nn.functional.mish`).
    Mish,
    /// `x` limited to `[min, max]`, NaN passing through, gradient only
    /// strictly inside (`torch.nn.functional.hardtanh`, defaults -1, 1).
    Hardtanh {
        /// Lower bound (PyTorch's `min_val`).
        min: f32,
        /// Upper bound (PyTorch's `max_val`).
        max: f32,
    },
    /// Tanh-approximate GELU `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`:
    /// `torch.nn.functional.gelu` with `approximate='tanh'`.
    GeluTanh,
}

impl UnaryOp {
    /// Every variant once, in `code()` order; parameterised variants carry
    /// neutral parameters (slope 0, open clamp bounds) or PyTorch's defaults
    /// (softplus, elu, hardtanh). The WGSL selector
    /// constants (`UNARY_NEG`, ...) are generated from this list, and a test
    /// checks that every kernel switching on a `UnaryOp` has a case for each.
    pub const ALL: [UnaryOp; 29] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::Silu,
        UnaryOp::Square,
        UnaryOp::Recip,
        UnaryOp::LeakyRelu { slope: 0.0 },
        UnaryOp::Clamp {
            min: None,
            max: None,
        },
        UnaryOp::Erf,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Sign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Softplus {
            beta: 1.0,
            threshold: 20.0,
        },
        UnaryOp::Elu { alpha: 1.0 },
        UnaryOp::Mish,
        UnaryOp::Hardtanh {
            min: -1.0,
            max: 1.0,
        },
        UnaryOp::GeluTanh,
    ];

    /// Selector value passed to `kernels/elementwise/unary.wgsl`.
    pub fn code(self) -> u32 {
        match self {
            UnaryOp::Neg => 0,
            UnaryOp::Abs => 1,
            UnaryOp::Exp => 2,
            UnaryOp::Log => 3,
            UnaryOp::Sqrt => 4,
            UnaryOp::Rsqrt => 5,
            UnaryOp::Sin => 6,
            UnaryOp::Cos => 7,
            UnaryOp::Tanh => 8,
            UnaryOp::Sigmoid => 9,
            UnaryOp::Relu => 10,
            UnaryOp::Gelu => 11,
            UnaryOp::Silu => 12,
            UnaryOp::Square => 13,
            UnaryOp::Recip => 14,
            UnaryOp::LeakyRelu { .. } => 15,
            UnaryOp::Clamp { .. } => 16,
            UnaryOp::Erf => 17,
            UnaryOp::Log1p => 18,
            UnaryOp::Expm1 => 19,
            UnaryOp::Sign => 20,
            UnaryOp::Floor => 21,
            UnaryOp::Ceil => 22,
            UnaryOp::Round => 23,
            UnaryOp::Softplus { .. } => 24,
            UnaryOp::Elu { .. } => 25,
            UnaryOp::Mish => 26,
            UnaryOp::Hardtanh { .. } => 27,
            UnaryOp::GeluTanh => 28,
        }
    }
    /// The two f32 parameters the kernel receives (unused ones are 0).
    pub fn params(self) -> [f32; 2] {
        match self {
            UnaryOp::LeakyRelu { slope } => [slope, 0.0],
            UnaryOp::Clamp { min, max } => [
                min.unwrap_or(f32::NEG_INFINITY),
                max.unwrap_or(f32::INFINITY),
            ],
            UnaryOp::Softplus { beta, threshold } => [beta, threshold],
            UnaryOp::Elu { alpha } => [alpha, 0.0],
            UnaryOp::Hardtanh { min, max } => [min, max],
            _ => [0.0, 0.0],
        }
    }
    /// The op's name in error messages and, upper-cased, in its WGSL selector
    /// constant (`UNARY_LEAKY_RELU`); PyTorch's function name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Silu => "silu",
            UnaryOp::Square => "square",
            UnaryOp::Recip => "recip",
            UnaryOp::LeakyRelu { .. } => "leaky_relu",
            UnaryOp::Clamp { .. } => "clamp",
            UnaryOp::Erf => "erf",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Sign => "sign",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Softplus { .. } => "softplus",
            UnaryOp::Elu { .. } => "elu",
            UnaryOp::Mish => "mish",
            UnaryOp::Hardtanh { .. } => "hardtanh",
            UnaryOp::GeluTanh => "gelu_tanh",
        }
    }
    /// The op on one element: the reference the CPU loops call and
    /// `unary.wgsl` mirrors.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp => exp(x),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => sigmoid(x),
            // `x <= 0 ? 0 : x` rather than `x > 0 ? x : 0`: NaN fails the
            // comparison and passes through, as in PyTorch.
            UnaryOp::Relu => {
                if x <= 0.0 {
                    0.0
                } else {
                    x
                }
            }
            UnaryOp::Gelu => gelu(x),
            UnaryOp::Silu => x * sigmoid(x),
            UnaryOp::Square => x * x,
            UnaryOp::Recip => 1.0 / x,
            UnaryOp::LeakyRelu { slope } => {
                if x > 0.0 {
                    x
                } else {
                    slope * x
                }
            }
            UnaryOp::Clamp { .. } => {
                let [lo, hi] = self.params();
                if x.is_nan() { x } else { x.max(lo).min(hi) }
            }
            UnaryOp::Erf => erf(x),
            UnaryOp::Log1p => x.ln_1p(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Sign => scalar::sign(x),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Softplus { beta, threshold } => scalar::softplus(x, beta, threshold),
            UnaryOp::Elu { alpha } => {
                if x > 0.0 {
                    x
                } else {
                    alpha * x.exp_m1()
                }
            }
            UnaryOp::Mish => scalar::mish(x),
            UnaryOp::Hardtanh { min, max } => {
                if x.is_nan() {
                    x
                } else {
                    x.max(min).min(max)
                }
            }
            UnaryOp::GeluTanh => scalar::gelu_tanh(x),
        }
    }

    /// The gradient `g` takes through this op at `x`: `g * derivative(x)`,
    /// except that the ops whose gradient PyTorch selects rather than
    /// multiplies (relu, hardtanh and clamp: `where(mask, grad, 0)`;
    /// sign, floor, ceil and round: zeros) give an exact 0 where the
    /// derivative is 0, even for a NaN or infinite `g`.
    pub fn chain(self, g: f32, x: f32) -> f32 {
        let d = self.derivative(x);
        let selects = matches!(
            self,
            UnaryOp::Relu
                | UnaryOp::Hardtanh { .. }
                | UnaryOp::Clamp { .. }
                | UnaryOp::Sign
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
        );
        if selects && d == 0.0 { 0.0 } else { g * d }
    }

    /// The derivative of [`apply`](Self::apply) at `x`: what reverse-mode
    /// autograd multiplies the upstream gradient by. Kinks follow PyTorch:
    /// `relu'(0) = 0`, `leaky_relu'(x <= 0) = slope`, `abs'(0) = 0`,
    /// `elu'(0) = alpha`, and `clamp` and `hardtanh` pass the gradient
    /// strictly inside `(min, max)` (PyTorch 2.15 for scalar bounds) and
    /// block it at and past the bounds. At a NaN input: `relu` passes the
    /// gradient (PyTorch tests `x <= 0`), `leaky_relu` scales it by the
    /// slope, `clamp`, `hardtanh` and `abs` block it and `elu` gives NaN
    /// (PyTorch's vectorized kernels; its scalar tails differ for
    /// hardtanh and elu). The GPU kernel
    /// `kernels/backward/unary_backward.wgsl` mirrors this formula by formula.
    pub fn derivative(self, x: f32) -> f32 {
        match self {
            UnaryOp::Neg => -1.0,
            UnaryOp::Abs => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            UnaryOp::Exp => exp(x),
            UnaryOp::Log => 1.0 / x,
            UnaryOp::Sqrt => 0.5 / x.sqrt(),
            UnaryOp::Rsqrt => {
                let r = 1.0 / x.sqrt();
                -0.5 * r * r * r
            }
            UnaryOp::Sin => x.cos(),
            UnaryOp::Cos => -x.sin(),
            // sech^2(x) = 4e / (1 + e)^2 with e = exp(-2|x|): unlike
            // `1 - tanh^2` it keeps full relative precision in the tails.
            UnaryOp::Tanh => scalar::sech2(x),
            UnaryOp::Sigmoid => sigmoid_derivative(x),
            // PyTorch's threshold_backward blocks only x <= 0: a NaN input's
            // gradient passes.
            UnaryOp::Relu => {
                if x <= 0.0 {
                    0.0
                } else {
                    1.0
                }
            }
            // d/dx [x * Phi(x)] = Phi(x) + x * phi(x), Phi through the same erf
            // as the forward pass.
            UnaryOp::Gelu => gelu_derivative(x),
            // d/dx [x * s(x)] = s(x) + x * s'(x).
            UnaryOp::Silu => scalar::silu_derivative(x),
            UnaryOp::Square => 2.0 * x,
            UnaryOp::Recip => {
                let r = 1.0 / x;
                -(r * r)
            }
            UnaryOp::LeakyRelu { slope } => {
                if x > 0.0 {
                    1.0
                } else {
                    slope
                }
            }
            UnaryOp::Clamp { .. } => {
                let [lo, hi] = self.params();
                // Strictly inside the bounds, as the PyTorch our fixtures come
                // from (2.15) does for scalar bounds: at x == min or x == max the
                // gradient is 0. NaN fails both comparisons, so it gets 0 too.
                // An absent bound (an infinite one here) blocks nothing, not
                // even an infinite x (`clamp(min=0)` passes +inf's gradient).
                let above = x > lo || lo == f32::NEG_INFINITY;
                let below = x < hi || hi == f32::INFINITY;
                if above && below && !x.is_nan() {
                    1.0
                } else {
                    0.0
                }
            }
            UnaryOp::Erf => std::f32::consts::FRAC_2_SQRT_PI * exp(-x * x),
            UnaryOp::Log1p => 1.0 / (1.0 + x),
            UnaryOp::Expm1 => exp(x),
            UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => 0.0,
            UnaryOp::Softplus { beta, threshold } => {
                scalar::softplus_derivative(x, beta, threshold)
            }
            // PyTorch's elu backward: alpha * e^x on x <= 0 (so elu'(0) = alpha).
            // NaN: NaN, as PyTorch's vectorized kernel (what tensors of 16
            // or more elements take) gives; its scalar tail gives 1.
            UnaryOp::Elu { alpha } => {
                if x.is_nan() {
                    x
                } else if x > 0.0 {
                    1.0
                } else {
                    alpha * exp(x)
                }
            }
            UnaryOp::Mish => scalar::mish_derivative(x),
            // Open interval, as torch's hardtanh_backward (0 at the bounds).
            // Open interval; NaN blocked, as PyTorch's vectorized kernel
            // (tensors of 16 or more elements) does (its scalar tail passes it).
            UnaryOp::Hardtanh { min, max } => {
                if x > min && x < max {
                    1.0
                } else {
                    0.0
                }
            }
            UnaryOp::GeluTanh => scalar::gelu_tanh_derivative(x),
        }
    }
}
