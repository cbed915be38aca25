//! The 16-bit float dtypes (F16, BF16) in every computing op.
//!
//! The backends store and move half tensors (creation, views, copies, casts,
//! in-place writes) but compute only in F32. Every computing `Storage`
//! method therefore goes through here: half operands are cast to F32 on
//! their device, the F32 op runs, and an F32 result is rounded once to the
//! result's dtype. That is PyTorch's arithmetic for these dtypes too (its
//! kernels load halves, compute in `opmath_type` = float and round the
//! result), so results match it; reductions, softmax and matrix products
//! accumulate in f32 as PyTorch's do.

use wgrad_core::{BinaryOp, DType, Result};

use super::Storage;

/// The dtype a half-aware op's F32 result is rounded to: the 16-bit dtype
/// shared by every float operand, or `None` (F32 result) when there is no
/// half operand or the float operands' dtypes differ (F16 with F32 or BF16
/// promotes to F32, as in PyTorch).
///
/// As in PyTorch, a 0-d float operand does not promote dimensioned ones
/// (`torch.where(mask, x_f16, torch.tensor(0.0))` stays float16).
fn result_half(operands: &[&Storage]) -> Option<DType> {
    let floats = |dimensioned: bool| {
        operands
            .iter()
            .filter(move |s| s.dtype().is_float() && (!dimensioned || !s.shape().is_empty()))
            .map(|s| s.dtype())
    };
    let mut decisive = floats(true).peekable();
    let mut floats: Box<dyn Iterator<Item = DType>> = if decisive.peek().is_some() {
        Box::new(decisive)
    } else {
        Box::new(floats(false))
    };
    let first = floats.next()?;
    (first.is_half() && floats.all(|d| d == first)).then_some(first)
}

/// `scalar` as the 16-bit `dtype` holds it: PyTorch converts a Python
/// number operand (and clamp's bounds) to the tensor's dtype before the
/// op, which decides ties (`maximum(x, 0.3)`'s gradient where `x` equals
/// the rounded 0.3, clamp's at its bounds).
pub(super) fn round_scalar(scalar: f32, dtype: DType) -> f32 {
    match dtype {
        DType::F16 => half::f16::from_f32(scalar).to_f32(),
        DType::BF16 => half::bf16::from_f32(scalar).to_f32(),
        _ => scalar,
    }
}

/// `op` with the bounds it compares against rounded as [`round_scalar`]
/// (clamp, hardtanh); other parameters (slopes, beta) stay f32, as
/// PyTorch's kernels compute them in `opmath_type`.
pub(super) fn round_bounds(op: wgrad_core::UnaryOp, dtype: DType) -> wgrad_core::UnaryOp {
    use wgrad_core::UnaryOp;
    match op {
        UnaryOp::Clamp { min, max } => UnaryOp::Clamp {
            min: min.map(|m| round_scalar(m, dtype)),
            max: max.map(|m| round_scalar(m, dtype)),
        },
        UnaryOp::Hardtanh { min, max } => UnaryOp::Hardtanh {
            min: round_scalar(min, dtype),
            max: round_scalar(max, dtype),
        },
        other => other,
    }
}

/// Whether PyTorch's gradient of `op` reads the op's result rather than
/// its input (derivatives.yaml: `grad * result` for exp, `tanh_backward(grad,
/// result)`, ...). For a 16-bit input that result is rounded to its dtype,
/// so the gradient must be computed from the rounded value to be PyTorch's
/// (from the input, a bf16 sigmoid's gradient near saturation can differ in
/// every bit: PyTorch's y rounds to 1 and y (1 - y) to 0).
pub(super) fn grad_from_output(op: wgrad_core::UnaryOp) -> bool {
    use wgrad_core::UnaryOp;
    matches!(
        op,
        UnaryOp::Sigmoid
            | UnaryOp::Tanh
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Recip
    )
}

