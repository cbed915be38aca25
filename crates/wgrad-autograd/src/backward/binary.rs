//! The backward rules of the binary ops, tensor with tensor and tensor
//! with scalar (PyTorch's formulas and limits), each computing only what
//! the inputs that require grad need.

use wgrad_core::{BinaryOp, CompareOp, DType, Result, UnaryOp};

use super::Saved;
use crate::storage::Storage;

/// The gradients of `a (op) b` for the inputs that need one (`need`): an
/// input that does not require grad costs no dispatch (PyTorch computes
/// only the needed ones too; `x * mask`'s mask side, a divisor that is a
/// count).
pub(super) fn binary_grads(
    op: BinaryOp,
    g: &Storage,
    saved: &Saved,
    need: [bool; 2],
) -> Result<[Option<Storage>; 2]> {
    use BinaryOp::*;
    let [need_a, need_b] = need;
    let when = |cond: bool, f: &dyn Fn() -> Result<Storage>| -> Result<Option<Storage>> {
        if cond { f().map(Some) } else { Ok(None) }
    };
    Ok(match op {
        Add => [
            when(need_a, &|| Ok(g.clone()))?,
            when(need_b, &|| Ok(g.clone()))?,
        ],
        Sub => [
            when(need_a, &|| Ok(g.clone()))?,
            when(need_b, &|| g.unary(UnaryOp::Neg))?,
        ],
        Mul => [
            when(need_a, &|| g.binary(&saved.input(1)?, Mul))?,
            when(need_b, &|| g.binary(&saved.input(0)?, Mul))?,
        ],
        Div => {
            if !need_a && !need_b {
                return Ok([None, None]);
            }
            let ga = g.binary(&saved.input(1)?, Div)?;
            // d(a/b)/db = -a/b^2 = -out/b
            let gb = when(need_b, &|| {
                ga.binary(&saved.output()?, Mul)?.unary(UnaryOp::Neg)
            })?;
            [need_a.then_some(ga), gb]
        }
        Pow => {
            // d/da = b * a^(b-1); d/db = out * ln(a). Where those formulas
            // give 0 * inf = NaN, torch defines the limits instead: d/da = 0
            // where b == 0, and d/db = 0 where a == 0 and b >= 0.
            let zero = || Storage::full(&[], 0.0, DType::F32, &g.device());
            let ga = when(need_a, &|| {
                let (a, b) = (saved.input(0)?, saved.input(1)?);
                let ga = g.binary(
                    &b.binary(&a.binary(&b.binary_scalar(Sub, 1.0, false)?, Pow)?, Mul)?,
                    Mul,
                )?;
                Storage::where_cond(&b.compare_scalar(CompareOp::Ne, 0.0)?, &ga, &zero()?)
            })?;
            let gb = when(need_b, &|| {
                let (a, b, out) = (saved.input(0)?, saved.input(1)?, saved.output()?);
                let gb = g.binary(&out.binary(&a.unary(UnaryOp::Log)?, Mul)?, Mul)?;
                // 1 exactly where a == 0 and b >= 0 (a product of 0/1 masks).
                let limit = a
                    .compare_scalar(CompareOp::Eq, 0.0)?
                    .cast(DType::F32)?
                    .binary(
                        &b.compare_scalar(CompareOp::Ge, 0.0)?.cast(DType::F32)?,
                        Mul,
                    )?;
                Storage::where_cond(&limit.compare_scalar(CompareOp::Eq, 0.0)?, &gb, &zero()?)
            })?;
            [ga, gb]
        }
        Maximum | Minimum => {
            if !need_a && !need_b {
                return Ok([None, None]);
            }
            // Each side gets the gradient unless it loses; ties split it
            // evenly. As PyTorch's rule (mask out the loser), a NaN operand
            // loses nothing, so both sides get the whole gradient.
            let (a_loses, b_loses) = if op == Maximum {
                (CompareOp::Lt, CompareOp::Gt)
            } else {
                (CompareOp::Gt, CompareOp::Lt)
            };
            let (a, b) = (saved.input(0)?, saved.input(1)?);
            let half_ties = a
                .compare(&b, CompareOp::Eq)?
                .cast(DType::F32)?
                .binary_scalar(Mul, 0.5, false)?;
            let share = |loses: CompareOp| -> Result<Storage> {
                a.compare(&b, loses)?
                    .cast(DType::F32)?
                    .binary(&half_ties, Add)?
                    .binary_scalar(Sub, 1.0, true)
            };
            [
                when(need_a, &|| g.binary(&share(a_loses)?, Mul))?,
                when(need_b, &|| g.binary(&share(b_loses)?, Mul))?,
            ]
        }
        // Piecewise constant: PyTorch defines a zero gradient.
        FloorDiv => [
            when(need_a, &|| g.zeros_like())?,
            when(need_b, &|| g.zeros_like())?,
        ],
        // a - floor(a / b) * b: 1 for a, -floor(a / b) for b (as PyTorch).
        Remainder => [
            when(need_a, &|| Ok(g.clone()))?,
            when(need_b, &|| {
                let q = saved.input(0)?.binary(&saved.input(1)?, FloorDiv)?;
                g.binary(&q.unary(UnaryOp::Neg)?, Mul)
            })?,
        ],
    })
}

