//! Elementwise ops: binary arithmetic, comparisons, `where_cond`, unary math
//! and casts. The meaning of each op is `wgrad_core::ops::*::apply`; this
//! file only handles dtypes, broadcasting and iteration.

use bytemuck::Zeroable;
use ndarray::{ArrayViewD, Zip};
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{BinaryOp, CompareOp, DType, Result, UnaryOp, checks};

use crate::alloc::{self, AllocError, During};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype, unsupported};

/// Runs `$body` with `$f` bound to a closure computing `op.apply(a, b)`.
/// The four arithmetic ops get their IEEE operator directly, which is
/// exactly what `BinaryOp::apply` computes for them, so the loop compiles
/// to vector code instead of a call and a `match` per element.
macro_rules! dispatch_binary {
    ($op:expr, $f:ident => $body:expr) => {
        match $op {
            BinaryOp::Add => {
                let $f = |a: f32, b: f32| a + b;
                $body
            }
            BinaryOp::Sub => {
                let $f = |a: f32, b: f32| a - b;
                $body
            }
            BinaryOp::Mul => {
                let $f = |a: f32, b: f32| a * b;
                $body
            }
            BinaryOp::Div => {
                let $f = |a: f32, b: f32| a / b;
                $body
            }
            op => {
                let $f = move |a: f32, b: f32| op.apply(a, b);
                $body
            }
        }
    };
}

/// Runs `$body` with `$f` bound to a closure computing `op.apply(x)`, with
/// ReLU, negation, exp, sigmoid and GELU written out (the same functions
/// `UnaryOp::apply` calls) so that their loops vectorise.
macro_rules! dispatch_unary {
    ($op:expr, $f:ident => $body:expr) => {
        match $op {
            UnaryOp::Exp => {
                let $f = wgrad_core::math::exp;
                $body
            }
            UnaryOp::Sigmoid => {
                let $f = wgrad_core::ops::sigmoid;
                $body
            }
            UnaryOp::Relu => {
                let $f = |x: f32| if x <= 0.0 { 0.0 } else { x };
                $body
            }
            UnaryOp::Neg => {
                let $f = |x: f32| -x;
                $body
            }
            UnaryOp::Gelu => {
                let $f = wgrad_core::math::gelu;
                $body
            }
            op => {
                let $f = move |x: f32| op.apply(x);
                $body
            }
        }
    };
}

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

impl CpuTensor {
    /// `op(self, other)` elementwise with NumPy/PyTorch broadcasting; both F32.
    /// Other dtypes follow PyTorch's promotion (I32 with I32 stays I32 for
    /// all but `div` and `pow`; with F32 it computes in F32).
    pub fn binary(&self, other: &CpuTensor, op: BinaryOp) -> Result<Self> {
        let name = op.name();
        if self.dtype() != DType::F32 || other.dtype() != DType::F32 {
            return self.binary_promoted(other, op);
        }
        let shape = broadcast_shapes(name, self.shape(), other.shape())?;
        let cost = binary_cost(op);
        if let Some(data) =
            dispatch_binary!(op, f => dense_binary(self, other, &shape, cost, f)).during(name)?
        {
            return CpuTensor::from_vec(data, &shape);
        }
        let (a, b) = (self.expand(&shape)?, other.expand(&shape)?);
        let (av, bv) = (a.as_f32()?, b.as_f32()?);
        CpuTensor::build(name, &shape, |mut out| {
            Zip::from(&mut out)
                .and(&av)
                .and(&bv)
                .for_each(|o, &x, &y| *o = op.apply(x, y))
        })
    }