/// The gradient of `x.unary(op)` (x a 16-bit float, [`grad_from_output`])
/// given the upstream gradient `g`, from the rounded result as PyTorch
/// computes it: sigmoid and tanh through their fused backward kernels (in
/// f32, rounded once), the others as the composition of half ops that
/// derivatives.yaml spells out, each rounded.
pub(super) fn unary_backward_from_output(
    g: &Storage,
    x: &Storage,
    op: wgrad_core::UnaryOp,
) -> Result<Storage> {
    use wgrad_core::UnaryOp;
    let y = x.unary(op)?;
    let scalar = |s: &Storage, op: BinaryOp, v: f32| s.binary_scalar(op, v, false);
    match op {
        UnaryOp::Sigmoid | UnaryOp::Tanh => {
            let to = half_of(g).or(half_of(x));
            let (g, y) = (widen(g)?, widen(&y)?);
            // sigmoid_backward: g (1 - y) y; tanh_backward: g (1 - y y).
            let d = if op == UnaryOp::Sigmoid {
                let one_minus = y.binary_scalar(BinaryOp::Sub, 1.0, true)?;
                g.binary(&one_minus, BinaryOp::Mul)?
                    .binary(&y, BinaryOp::Mul)?
            } else {
                let one_minus =
                    y.binary(&y, BinaryOp::Mul)?
                        .binary_scalar(BinaryOp::Sub, 1.0, true)?;
                g.binary(&one_minus, BinaryOp::Mul)?
            };
            narrow(d, to)
        }
        // grad * result
        UnaryOp::Exp => g.binary(&y, BinaryOp::Mul),
        // grad * (result + 1)
        UnaryOp::Expm1 => g.binary(&scalar(&y, BinaryOp::Add, 1.0)?, BinaryOp::Mul),
        // grad / (2 * result)
        UnaryOp::Sqrt => g.binary(&scalar(&y, BinaryOp::Mul, 2.0)?, BinaryOp::Div),
        // -0.5 * grad * result.pow(3)
        UnaryOp::Rsqrt => {
            scalar(g, BinaryOp::Mul, -0.5)?.binary(&scalar(&y, BinaryOp::Pow, 3.0)?, BinaryOp::Mul)
        }
        // -grad * (result * result)
        UnaryOp::Recip => g
            .unary(UnaryOp::Neg)?
            .binary(&y.binary(&y, BinaryOp::Mul)?, BinaryOp::Mul),
        _ => Err(wgrad_core::Error::invalid(
            op.name(),
            "no gradient from the output for this op",
        )),
    }
}

/// `s` with a 16-bit float widened to F32 (other dtypes unchanged; a clone
/// is a cheap handle copy).
pub(super) fn widen(s: &Storage) -> Result<Storage> {
    if s.dtype().is_half() {
        s.cast(DType::F32)
    } else {
        Ok(s.clone())
    }
}

/// `out` rounded to `to` when it is an F32 result of a half op (masks and
/// indices pass through).
pub(super) fn narrow(out: Storage, to: Option<DType>) -> Result<Storage> {
    match to {
        Some(half) if out.dtype() == DType::F32 => out.cast(half),
        _ => Ok(out),
    }
}

/// Runs `f` on the operands with every half one widened to F32 and rounds
/// its F32 result to their shared half dtype. Without a half operand, `f`
/// sees the operands themselves.
pub(super) fn compute<const N: usize>(
    operands: [&Storage; N],
    f: impl FnOnce([&Storage; N]) -> Result<Storage>,
) -> Result<Storage> {
    if !operands.iter().any(|s| s.dtype().is_half()) {
        return f(operands);
    }
    let to = result_half(&operands);
    let owned = widen_all(operands)?;
    narrow(f(owned.each_ref())?, to)
}

/// Every operand through [`widen`].
pub(super) fn widen_all<const N: usize>(operands: [&Storage; N]) -> Result<[Storage; N]> {
    let mut owned = Vec::with_capacity(N);
    for s in operands {
        owned.push(widen(s)?);
    }
    owned
        .try_into()
        .map_err(|_| wgrad_core::Error::invalid("widen", "operand count changed"))
}

/// `s`'s dtype when it is a 16-bit float: what a result computed from it in
/// F32 is rounded to.
pub(super) fn half_of(s: &Storage) -> Option<DType> {
    s.dtype().is_half().then_some(s.dtype())
}

/// [`compute`] for ops with two results (values and indices).
pub(super) fn compute2(
    s: &Storage,
    f: impl FnOnce(&Storage) -> Result<(Storage, Storage)>,
) -> Result<(Storage, Storage)> {
    if !s.dtype().is_half() {
        return f(s);
    }
    let (a, b) = f(&widen(s)?)?;
    let to = Some(s.dtype());
    Ok((narrow(a, to)?, narrow(b, to)?))
}

