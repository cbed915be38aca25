//! Backward rules of the [`MathOp`] nodes (`math.rs`), all on the tensor's
//! own device through existing ops.

use wgrad_core::shape::{normalize_axes, reduced_shape};
use wgrad_core::{BinaryOp, CompareOp, DType, Result, UnaryOp};

use super::math::{MathOp, mask};
use crate::storage::Storage;

/// What a rule may read of its node: input `i` (version-checked), the
/// output, and input `i`'s shape.
pub(crate) struct Inputs<'a> {
    /// Input `i`'s data as the forward pass saw it.
    pub(crate) input: &'a dyn Fn(usize) -> Result<Storage>,
    /// The node's output as the forward pass made it.
    pub(crate) output: &'a dyn Fn() -> Result<Storage>,
    /// Input `i`'s shape.
    pub(crate) shape: &'a dyn Fn(usize) -> Vec<usize>,
}

/// The gradient of each input of `op` given the output's gradient `g`.
pub(crate) fn grads(op: &MathOp, g: &Storage, at: &Inputs<'_>) -> Result<Vec<Option<Storage>>> {
    Ok(match op {
        MathOp::ClampTensor { has_min, has_max } => clamp_grads(*has_min, *has_max, g, at)?,
        MathOp::LogSumExp { axes, keepdim } => {
            let shape = (at.shape)(0);
            let out = expand_reduced(&(at.output)()?, &shape, axes, *keepdim)?;
            let soft = (at.input)(0)?
                .binary(&out, BinaryOp::Sub)?
                .unary(UnaryOp::Exp)?;
            let g = expand_reduced(g, &shape, axes, *keepdim)?;
            vec![Some(g.binary(&soft, BinaryOp::Mul)?)]
        }
        MathOp::Prod { axes, keepdim } => vec![Some(prod_grad(g, at, axes, *keepdim)?)],
        MathOp::Std {
            axes,
            correction,
            keepdim,
        } => {
            // PyTorch's std_backward: var_backward of g / (2 std), 0 where
            // std is 0 (masked_fill).
            let half =
                masked_ratio(g, &(at.output)()?)?.binary_scalar(BinaryOp::Mul, 0.5, false)?;
            let shape = (at.shape)(0);
            let x = (at.input)(0)?;
            vec![Some(var_backward(
                &half,
                &x,
                &shape,
                axes,
                *correction,
                *keepdim,
            )?)]
        }
        MathOp::Norm { p, axes, keepdim } => vec![Some(norm_grad(*p, g, at, axes, *keepdim)?)],
        MathOp::Pointwise(p) => super::pointwise::grads(p, g, at)?,
        MathOp::EvenlyDistributed => vec![Some(evenly_distributed(g, at)?)],
    })
}

/// The gradient of `var(x, axes, correction, keepdim)` given the output's
/// gradient `g`, as PyTorch's `var_backward`: `2 / (n - correction) * g *
/// (x - mean)`. A reduction over every element (`axes` empty, or a 0-d
/// input) with no degree of freedom left (`n <= correction`, where the
/// variance is inf, or NaN for a constant input) gives `g * inf`, and
/// `g * NaN` where `x` equals the mean. Over named axes PyTorch divides by
/// `n - correction` as it is: 0 gives `inf * (x - mean)` and a negative
/// count a finite gradient of the other sign (torch 2.15 gives
/// `[2.6667, 0.6667, -3.3333]` for `var([1, 2, 4], dim=0, correction=4)`),
/// which is kept, for the same numbers as PyTorch.
pub(crate) fn var_backward(
    g: &Storage,
    x: &Storage,
    in_shape: &[usize],
    axes: &[isize],
    correction: usize,
    keepdim: bool,
) -> Result<Storage> {
    let n: usize = normalize_axes("var", axes, in_shape.len())?
        .iter()
        .map(|&a| in_shape[a])
        .product();
    let dof = n as f64 - correction as f64;
    let g = expand_reduced(g, in_shape, axes, keepdim)?;
    if dof <= 0.0 && (axes.is_empty() || in_shape.is_empty()) {
        let device = g.device();
        let at_mean = x.compare(&x.mean(&[], true)?, CompareOp::Eq)?;
        let nan = Storage::full(&[], f64::NAN, DType::F32, &device)?;
        let inf = Storage::full(&[], f64::INFINITY, DType::F32, &device)?;
        return g.binary(&Storage::where_cond(&at_mean, &nan, &inf)?, BinaryOp::Mul);
    }
    let scale = g.binary_scalar(BinaryOp::Mul, (2.0 / dof) as f32, false)?;
    x.binary(&x.mean(axes, true)?, BinaryOp::Sub)?
        .binary(&scale, BinaryOp::Mul)
}