    /// `op(self, scalar)` elementwise, or `op(scalar, self)` if
    /// `scalar_on_left` (e.g. `1 - x`, `2 ^ x`); F32 only. `x ^ 0.5` and
    /// `x ^ -0.5` are `sqrt` and `rsqrt`, as in PyTorch
    /// ([`BinaryOp::scalar_as_unary`]).
    /// An I32 tensor with a whole-number scalar stays I32 for the ops that
    /// keep integers (see `checks::arith::scalar_dtype`).
    pub fn binary_scalar(&self, op: BinaryOp, scalar: f32, scalar_on_left: bool) -> Result<Self> {
        let name = op.name();
        if self.dtype() != DType::F32 {
            return self.binary_scalar_promoted(op, scalar, scalar_on_left);
        }
        if let Some(unary) = op.scalar_as_unary(scalar, scalar_on_left) {
            return self.unary(unary);
        }
        let x = self.dense::<f32>(name)?;
        let cost = binary_cost(op);
        let data = dispatch_binary!(op, f => if scalar_on_left {
            parallel::map(&x, cost, |x| f(scalar, x))
        } else {
            parallel::map(&x, cost, |x| f(x, scalar))
        });
        CpuTensor::from_vec(data.during(name)?, self.shape())
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
        /// `floor(self / other)` (`torch.div(.., rounding_mode="floor")`) with broadcasting.
        div_floor => binary(BinaryOp::FloorDiv);
        /// Python-style remainder (the divisor's sign, `torch.remainder`) with broadcasting.
        remainder => binary(BinaryOp::Remainder);
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
        /// `floor(self / scalar)`.
        div_floor_scalar => binary_scalar_right(BinaryOp::FloorDiv);
        /// Python-style `self % scalar`.
        remainder_scalar => binary_scalar_right(BinaryOp::Remainder);
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

    /// Elementwise comparison with broadcasting; inputs F32 or I32 (one of
    /// each compares in F32, PyTorch's promotion); output a U32 mask of 0/1.
    pub fn compare(&self, other: &CpuTensor, op: CompareOp) -> Result<Self> {
        let name = op.name();
        checks::comparable(name, self.dtype())?;
        checks::comparable(name, other.dtype())?;
        if self.dtype() != other.dtype() {
            return self.cast(DType::F32)?.compare(&other.cast(DType::F32)?, op);
        }
        let shape = broadcast_shapes(name, self.shape(), other.shape())?;
        let (a, b) = (self.expand(&shape)?, other.expand(&shape)?);
        match self.dtype() {
            DType::I32 => {
                let (av, bv) = (a.as_i32()?, b.as_i32()?);
                CpuTensor::build(name, &shape, |mut out| {
                    Zip::from(&mut out)
                        .and(&av)
                        .and(&bv)
                        .for_each(|o, &x, &y| *o = u32::from(op.apply(x, y)))
                })
            }
            _ => {
                let (av, bv) = (a.as_f32()?, b.as_f32()?);
                CpuTensor::build(name, &shape, |mut out| {
                    Zip::from(&mut out)
                        .and(&av)
                        .and(&bv)
                        .for_each(|o, &x, &y| *o = u32::from(op.apply(x, y)))
                })
            }
        }
    }

    /// Compares every element with `scalar`; output a U32 mask. I32 inputs
    /// are compared exactly in f64 (so `lt_scalar(2.5)` is true for 2, as
    /// with PyTorch's type promotion).
    pub fn compare_scalar(&self, op: CompareOp, scalar: f32) -> Result<Self> {
        let name = op.name();
        checks::comparable(name, self.dtype())?;
        let data: Vec<u32> = match self.dtype() {
            DType::I32 => parallel::map(&self.dense::<i32>(name)?, 2, |x| {
                u32::from(op.apply(f64::from(x), f64::from(scalar)))
            }),
            _ => parallel::map(&self.dense::<f32>(name)?, 2, |x| {
                u32::from(op.apply(x, scalar))
            }),
        }
        .during(name)?;
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
        let (mv, av, bv) = (m.as_u32()?, a.as_f32()?, b.as_f32()?);
        CpuTensor::build(OP, &shape, |mut out| {
            Zip::from(&mut out)
                .and(&mv)
                .and(&av)
                .and(&bv)
                .for_each(|o, &m, &x, &y| *o = if m != 0 { x } else { y })
        })
    }

    /// Applies `op` to every element; F32 only.
    pub fn unary(&self, op: UnaryOp) -> Result<Self> {
        let name = op.name();
        expect_dtype(name, self, DType::F32)?;
        let x = self.dense::<f32>(name)?;
        let data = dispatch_unary!(op, f => parallel::map(&x, unary_cost(op), f));
        CpuTensor::from_vec(data.during(name)?, self.shape())
    }

    wgrad_core::unary_methods!();

    /// Converts to `dtype` with Rust `as` semantics: F32 -> I32/U32 truncates
    /// toward zero and saturates (NaN -> 0); U32 mask -> F32 gives 0.0/1.0;
    /// I32 <-> U32 reinterpret two's complement, like PyTorch's wrap-around.
    pub fn cast(&self, dtype: DType) -> Result<Self> {
        const OP: &str = "cast";
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let shape = self.shape();
        if self.dtype().is_half() || dtype.is_half() {
            return self.cast_through_f32(dtype);
        }
        match (self.dtype(), dtype) {
            (DType::F32, DType::I32) => {
                Self::from_vec(map(&self.dense::<f32>(OP)?, |x| x as i32)?, shape)
            }
            (DType::F32, DType::U32) => {
                Self::from_vec(map(&self.dense::<f32>(OP)?, |x| x as u32)?, shape)
            }
            (DType::U32, DType::F32) => {
                Self::from_vec(map(&self.dense::<u32>(OP)?, |x| x as f32)?, shape)
            }
            (DType::U32, DType::I32) => {
                Self::from_vec(map(&self.dense::<u32>(OP)?, |x| x as i32)?, shape)
            }
            (DType::I32, DType::F32) => {
                Self::from_vec(map(&self.dense::<i32>(OP)?, |x| x as f32)?, shape)
            }
            (DType::I32, DType::U32) => {
                Self::from_vec(map(&self.dense::<i32>(OP)?, |x| x as u32)?, shape)
            }
            (_, other) => Err(unsupported(OP, other)),
        }
    }

    /// Casts from or to F16/BF16 through f32: widening is exact, narrowing
    /// rounds to nearest even (overflow to inf, NaN kept), as PyTorch's
    /// conversions do; integers go through f32 and then `as`.
    fn cast_through_f32(&self, dtype: DType) -> Result<Self> {
        const OP: &str = "cast";
        let shape = self.shape();
        let wide = match self.dtype() {
            DType::F16 => Self::from_vec(
                map(&self.dense::<half::f16>(OP)?, half::f16::to_f32)?,
                shape,
            )?,
            DType::BF16 => Self::from_vec(
                map(&self.dense::<half::bf16>(OP)?, half::bf16::to_f32)?,
                shape,
            )?,
            _ => self.cast(DType::F32)?,
        };
        match dtype {
            DType::F16 => Self::from_vec(map(&wide.dense::<f32>(OP)?, half::f16::from_f32)?, shape),
            DType::BF16 => {
                Self::from_vec(map(&wide.dense::<f32>(OP)?, half::bf16::from_f32)?, shape)
            }
            other => wide.cast(other),
        }
    }

    /// The f32 view of an input that must be F32, errors naming `op`.
    pub(crate) fn f32_input(&self, op: &'static str) -> Result<ArrayViewD<'_, f32>> {
        expect_dtype(op, self, DType::F32)?;
        self.as_f32()
    }
}

/// Maps row-major elements into a new vector (a cheap conversion each).
fn map<A: Copy + Sync, B: Copy + Zeroable + Send + 'static>(
    xs: &[A],
    f: impl Fn(A) -> B + Sync,
) -> Result<Vec<B>> {
    parallel::map(xs, 1, f).during("cast")
}

/// Relative per-element cost of a binary op, for [`parallel`]'s work
/// estimates.
fn binary_cost(op: BinaryOp) -> usize {
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => 1,
        BinaryOp::Maximum | BinaryOp::Minimum => 2,
        BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Remainder => parallel::HEAVY,
    }
}