/// The dtype of `a (op) b` for tensors of which at least one is a 16-bit
/// float, after PyTorch's promotion: float beats integer; two floats of
/// different width promote to the wider (F16 with BF16 to F32); and a 0-d
/// tensor does not promote a dimensioned one of the same category
/// (`x_f16 * torch.tensor(2.0)` stays float16).
pub(super) fn binary_result(a: &Storage, b: &Storage) -> DType {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return da;
    }
    match (da.is_float(), db.is_float()) {
        (true, false) => da,
        (false, true) => db,
        _ => {
            let (a0, b0) = (a.shape().is_empty(), b.shape().is_empty());
            if a0 && !b0 {
                db
            } else if b0 && !a0 {
                da
            } else {
                DType::F32
            }
        }
    }
}

/// The operands of a binary op or comparison as PyTorch's CPU kernels see
/// them when the result is a 16-bit float: every operand is first converted
/// to the common dtype (a 0-d F32 tensor, an I32 tensor, the other 16-bit
/// dtype: `x_f16 - torch.tensor(4.0653)` subtracts 4.0664), except a 0-d
/// right operand of mul, div and floor division, which those kernels read
/// in float (the rule [`Storage::binary_scalar`] follows for Python
/// numbers). `None` when nothing needs converting.
pub(super) fn common_operands(
    a: &Storage,
    b: &Storage,
    op: Option<BinaryOp>,
) -> Result<Option<(Storage, Storage)>> {
    if !a.dtype().is_half() && !b.dtype().is_half() {
        return Ok(None);
    }
    let to = binary_result(a, b);
    let float_right = b.shape().is_empty()
        && matches!(op, Some(BinaryOp::Mul | BinaryOp::Div | BinaryOp::FloorDiv));
    let convert_a = a.dtype() != to;
    let convert_b = b.dtype() != to && !float_right;
    if !to.is_half() || !(convert_a || convert_b) {
        return Ok(None);
    }
    let a = if convert_a { a.cast(to)? } else { a.clone() };
    let b = if convert_b { b.cast(to)? } else { b.clone() };
    Ok(Some((a, b)))
}

/// The dtype PyTorch's `torch.cat` promotes `parts` to (`None` when they
/// all share one): the float one beats integers, two different floats give
/// F32, an I32 beats a U32 mask.
pub(super) fn concat_dtype(parts: &[&Storage]) -> Option<DType> {
    let first = parts.first()?.dtype();
    if parts.iter().all(|p| p.dtype() == first) {
        return None;
    }
    let promoted = parts.iter().skip(1).fold(first, |acc, p| {
        let d = p.dtype();
        match (acc.is_float(), d.is_float()) {
            _ if acc == d => acc,
            (true, true) => DType::F32,
            (true, false) => acc,
            (false, true) => d,
            (false, false) => DType::I32,
        }
    });
    Some(promoted)
}

/// A binary op with a half operand: both sides widened, the F32 result
/// rounded to [`binary_result`] (masks of comparisons pass through).
pub(super) fn binary(
    a: &Storage,
    b: &Storage,
    f: impl FnOnce(&Storage, &Storage) -> Result<Storage>,
) -> Result<Storage> {
    if !a.dtype().is_half() && !b.dtype().is_half() {
        return f(a, b);
    }
    let to = binary_result(a, b);
    let out = f(&widen(a)?, &widen(b)?)?;
    narrow(out, to.is_half().then_some(to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn t(dtype: DType, shape: &[usize]) -> Storage {
        Storage::full(shape, 1.0, dtype, &Device::Cpu).unwrap()
    }

    #[test]
    fn promotion_follows_torch() {
        let (h, b, f, i) = (DType::F16, DType::BF16, DType::F32, DType::I32);
        assert_eq!(binary_result(&t(h, &[2]), &t(h, &[2])), h);
        assert_eq!(binary_result(&t(h, &[2]), &t(f, &[2])), f);
        assert_eq!(binary_result(&t(h, &[2]), &t(f, &[])), h);
        assert_eq!(binary_result(&t(f, &[]), &t(b, &[3])), b);
        assert_eq!(binary_result(&t(h, &[2]), &t(b, &[2])), f);
        assert_eq!(binary_result(&t(i, &[2]), &t(h, &[])), h);
        assert_eq!(binary_result(&t(h, &[]), &t(f, &[])), f);
        assert_eq!(result_half(&[&t(h, &[2]), &t(i, &[2])]), Some(h));
        assert_eq!(result_half(&[&t(h, &[2]), &t(f, &[2])]), None);
    }
}