/// Broadcasts a reduction's gradient (or output) back over the reduced axes.
fn expand_reduced(
    g: &Storage,
    in_shape: &[usize],
    axes: &[isize],
    keepdim: bool,
) -> Result<Storage> {
    let axes = normalize_axes("reduce", axes, in_shape.len())?;
    let kept = if keepdim {
        g.clone()
    } else {
        let keep_shape: Vec<isize> = reduced_shape(in_shape, &axes, true)
            .iter()
            .map(|&d| d as isize)
            .collect();
        g.reshape(&keep_shape)?
    };
    kept.expand(in_shape)
}

/// `g / d` elementwise, 0 where `d == 0`.
fn masked_ratio(g: &Storage, d: &Storage) -> Result<Storage> {
    let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
    let ratio = g.binary(d, BinaryOp::Div)?;
    Storage::where_cond(&d.compare_scalar(CompareOp::Eq, 0.0)?, &zero, &ratio)
}

/// `1 - a` elementwise.
fn not(a: &Storage) -> Result<Storage> {
    a.binary_scalar(BinaryOp::Sub, 1.0, true)
}

/// `a + s * b` elementwise (broadcasting).
fn add_scaled(a: &Storage, s: f32, b: &Storage) -> Result<Storage> {
    a.binary(&b.binary_scalar(BinaryOp::Mul, s, false)?, BinaryOp::Add)
}

/// PyTorch 2.15's clamp backward with tensor bounds, as F32 weights of `g`
/// (checked against torch on every combination of NaN, ties and order):
/// one bound behaves as `maximum`/`minimum` (ties share half and half, NaN
/// sends the gradient to both); with both, `x` gets it where neither
/// `x < min` nor `x > max`, `min` where `x < min <= max`, `max` where
/// `max < min` or `x > max >= min`, and a tie of `x` with a bound shares
/// half and half when `min < max`.
fn clamp_grads(
    has_min: bool,
    has_max: bool,
    g: &Storage,
    at: &Inputs<'_>,
) -> Result<Vec<Option<Storage>>> {
    use CompareOp::{Eq, Gt, Lt};
    let x = (at.input)(0)?;
    let weights = match (has_min, has_max) {
        (true, true) => {
            let (lo, hi) = ((at.input)(1)?, (at.input)(2)?);
            let lo_lt_hi = mask(&lo, &hi, Lt)?;
            let lo_le_hi = mask(&lo, &hi, CompareOp::Le)?;
            let half_lo = mask(&x, &lo, Eq)?.binary(&lo_lt_hi, BinaryOp::Mul)?;
            let half_hi = mask(&x, &hi, Eq)?.binary(&lo_lt_hi, BinaryOp::Mul)?;
            let inside =
                not(&mask(&x, &lo, Lt)?)?.binary(&not(&mask(&x, &hi, Gt)?)?, BinaryOp::Mul)?;
            let halves = add_scaled(&half_lo, 1.0, &half_hi)?;
            let w_x = inside.binary(&add_scaled(&not(&halves)?, 0.5, &halves)?, BinaryOp::Mul)?;
            let below = mask(&x, &lo, Lt)?.binary(&lo_le_hi, BinaryOp::Mul)?;
            let w_lo = add_scaled(&below, 0.5, &half_lo)?;
            let above = mask(&x, &hi, Gt)?.binary(&lo_le_hi, BinaryOp::Mul)?;
            let w_hi = add_scaled(
                &mask(&hi, &lo, Lt)?.binary(&above, BinaryOp::Add)?,
                0.5,
                &half_hi,
            )?;
            vec![w_x, w_lo, w_hi]
        }
        (true, false) | (false, true) => {
            let bound = (at.input)(1)?;
            // For min: x loses where x < min, the bound where x > min.
            let (x_loses, b_loses) = if has_min { (Lt, Gt) } else { (Gt, Lt) };
            let tie = mask(&x, &bound, Eq)?;
            let w_x = add_scaled(&not(&mask(&x, &bound, x_loses)?)?, -0.5, &tie)?;
            let w_b = add_scaled(&not(&mask(&x, &bound, b_loses)?)?, -0.5, &tie)?;
            vec![w_x, w_b]
        }
        (false, false) => vec![Storage::full(&[], 1.0, DType::F32, &g.device())?],
    };
    weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            Ok(Some(
                g.binary(w, BinaryOp::Mul)?.sum_to_shape(&(at.shape)(i))?,
            ))
        })
        .collect()
}

