//! Op selectors shared by both backends, and the scalar definition of each op.
//!
//! The `apply` methods are the reference semantics: the CPU backend calls
//! them element by element, and each WGSL kernel mirrors them (the `code()`
//! of a variant is the selector value the kernels switch on).

// Re-exported where they have always been: the CPU loops call them as
// `wgrad_core::ops::{sigmoid, erf}`.
pub use crate::math::{erf, sigmoid};
pub use divmod::{floor_divide_f32, remainder_f32};
pub use unary::UnaryOp;

mod divmod;
mod scalar;
mod unary;

/// Elementwise binary arithmetic on f32 (and, for the ops where
/// [`BinaryOp::keeps_int`] holds, on I32 through [`BinaryOp::apply_i32`]).
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
    /// `floor(a / b)` (`torch.div(a, b, rounding_mode="floor")`, Python's
    /// `//`); on f32 computed as PyTorch does (see [`floor_divide_f32`]).
    FloorDiv,
    /// `a - floor(a / b) * b` with the divisor's sign (`torch.remainder`,
    /// Python's `%`); on f32 see [`remainder_f32`].
    Remainder,
}

impl BinaryOp {
    /// Every variant, in `code()` order. The WGSL selector constants
    /// (`BINARY_ADD`, ...) are generated from this list, and a test checks
    /// that every kernel switching on a `BinaryOp` has a case for each.
    pub const ALL: [BinaryOp; 9] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::FloorDiv,
        BinaryOp::Remainder,
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
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::Remainder => "remainder",
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
            BinaryOp::FloorDiv => floor_divide_f32(a, b),
            BinaryOp::Remainder => remainder_f32(a, b),
        }
    }
    /// The unary op that `op(x, scalar)` on an f32 tensor runs instead, as
    /// PyTorch's pow kernel does: `x ** 0.5` is `sqrt` and `x ** -0.5` is
    /// `rsqrt`. They differ from C `pow` at `-0.0` (`sqrt(-0.0) = -0.0`,
    /// `rsqrt(-0.0) = -inf`, where `pow` gives `+0.0` and `+inf`), and so
    /// does the gradient of `x ** 0.5`, `0.5 * x ** -0.5`: `-inf` at `-0.0`,
    /// as in PyTorch. Both backends' `binary_scalar` ask this first.
    pub fn scalar_as_unary(self, scalar: f32, scalar_on_left: bool) -> Option<UnaryOp> {
        match (self, scalar_on_left) {
            (BinaryOp::Pow, false) if scalar == 0.5 => Some(UnaryOp::Sqrt),
            (BinaryOp::Pow, false) if scalar == -0.5 => Some(UnaryOp::Rsqrt),
            _ => None,
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

#[cfg(test)]
mod tests;
