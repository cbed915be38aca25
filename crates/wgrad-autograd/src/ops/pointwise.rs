//! Elementwise functions of two or three tensors: `lerp`, `logaddexp`,
//! `hypot`. The forwards compose device ops (comparisons and `where` for
//! PyTorch's special cases); each records one node whose backward is
//! PyTorch's formula (`derivatives.yaml`), so NaN and infinities give the
//! same gradients as there.

use wgrad_core::{BinaryOp, DType, Error, Result, shape};

use super::math::MathOp;
use super::math_grad::Inputs;
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// The node of a pointwise op (inside [`MathOp::Pointwise`]).
#[derive(Clone, Debug)]
pub(crate) enum PointwiseOp {
    /// `lerp(self, end, weight)`; inputs `[self, end]` and, for a tensor
    /// weight, `weight` last.
    Lerp {
        /// The scalar weight, `None` when it is the third input.
        weight: Option<f32>,
    },
    /// `log(exp(a) + exp(b))`; inputs `[a, b]`.
    LogAddExp,
    /// `sqrt(a^2 + b^2)`; inputs `[a, b]`.
    Hypot,
}

impl PointwiseOp {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            PointwiseOp::Lerp { .. } => "lerp",
            PointwiseOp::LogAddExp => "logaddexp",
            PointwiseOp::Hypot => "hypot",
        }
    }
}

/// The float dtype two operands compute in (PyTorch's promotion: an
/// integer operand takes the float's dtype, mixed 16-bit floats give F32);
/// two integer operands are an error, as PyTorch has no integer kernel.
fn float_pair(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let (da, db) = (a.dtype(), b.dtype());
    let to = match (da.is_float(), db.is_float()) {
        (false, false) => {
            return Err(Error::invalid(
                op,
                format!("not implemented for integer dtypes {da} and {db}: use float tensors"),
            ));
        }
        _ if da == db => da,
        (true, false) => da,
        (false, true) => db,
        (true, true) => DType::F32,
    };
    Ok((a.cast(to)?, b.cast(to)?))
}

/// `b` where `mask`, else `a`, on detached data.
fn pick(mask: &Tensor, b: &Tensor, a: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(mask, b, a)
}

/// Elementwise `lerp`, `logaddexp`, `hypot`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let a = Tensor::from_vec(vec![0.0f32, 3.0], &[2], &cpu)?;
/// let b = Tensor::from_vec(vec![10.0f32, 4.0], &[2], &cpu)?;
/// assert_eq!(a.lerp_scalar(&b, 0.5)?.to_vec_f32()?, [5.0, 3.5]);
/// assert_eq!(a.hypot(&b)?.to_vec_f32()?[1], 5.0);
/// let l = a.logaddexp(&a)?.to_vec_f32()?;
/// assert!((l[0] - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.lerp(self, end, weight)` with a tensor weight:
    /// `self + weight * (end - self)` where `|weight| < 0.5`, else
    /// `end - (end - self) * (1 - weight)` (PyTorch's formula); all three
    /// broadcast and must share one float dtype. Gradients: `1 - weight`,
    /// `weight` and `end - self`.
    pub fn lerp(&self, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
        const OP: &str = "lerp";
        self.check_lerp(end)?;
        if weight.dtype() != self.dtype() {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected dtype {} for `weight` but got dtype {}",
                    self.dtype(),
                    weight.dtype()
                ),
            ));
        }
        let shape = shape::broadcast_shapes(OP, &self.shape(), &end.shape())?;
        shape::broadcast_shapes(OP, &shape, &weight.shape())?;
        let out = lerp_forward(&self.detach(), &end.detach(), &weight.detach())?;
        let node = MathOp::Pointwise(PointwiseOp::Lerp { weight: None });
        Ok(Tensor::record(
            out.storage(),
            Op::Math(node),
            &[self, end, weight],
        ))
    }

    /// `torch.lerp(self, end, weight)` with a scalar weight (see
    /// [`lerp`](Self::lerp)).
    pub fn lerp_scalar(&self, end: &Tensor, weight: f32) -> Result<Tensor> {
        const OP: &str = "lerp";
        self.check_lerp(end)?;
        shape::broadcast_shapes(OP, &self.shape(), &end.shape())?;
        // An F32 0-d weight: PyTorch keeps a scalar weight in f32 (opmath).
        let w = Tensor::full(&[], f64::from(weight), DType::F32, &self.device())?;
        let out = lerp_forward(&self.detach(), &end.detach(), &w)?;
        let node = MathOp::Pointwise(PointwiseOp::Lerp {
            weight: Some(weight),
        });
        Ok(Tensor::record(out.storage(), Op::Math(node), &[self, end]))
    }

    fn check_lerp(&self, end: &Tensor) -> Result<()> {
        const OP: &str = "lerp";
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "not implemented for dtype {}: use a float tensor",
                    self.dtype()
                ),
            ));
        }
        if end.dtype() != self.dtype() {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected dtype {} for `end` but got dtype {}",
                    self.dtype(),
                    end.dtype()
                ),
            ));
        }
        Ok(())
    }

    /// `torch.logaddexp(a, b)`: `log(exp(a) + exp(b))` computed stably as
    /// `max(a, b) + log1p(exp(-|a - b|))`; equal infinities give themselves,
    /// NaN propagates. Integer operands promote to the float's dtype (two
    /// integers are an error). Gradient `1 / (1 + exp(b - a))` for `a`.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "logaddexp";
        let (a, b) = float_pair(OP, self, other)?;
        let (x, y) = (a.detach(), b.detach());
        let m = x.maximum(&y)?;
        let r = m.add(&x.sub(&y)?.abs()?.neg()?.exp()?.log1p()?)?;
        let inner = pick(&x.isinf()?, &x.expand(&r.shape())?, &r)?;
        let out = pick(&x.eq(&y)?, &inner, &r)?;
        let node = MathOp::Pointwise(PointwiseOp::LogAddExp);
        Ok(Tensor::record(out.storage(), Op::Math(node), &[&a, &b]))
    }

    /// `torch.hypot(a, b)`: `sqrt(a^2 + b^2)` without overflow or underflow
    /// (scaled by the larger magnitude outside `[2^-60, 2^60]`); an infinite
    /// operand gives +inf even with NaN in the other, as C's `hypot`.
    /// Integer operands promote as in [`logaddexp`](Self::logaddexp).
    /// Gradient `a / hypot(a, b)` for `a` (NaN at `(0, 0)`, as PyTorch).
    pub fn hypot(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "hypot";
        let (a, b) = float_pair(OP, self, other)?;
        let (x, y) = (a.detach().abs()?, b.detach().abs()?);
        let direct = x.square()?.add(&y.square()?)?.sqrt()?;
        let m = x.maximum(&y)?;
        let n = x.minimum(&y)?;
        // n / m, 0 where m is 0 (both operands 0). Not n / max(m, the least
        // subnormal): GPUs that flush subnormals to zero (NVIDIA) turn that
        // into 0 / 0 = NaN.
        let zero = Tensor::full(&[], 0.0, m.dtype(), &m.device())?;
        let r = pick(&m.eq_scalar(0.0)?, &zero, &n.div(&m)?)?;
        let scaled = m.mul(&r.square()?.add_scalar(1.0)?.sqrt()?)?;
        let out = pick(&m.gt_scalar(2f32.powi(60))?, &scaled, &direct)?;
        let out = pick(&m.lt_scalar(2f32.powi(-60))?, &scaled, &out)?;
        let inf = Tensor::full(&[], f64::INFINITY, out.dtype(), &out.device())?;
        let out = pick(&x.isinf()?, &inf, &out)?;
        let out = pick(&y.isinf()?, &inf, &out)?;
        let node = MathOp::Pointwise(PointwiseOp::Hypot);
        Ok(Tensor::record(out.storage(), Op::Math(node), &[&a, &b]))
    }
}