/// `prod` backward without dividing by zero: with `P` the product of the
/// non-zero elements of a group and `z` its count of zeros, element `i`
/// gets `P / x_i` when `z = 0`, `P` when `z = 1` and `x_i = 0`, else 0.
fn prod_grad(g: &Storage, at: &Inputs<'_>, axes: &[isize], keepdim: bool) -> Result<Storage> {
    let shape = (at.shape)(0);
    let x = (at.input)(0)?;
    let device = g.device();
    let one = Storage::full(&[], 1.0, DType::F32, &device)?;
    let zero = Storage::full(&[], 0.0, DType::F32, &device)?;
    let is_zero = x.compare_scalar(CompareOp::Eq, 0.0)?;
    let zeros = is_zero.cast(DType::F32)?.sum(axes, true)?;
    let nonzero = Storage::where_cond(&is_zero, &one, &x)?;
    let p = nonzero.prod(axes, true)?;
    let none = zeros.compare_scalar(CompareOp::Eq, 0.0)?;
    let one_zero = zeros.compare_scalar(CompareOp::Eq, 1.0)?;
    let lone = Storage::where_cond(&one_zero, &p, &zero)?;
    let lone = Storage::where_cond(&is_zero, &lone, &zero)?;
    let w = Storage::where_cond(&none, &p.binary(&nonzero, BinaryOp::Div)?, &lone)?;
    expand_reduced(g, &shape, axes, keepdim)?.binary(&w, BinaryOp::Mul)
}

/// Norm backward (p finite, not 0 or 1): `x / ||x||` for p = 2, else
/// `sign(x) |x|^(p-1) / ||x||^(p-1)`; 0 where the norm is 0 and, for the
/// general p, where `x` is 0 (as PyTorch).
fn norm_grad(
    p: f32,
    g: &Storage,
    at: &Inputs<'_>,
    axes: &[isize],
    keepdim: bool,
) -> Result<Storage> {
    let shape = (at.shape)(0);
    if p == 0.0 {
        // The count of non-zeros is piecewise constant.
        return Storage::full(&shape, 0.0, g.dtype(), &g.device());
    }
    let x = (at.input)(0)?;
    let out = (at.output)()?;
    if p.is_infinite() {
        // PyTorch's norm_backward for p = +-inf: the gradient shared evenly
        // between the elements whose |x| is the norm or NaN, times sign(x)
        // (0 at NaN): a NaN norm sends 0 everywhere, where amax's rule
        // would send NaN.
        let abs = x.unary(UnaryOp::Abs)?;
        let norm = expand_reduced(&out, &shape, axes, keepdim)?;
        let picked = abs
            .compare(&norm, CompareOp::Eq)?
            .cast(DType::F32)?
            .binary(
                &abs.compare(&abs, CompareOp::Ne)?.cast(DType::F32)?,
                BinaryOp::Maximum,
            )?;
        let count = picked.sum(axes, true)?;
        let share = expand_reduced(g, &shape, axes, keepdim)?.binary(&count, BinaryOp::Div)?;
        let sign = x.unary(UnaryOp::Sign)?;
        return sign.binary(&share.binary(&picked, BinaryOp::Mul)?, BinaryOp::Mul);
    }
    if p == 2.0 {
        let scale = expand_reduced(&masked_ratio(g, &out)?, &shape, axes, keepdim)?;
        return x.binary(&scale, BinaryOp::Mul);
    }
    let denom = out.binary_scalar(BinaryOp::Pow, p - 1.0, false)?;
    let scale = expand_reduced(&masked_ratio(g, &denom)?, &shape, axes, keepdim)?;
    let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
    let scaled = x.unary(UnaryOp::Sign)?.binary(
        &x.unary(UnaryOp::Abs)?
            .binary_scalar(BinaryOp::Pow, p - 1.0, false)?,
        BinaryOp::Mul,
    )?;
    let scaled = Storage::where_cond(&x.compare_scalar(CompareOp::Eq, 0.0)?, &zero, &scaled)?;
    scaled.binary(&scale, BinaryOp::Mul)
}

/// PyTorch's `evenly_distribute_backward`: `g / count` to each element
/// equal to the (0-d) output, or to each NaN element when it is NaN.
fn evenly_distributed(g: &Storage, at: &Inputs<'_>) -> Result<Storage> {
    let x = (at.input)(0)?;
    let out = (at.output)()?;
    let nan_out = out.compare(&out, CompareOp::Ne)?;
    let same = mask(&x, &out, CompareOp::Eq)?;
    let nan_x = mask(&x, &x, CompareOp::Ne)?;
    let picked = Storage::where_cond(&nan_out, &nan_x, &same)?;
    let count = picked.sum(&[], false)?;
    let share = g.binary(&count, BinaryOp::Div)?;
    let zero = Storage::full(&[], 0.0, share.dtype(), &share.device())?;
    let share = share.expand(x.shape())?;
    Storage::where_cond(&picked.compare_scalar(CompareOp::Ne, 0.0)?, &share, &zero)
}
