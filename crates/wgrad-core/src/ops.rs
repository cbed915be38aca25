//! Op selectors shared by both backends, and the scalar definition of each op.
//!
//! The `apply` methods are the reference semantics: the CPU backend calls
//! them element by element, and each WGSL kernel mirrors them (the `code()`
//! of a variant is the selector value the kernels switch on).

/// Elementwise binary arithmetic on f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

impl BinaryOp {
    /// Selector value passed to `kernels/elementwise/binary.wgsl`.
    pub fn code(self) -> u32 {
        self as u32
    }
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
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    pub fn code(self) -> u32 {
        self as u32
    }
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
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Gelu,
    Silu,
    Square,
    Recip,
    LeakyRelu {
        slope: f32,
    },
    /// `None` bounds are open (use `f32::NEG_INFINITY`/`INFINITY` in kernels).
    Clamp {
        min: Option<f32>,
        max: Option<f32>,
    },
}

impl UnaryOp {
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
        }
    }
    pub fn apply(self, x: f32) -> f32 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => sigmoid(x),
            UnaryOp::Relu => {
                if x > 0.0 {
                    x
                } else {
                    0.0
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
        }
    }
}

/// Logistic sigmoid, written to avoid overflow for large |x|.
pub fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Error function, Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7). The WGSL
/// kernels use the same formula, so CPU and GPU GELU agree.
pub fn erf(x: f32) -> f32 {
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    sign * (1.0 - poly * (-x * x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!(
                (erf(x) - want).abs() < 5e-7,
                "erf({x}) = {} want {want}",
                erf(x)
            );
        }
    }

    #[test]
    fn gelu_matches_torch() {
        // torch.nn.functional.gelu(torch.tensor([-1.0, 0.5, 2.0]))
        let want = [-0.158_655_25, 0.345_731_14, 1.954_499_8];
        for (x, w) in [-1.0f32, 0.5, 2.0].into_iter().zip(want) {
            assert!((UnaryOp::Gelu.apply(x) - w).abs() < 1e-6);
        }
    }
}