/// PyTorch's lerp on detached operands of one float dtype.
fn lerp_forward(start: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let diff = end.sub(start)?;
    // The weight on the right of `mul`, where a 0-d F32 weight is read in
    // f32 by 16-bit tensors.
    let small = start.add(&diff.mul(weight)?)?;
    let large = end.sub(&diff.mul(&weight.binary_scalar(BinaryOp::Sub, 1.0, true)?)?)?;
    let is_small = weight.abs()?.lt_scalar(0.5)?;
    Tensor::where_cond(&is_small, &small, &large)
}

/// The gradients of a [`PointwiseOp`] node, summed back over broadcasting.
pub(crate) fn grads(
    op: &PointwiseOp,
    g: &Storage,
    at: &Inputs<'_>,
) -> Result<Vec<Option<Storage>>> {
    let back = |s: Storage, i: usize| -> Result<Option<Storage>> {
        Ok(Some(s.sum_to_shape(&(at.shape)(i))?))
    };
    match op {
        PointwiseOp::Lerp { weight } => {
            let (start, end) = ((at.input)(0)?, (at.input)(1)?);
            let w = match weight {
                Some(w) => Storage::full(&[], f64::from(*w), DType::F32, &g.device())?,
                None => (at.input)(2)?,
            };
            let one_minus = w.binary_scalar(BinaryOp::Sub, 1.0, true)?;
            let mut out = vec![
                back(g.binary(&one_minus, BinaryOp::Mul)?, 0)?,
                back(g.binary(&w, BinaryOp::Mul)?, 1)?,
            ];
            if weight.is_none() {
                let diff = end.binary(&start, BinaryOp::Sub)?;
                out.push(back(g.binary(&diff, BinaryOp::Mul)?, 2)?);
            }
            Ok(out)
        }
        PointwiseOp::LogAddExp => {
            let (a, b) = ((at.input)(0)?, (at.input)(1)?);
            let share = |p: &Storage, q: &Storage| -> Result<Storage> {
                let denom = q
                    .binary(p, BinaryOp::Sub)?
                    .unary(wgrad_core::UnaryOp::Exp)?
                    .binary_scalar(BinaryOp::Add, 1.0, false)?;
                g.binary(&denom, BinaryOp::Div)
            };
            Ok(vec![back(share(&a, &b)?, 0)?, back(share(&b, &a)?, 1)?])
        }
        PointwiseOp::Hypot => {
            // PyTorch's `grad * self / result`, in that order.
            let out = (at.output)()?;
            let share = |x: Storage| -> Result<Storage> {
                g.binary(&x, BinaryOp::Mul)?.binary(&out, BinaryOp::Div)
            };
            Ok(vec![
                back(share((at.input)(0)?)?, 0)?,
                back(share((at.input)(1)?)?, 1)?,
            ])
        }
    }
}