/// Relative per-element cost of a unary op (or its derivative), for
/// [`parallel`]'s work estimates: libm calls are far dearer than the rest.
pub(crate) fn unary_cost(op: UnaryOp) -> usize {
    match op {
        UnaryOp::Neg
        | UnaryOp::Abs
        | UnaryOp::Relu
        | UnaryOp::Square
        | UnaryOp::Recip
        | UnaryOp::LeakyRelu { .. }
        | UnaryOp::Clamp { .. } => 2,
        _ => parallel::HEAVY,
    }
}

/// `op(a, b)` over the broadcast `shape` without ndarray's generic
/// iteration, for the layouts that dominate training: both operands dense
/// with equal shapes, one a single element, or one dense over the whole
/// output and the other dense over its trailing dims (a bias row). Returns
/// `None` for any other layout (and an [`AllocError`] if the output does
/// not fit). The operands are F32 (checked by the caller).
pub(crate) fn dense_binary<F>(
    a: &CpuTensor,
    b: &CpuTensor,
    shape: &[usize],
    cost: usize,
    f: F,
) -> Result<Option<Vec<f32>>, AllocError>
where
    F: Fn(f32, f32) -> f32 + Sync,
{
    let (Ok(Some(x)), Ok(Some(y))) = (a.contiguous_slice::<f32>(), b.contiguous_slice::<f32>())
    else {
        return Ok(None);
    };
    let full = |t: &CpuTensor| t.shape() == shape;
    Ok(if full(a) && full(b) {
        Some(parallel::zip_map(x, y, cost, f)?)
    } else if full(a) && y.len() == 1 {
        let y = y[0];
        Some(parallel::map(x, cost, |x| f(x, y))?)
    } else if full(b) && x.len() == 1 {
        let x = x[0];
        Some(parallel::map(y, cost, |y| f(x, y))?)
    } else if full(a) && is_trailing(b.shape(), shape) && !y.is_empty() {
        Some(rows_with(x, y, cost, &f)?)
    } else if full(b) && is_trailing(a.shape(), shape) && !x.is_empty() {
        Some(rows_with(y, x, cost, |y, x| f(x, y))?)
    } else if let (true, Some(inner)) = (full(a) && !y.is_empty(), spread_inner(b.shape(), shape)) {
        Some(blocks_with(x, y, inner, cost, &f)?)
    } else if let (true, Some(inner)) = (full(b) && !x.is_empty(), spread_inner(a.shape(), shape)) {
        Some(blocks_with(y, x, inner, cost, |y, x| f(x, y))?)
    } else {
        None
    })
}

