//! Op selectors shared by both backends, and the scalar definition of each op.
//!
//! The `apply` methods are the reference semantics: the CPU backend calls
//! them element by element, and each WGSL kernel mirrors them (the `code()`
//! of a variant is the selector value the kernels switch on).

use crate::math::{FRAC_1_SQRT_2PI, exp, sigmoid_derivative};
// Re-exported where they have always been: the CPU loops call them as
// `wgrad_core::ops::{sigmoid, erf}`.
pub use crate::math::{erf, sigmoid};

/// Elementwise binary arithmetic on f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b` (`torch.add`).
    Add,
    /// `a - b` (`torch.sub`).
    Sub,
    /// `a * b` (`torch.mul`).
    Mul,
    /// `a / b`, true division (`torch.div`); IEEE rules for zero divisors.
    Div,
    /// `a` raised to the power `b` (`torch.pow`); NaN for a negative base
    /// with a non-integer exponent.
    Pow,
    /// The larger of `a` and `b`, NaN if either is NaN (`torch.maximum`).
    Maximum,
    /// The smaller of `a` and `b`, NaN if either is NaN (`torch.minimum`).
    Minimum,
}

impl BinaryOp {
    /// Every variant, in `code()` order. The WGSL selector constants
    /// (`BINARY_ADD`, ...) are generated from this list, and a test checks
    /// that every kernel switching on a `BinaryOp` has a case for each.
    pub const ALL: [BinaryOp; 7] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ];

    /// Selector value passed to `kernels/elementwise/binary.wgsl`.
    pub fn code(self) -> u32 {
        self as u32
    }
    /// The op's name in error messages (`op` of [`Error`](crate::Error)) and,
    /// upper-cased, in its WGSL selector constant (`BINARY_ADD`).
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
        }
    }
    /// The op on one pair of elements: the reference the CPU loops call and
    /// `binary.wgsl` mirrors.
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Pow => a.powf(b),
            // NaN-propagating like torch.maximum/minimum.
            BinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    f32::NAN
                } else {
                    a.max(b)
                }
            }
            BinaryOp::Minimum => {
                if a.is_nan() || b.is_nan() {
                    f32::NAN
                } else {
                    a.min(b)
                }
            }
        }
    }
}

/// Elementwise comparison producing a U32 mask (0 or 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `a == b` (`torch.eq`).
    Eq,
    /// `a != b` (`torch.ne`); the only comparison true when a NaN is involved.
    Ne,
    /// `a < b` (`torch.lt`).
    Lt,
    /// `a <= b` (`torch.le`).
    Le,
    /// `a > b` (`torch.gt`).
    Gt,
    /// `a >= b` (`torch.ge`).
    Ge,
}

impl CompareOp {
    /// Every variant, in `code()` order (see [`BinaryOp::ALL`]).
    pub const ALL: [CompareOp; 6] = [
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
    ];

    /// Selector value passed to `kernels/elementwise/compare.wgsl`.
    pub fn code(self) -> u32 {
        self as u32
    }
    /// The op's name in error messages and, upper-cased, in its WGSL selector
    /// constant (`COMPARE_EQ`).
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }
    /// The comparison on one pair of elements (f32 or i32 tensors), with
    /// IEEE semantics for NaN.
    pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CompareOp::Eq => a == b,
            CompareOp::Ne => a != b,
            CompareOp::Lt => a < b,
            CompareOp::Le => a <= b,
            CompareOp::Gt => a > b,
            CompareOp::Ge => a >= b,
        }
    }
}

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
}

impl UnaryOp {
    /// Every variant once, in `code()` order; parameterised variants carry
    /// neutral parameters (slope 0, open clamp bounds). The WGSL selector
    /// constants (`UNARY_NEG`, ...) are generated from this list, and a test
    /// checks that every kernel switching on a `UnaryOp` has a case for each.
    pub const ALL: [UnaryOp; 18] = [
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
            UnaryOp::Gelu => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
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
        }
    }

    /// The derivative of [`apply`](Self::apply) at `x`: what reverse-mode
    /// autograd multiplies the upstream gradient by. Kinks follow PyTorch:
    /// `relu'(0) = 0`, `leaky_relu'(x <= 0) = slope`, `abs'(0) = 0`, and
    /// `clamp` passes the gradient where `min <= x <= max` (bounds
    /// included) and blocks it elsewhere, NaN included. The GPU kernel
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
            UnaryOp::Tanh => {
                let e = exp(-2.0 * x.abs());
                4.0 * e / ((1.0 + e) * (1.0 + e))
            }
            UnaryOp::Sigmoid => sigmoid_derivative(x),
            UnaryOp::Relu => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            // d/dx [x * Phi(x)] = Phi(x) + x * phi(x), Phi through the same erf
            // as the forward pass.
            UnaryOp::Gelu => {
                let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
                let pdf = exp(-0.5 * x * x) * FRAC_1_SQRT_2PI;
                cdf + x * pdf
            }
            // d/dx [x * s(x)] = s(x) + x * s'(x).
            UnaryOp::Silu => sigmoid(x) + x * sigmoid_derivative(x),
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
                if x > lo && x < hi { 1.0 } else { 0.0 }
            }
            UnaryOp::Erf => std::f32::consts::FRAC_2_SQRT_PI * exp(-x * x),
        }
    }
}

#[cfg(test)]
mod tests;
