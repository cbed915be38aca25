//! Elementwise ops: binary arithmetic, comparisons, `where_cond`, unary math
//! and casts. The meaning of each op is `wgrad_core::ops::*::apply`; this
//! file only handles dtypes, broadcasting and iteration.

use ndarray::{ArrayD, ArrayViewD, IxDyn, Zip};
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, UnaryOp};

use crate::tensor::{CpuTensor, expect_dtype, unsupported};

/// Generates the named wrappers of a selector-based op.
macro_rules! named_ops {
    ($(#[$doc:meta] $name:ident => $via:ident($op:expr);)*) => {
        $(
            #[$doc]
            pub fn $name(&self, other: &CpuTensor) -> Result<Self> {
                self.$via(other, $op)
            }
        )*
    };
}

/// Generates the named wrappers of a scalar op.
macro_rules! named_scalar_ops {
    ($(#[$doc:meta] $name:ident => $via:ident($op:expr);)*) => {
        $(
            #[$doc]
            pub fn $name(&self, scalar: f32) -> Result<Self> {
                self.$via($op, scalar)
            }
        )*
    };
}

/// Generates the named wrappers of a unary op.
macro_rules! named_unary_ops {
    ($($name:ident => $op:expr;)*) => {
        $(
            #[doc = concat!("Elementwise `", stringify!($name), "` (see `UnaryOp::apply`).")]
            pub fn $name(&self) -> Result<Self> {
                self.unary($op)
            }
        )*
    };
}

impl CpuTensor {
    /// `op(self, other)` elementwise with NumPy/PyTorch broadcasting; both F32.
    pub fn binary(&self, other: &CpuTensor, op: BinaryOp) -> Result<Self> {
        let name = op.name();
        expect_dtype(name, self, DType::F32)?;
        expect_dtype(name, other, DType::F32)?;
        let shape = broadcast_shapes(name, self.shape(), other.shape())?;
        let (a, b) = (self.expand(&shape)?, other.expand(&shape)?);
        let (av, bv) = (a.as_f32()?, b.as_f32()?);
        let mut out = ArrayD::<f32>::zeros(IxDyn(&shape));
        Zip::from(&mut out)
            .and(&av)
            .and(&bv)
            .for_each(|o, &x, &y| *o = op.apply(x, y));
        CpuTensor::from_array(out)
    }

    /// `op(self, scalar)` elementwise, or `op(scalar, self)` if
    /// `scalar_on_left` (e.g. `1 - x`, `2 ^ x`); F32 only.
    pub fn binary_scalar(&self, op: BinaryOp, scalar: f32, scalar_on_left: bool) -> Result<Self> {
        let view = self.f32_input(op.name())?;
        let data: Vec<f32> = if scalar_on_left {
            view.iter().map(|&x| op.apply(scalar, x)).collect()
        } else {
            view.iter().map(|&x| op.apply(x, scalar)).collect()
        };
        CpuTensor::from_vec(data, self.shape())
    }

    named_ops! {
        /// `self + other` with broadcasting.
        add => binary(BinaryOp::Add);
        /// `self - other` with broadcasting.
        sub => binary(BinaryOp::Sub);
        /// `self * other` with broadcasting.
        mul => binary(BinaryOp::Mul);
        /// `self / other` with broadcasting.
        div => binary(BinaryOp::Div);
        /// `self.powf(other)` with broadcasting (NaN for a negative base and a non-integer exponent).
        pow => binary(BinaryOp::Pow);
        /// NaN-propagating elementwise maximum with broadcasting.
        maximum => binary(BinaryOp::Maximum);
        /// NaN-propagating elementwise minimum with broadcasting.
        minimum => binary(BinaryOp::Minimum);
        /// U32 mask of `self == other`.
        eq => compare(CompareOp::Eq);
        /// U32 mask of `self != other`.
        ne => compare(CompareOp::Ne);
        /// U32 mask of `self < other`.
        lt => compare(CompareOp::Lt);
        /// U32 mask of `self <= other`.
        le => compare(CompareOp::Le);
        /// U32 mask of `self > other`.
        gt => compare(CompareOp::Gt);
        /// U32 mask of `self >= other`.
        ge => compare(CompareOp::Ge);
    }

    /// `op(self, scalar)` (scalar on the right).
    fn binary_scalar_right(&self, op: BinaryOp, scalar: f32) -> Result<Self> {
        self.binary_scalar(op, scalar, false)
    }

    named_scalar_ops! {
        /// `self + scalar`.
        add_scalar => binary_scalar_right(BinaryOp::Add);
        /// `self - scalar`.
        sub_scalar => binary_scalar_right(BinaryOp::Sub);
        /// `self * scalar`.
        mul_scalar => binary_scalar_right(BinaryOp::Mul);
        /// `self / scalar`.
        div_scalar => binary_scalar_right(BinaryOp::Div);
        /// `self.powf(scalar)`.
        pow_scalar => binary_scalar_right(BinaryOp::Pow);
        /// NaN-propagating `max(self, scalar)`.
        maximum_scalar => binary_scalar_right(BinaryOp::Maximum);
        /// NaN-propagating `min(self, scalar)`.
        minimum_scalar => binary_scalar_right(BinaryOp::Minimum);
        /// U32 mask of `self == scalar`.
        eq_scalar => compare_scalar(CompareOp::Eq);
        /// U32 mask of `self != scalar`.
        ne_scalar => compare_scalar(CompareOp::Ne);
        /// U32 mask of `self < scalar`.
        lt_scalar => compare_scalar(CompareOp::Lt);
        /// U32 mask of `self <= scalar`.
        le_scalar => compare_scalar(CompareOp::Le);
        /// U32 mask of `self > scalar`.
        gt_scalar => compare_scalar(CompareOp::Gt);
        /// U32 mask of `self >= scalar`.
        ge_scalar => compare_scalar(CompareOp::Ge);
    }

    /// Elementwise comparison with broadcasting; inputs both F32 or both
    /// I32; output a U32 mask of 0/1.
    pub fn compare(&self, other: &CpuTensor, op: CompareOp) -> Result<Self> {
        let name = op.name();
        check_comparable(name, self)?;
        expect_dtype(name, other, self.dtype())?;
        let shape = broadcast_shapes(name, self.shape(), other.shape())?;
        let (a, b) = (self.expand(&shape)?, other.expand(&shape)?);
        let mut out = ArrayD::<u32>::zeros(IxDyn(&shape));
        match self.dtype() {
            DType::I32 => Zip::from(&mut out)
                .and(&a.as_i32()?)
                .and(&b.as_i32()?)
                .for_each(|o, &x, &y| *o = u32::from(op.apply(x, y))),
            _ => Zip::from(&mut out)
                .and(&a.as_f32()?)
                .and(&b.as_f32()?)
                .for_each(|o, &x, &y| *o = u32::from(op.apply(x, y))),
        }
        CpuTensor::from_array(out)
    }

    /// Compares every element with `scalar`; output a U32 mask. I32 inputs
    /// are compared exactly in f64 (so `lt_scalar(2.5)` is true for 2, as
    /// with PyTorch's type promotion).
    pub fn compare_scalar(&self, op: CompareOp, scalar: f32) -> Result<Self> {
        check_comparable(op.name(), self)?;
        let data: Vec<u32> = match self.dtype() {
            DType::I32 => self
                .as_i32()?
                .iter()
                .map(|&x| u32::from(op.apply(f64::from(x), f64::from(scalar))))
                .collect(),
            _ => self
                .as_f32()?
                .iter()
                .map(|&x| u32::from(op.apply(x, scalar)))
                .collect(),
        };
        CpuTensor::from_vec(data, self.shape())
    }

    /// `mask != 0 ? a : b` elementwise; `mask` U32, `a`/`b` F32, all three
    /// broadcast together.
    pub fn where_cond(mask: &CpuTensor, a: &CpuTensor, b: &CpuTensor) -> Result<Self> {
        const OP: &str = "where_cond";
        expect_dtype(OP, mask, DType::U32)?;
        expect_dtype(OP, a, DType::F32)?;
        expect_dtype(OP, b, DType::F32)?;
        let shape = broadcast_shapes(OP, mask.shape(), a.shape())?;
        let shape = broadcast_shapes(OP, &shape, b.shape())?;
        let (m, a, b) = (mask.expand(&shape)?, a.expand(&shape)?, b.expand(&shape)?);
        let mut out = ArrayD::<f32>::zeros(IxDyn(&shape));
        Zip::from(&mut out)
            .and(&m.as_u32()?)
            .and(&a.as_f32()?)
            .and(&b.as_f32()?)
            .for_each(|o, &m, &x, &y| *o = if m != 0 { x } else { y });
        CpuTensor::from_array(out)
    }

    /// Applies `op` to every element; F32 only.
    pub fn unary(&self, op: UnaryOp) -> Result<Self> {
        let view = self.f32_input(op.name())?;
        let data: Vec<f32> = view.iter().map(|&x| op.apply(x)).collect();
        CpuTensor::from_vec(data, self.shape())
    }

    named_unary_ops! {
        neg => UnaryOp::Neg;
        abs => UnaryOp::Abs;
        exp => UnaryOp::Exp;
        log => UnaryOp::Log;
        sqrt => UnaryOp::Sqrt;
        rsqrt => UnaryOp::Rsqrt;
        sin => UnaryOp::Sin;
        cos => UnaryOp::Cos;
        tanh => UnaryOp::Tanh;
        sigmoid => UnaryOp::Sigmoid;
        relu => UnaryOp::Relu;
        gelu => UnaryOp::Gelu;
        silu => UnaryOp::Silu;
        square => UnaryOp::Square;
        recip => UnaryOp::Recip;
    }

    /// `x` for `x > 0`, else `slope * x`.
    pub fn leaky_relu(&self, slope: f32) -> Result<Self> {
        self.unary(UnaryOp::LeakyRelu { slope })
    }

    /// Clamps into `[min, max]`; a `None` bound is open. NaN stays NaN.
    pub fn clamp(&self, min: Option<f32>, max: Option<f32>) -> Result<Self> {
        self.unary(UnaryOp::Clamp { min, max })
    }

    /// Converts to `dtype` with Rust `as` semantics: F32 -> I32/U32 truncates
    /// toward zero and saturates (NaN -> 0); U32 mask -> F32 gives 0.0/1.0;
    /// I32 <-> U32 reinterpret two's complement, like PyTorch's wrap-around.
    pub fn cast(&self, dtype: DType) -> Result<Self> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let shape = self.shape();
        match (self.dtype(), dtype) {
            (DType::F32, DType::I32) => Self::from_vec(map(&self.as_f32()?, |x| x as i32), shape),
            (DType::F32, DType::U32) => Self::from_vec(map(&self.as_f32()?, |x| x as u32), shape),
            (DType::U32, DType::F32) => Self::from_vec(map(&self.as_u32()?, |x| x as f32), shape),
            (DType::U32, DType::I32) => Self::from_vec(map(&self.as_u32()?, |x| x as i32), shape),
            (DType::I32, DType::F32) => Self::from_vec(map(&self.as_i32()?, |x| x as f32), shape),
            (DType::I32, DType::U32) => Self::from_vec(map(&self.as_i32()?, |x| x as u32), shape),
            (_, other) => Err(unsupported("cast", other)),
        }
    }

    /// The f32 view of an input that must be F32, errors naming `op`.
    pub(crate) fn f32_input(&self, op: &'static str) -> Result<ArrayViewD<'_, f32>> {
        expect_dtype(op, self, DType::F32)?;
        self.as_f32()
    }
}

/// Maps a view into a row-major vector.
fn map<A: Copy, B>(view: &ArrayViewD<'_, A>, f: impl Fn(A) -> B) -> Vec<B> {
    view.iter().map(|&x| f(x)).collect()
}

/// Comparisons accept F32 or I32 (masks are not ordered data).
fn check_comparable(op: &'static str, t: &CpuTensor) -> Result<()> {
    match t.dtype() {
        DType::F32 | DType::I32 => Ok(()),
        got => Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got,
        }),
    }
}