pub(super) fn scalar_grad(
    op: BinaryOp,
    s: f32,
    scalar_on_left: bool,
    g: &Storage,
    saved: &Saved,
) -> Result<Storage> {
    use BinaryOp::*;
    let x = || saved.input(0);
    let out = || saved.output();
    match (op, scalar_on_left) {
        (Add, _) => Ok(g.clone()),
        (Sub, false) => Ok(g.clone()),
        (Sub, true) => g.unary(UnaryOp::Neg),
        (Mul, _) => g.binary_scalar(Mul, s, false),
        (Div, false) => g.binary_scalar(Div, s, false),
        // d(s/x)/dx = -s/x^2, in PyTorch's order (its `s / x` is
        // `reciprocal(x) * s`): -(g * s) * r^2 with r = 1/x, each product
        // rounded in the dtype. `out / x` would overflow F16 where r^2 fits.
        (Div, true) => {
            let r = x()?.unary(UnaryOp::Recip)?;
            g.binary_scalar(Mul, s, false)?
                .binary(&r.binary(&r, Mul)?, Mul)?
                .unary(UnaryOp::Neg)
        }
        // x^0 is constant: torch's gradient is 0 even where s * x^(s-1)
        // would be 0 * inf = NaN (x = 0).
        (Pow, false) if s == 0.0 => Storage::full(g.shape(), 0.0, DType::F32, &g.device()),
        // d(x^s)/dx = s * x^(s-1)
        (Pow, false) => g.binary(
            &x()?
                .binary_scalar(Pow, s - 1.0, false)?
                .binary_scalar(Mul, s, false)?,
            Mul,
        ),
        // d(0^x)/dx: torch defines 0 where x >= 0 (out * ln(0) = 0 * -inf there).
        (Pow, true) if s == 0.0 => {
            let grad = g.binary(&out()?.binary_scalar(Mul, s.ln(), false)?, Mul)?;
            let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
            Storage::where_cond(&x()?.compare_scalar(CompareOp::Lt, 0.0)?, &grad, &zero)
        }
        // d(s^x)/dx = out * ln(s)
        (Pow, true) => g.binary(&out()?.binary_scalar(Mul, s.ln(), false)?, Mul),
        (Maximum | Minimum, _) => {
            // 1 unless the tensor loses, 0.5 on ties; NaN never loses (as
            // the tensor-tensor rule).
            let loses = if op == Maximum {
                CompareOp::Lt
            } else {
                CompareOp::Gt
            };
            let x = x()?;
            let share = x
                .compare_scalar(loses, s)?
                .cast(DType::F32)?
                .binary(
                    &x.compare_scalar(CompareOp::Eq, s)?
                        .cast(DType::F32)?
                        .binary_scalar(Mul, 0.5, false)?,
                    Add,
                )?
                .binary_scalar(Sub, 1.0, true)?;
            g.binary(&share, Mul)
        }
        (FloorDiv, _) => g.zeros_like(),
        (Remainder, false) => Ok(g.clone()),
        // d(s % x)/dx = -floor(s / x)
        (Remainder, true) => g.binary(
            &x()?.binary_scalar(FloorDiv, s, true)?.unary(UnaryOp::Neg)?,
            Mul,
        ),
    }
}