/// Whether a tensor of `small` shape broadcasts to `shape` by repeating
/// whole rows: `small` without its leading 1s equals the trailing dims.
fn is_trailing(small: &[usize], shape: &[usize]) -> bool {
    let lead = small.iter().take_while(|&&d| d == 1).count();
    let core = &small[lead..];
    shape.ends_with(core)
}

/// For a tensor of `small` shape that broadcasts to `shape` by spreading
/// each of its elements over a block of trailing positions (a per-channel
/// `[C, 1, 1]` bias against `[N, C, H, W]`): the block length, the product
/// of the dims where `small` has trailing 1s. `None` for other layouts, an
/// empty `small`, or no trailing 1s (the [`is_trailing`] case).
fn spread_inner(small: &[usize], shape: &[usize]) -> Option<usize> {
    let ones = small.iter().rev().take_while(|&&d| d == 1).count();
    if ones == 0 || ones == small.len() || small.len() > shape.len() {
        return None;
    }
    let split = shape.len() - ones;
    let inner: usize = shape[split..].iter().product();
    let lead = small.iter().take_while(|&&d| d == 1).count();
    let core = &small[lead..small.len() - ones];
    (inner > 1 && !core.is_empty() && shape[..split].ends_with(core)).then_some(inner)
}

/// `g(big[i], small[(i / inner) % small.len()])` for every element of
/// `big`: each element of `small` spread over `inner` consecutive outputs,
/// the whole pattern repeated down `big`.
fn blocks_with(
    big: &[f32],
    small: &[f32],
    inner: usize,
    cost: usize,
    g: impl Fn(f32, f32) -> f32 + Sync,
) -> Result<Vec<f32>, AllocError> {
    let mut out = alloc::for_overwrite(big.len())?;
    parallel::for_each_row(&mut out, inner, big.len() * cost, |i, o| {
        let q = small[i % small.len()];
        for (o, &p) in o.iter_mut().zip(&big[i * inner..(i + 1) * inner]) {
            *o = g(p, q);
        }
    });
    Ok(out)
}

/// `g(big[i], small[i % small.len()])` for every element of `big`, whose
/// length is a multiple of `small`'s (a row repeated down `big`); `cost`
/// per element.
fn rows_with(
    big: &[f32],
    small: &[f32],
    cost: usize,
    g: impl Fn(f32, f32) -> f32 + Sync,
) -> Result<Vec<f32>, AllocError> {
    let w = small.len();
    let mut out = alloc::for_overwrite(big.len())?;
    parallel::for_each_row(&mut out, w, big.len() * cost, |i, o| {
        for ((o, &p), &q) in o.iter_mut().zip(&big[i * w..(i + 1) * w]).zip(small) {
            *o = g(p, q);
        }
    });
    Ok(out)
}
