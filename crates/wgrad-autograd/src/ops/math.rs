//! Math ops of the transformer issue that are not plain unary ops: `clamp`
//! with tensor bounds, and the reductions `logsumexp`, `prod`, `std`,
//! `norm`, `max_dim`/`min_dim` and `argmax_all`/`argmin_all`.
//!
//! Forwards compose existing device ops (`prod` has its own reduce fold), so
//! they run on the tensor's device with no host round trip. Ops whose
//! gradient is not the composition's record one [`MathOp`] node; its rule is
//! in `math_grad.rs`.

use wgrad_core::shape::{normalize_axes, normalize_axis, reduced_shape};
use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, UnaryOp};

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// The node of a math op whose backward rule is in `math_grad.rs`.
#[derive(Clone, Debug)]
pub(crate) enum MathOp {
    /// `clamp(x, min, max)` with tensor bounds; inputs `[x, min?, max?]`.
    ClampTensor {
        /// Whether a `min` tensor is among the inputs (right after `x`).
        has_min: bool,
        /// Whether a `max` tensor is among the inputs (last).
        has_max: bool,
    },
    /// `log(sum(exp(x)))` over `axes`.
    LogSumExp {
        /// The reduced axes as given (`&[]` = all).
        axes: Vec<isize>,
        /// Whether the reduced axes stay as size 1.
        keepdim: bool,
    },
    /// Product over `axes`.
    Prod {
        /// The reduced axes as given (`&[]` = all).
        axes: Vec<isize>,
        /// Whether the reduced axes stay as size 1.
        keepdim: bool,
    },
    /// Standard deviation over `axes`.
    Std {
        /// The reduced axes as given (`&[]` = all).
        axes: Vec<isize>,
        /// Subtracted from the count in the divisor (1 = unbiased).
        correction: usize,
        /// Whether the reduced axes stay as size 1.
        keepdim: bool,
    },
    /// `(sum |x|^p)^(1/p)` over `axes` for finite `p` other than 0 and 1.
    Norm {
        /// The order (2 for the Euclidean norm).
        p: f32,
        /// The reduced axes as given (`&[]` = all).
        axes: Vec<isize>,
        /// Whether the reduced axes stay as size 1.
        keepdim: bool,
    },
    /// `lerp`, `logaddexp`, `hypot` (rules in `pointwise.rs`).
    Pointwise(super::pointwise::PointwiseOp),
    /// A value picked from all of the input (`median()`): the gradient is
    /// shared evenly by the elements equal to it (the NaN elements when it
    /// is NaN), PyTorch's `evenly_distribute_backward`.
    EvenlyDistributed,
}

impl MathOp {
    /// The op's name, as errors about its node say it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            MathOp::ClampTensor { .. } => "clamp",
            MathOp::LogSumExp { .. } => "logsumexp",
            MathOp::Prod { .. } => "prod",
            MathOp::Std { .. } => "std",
            MathOp::Norm { .. } => "norm",
            MathOp::Pointwise(p) => p.name(),
            MathOp::EvenlyDistributed => "median",
        }
    }
}

/// Errors unless `t` is F32 (the math ops are defined on floats only).
fn expect_f32(op: &'static str, t: &Tensor) -> Result<()> {
    match t.dtype() {
        DType::F32 | DType::F16 | DType::BF16 => Ok(()),
        got => Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got,
        }),
    }
}

/// The number of elements the (validated) `axes` reduce together.
fn reduced_len(op: &'static str, shape: &[usize], axes: &[isize]) -> Result<usize> {
    let axes = normalize_axes(op, axes, shape.len())?;
    Ok(axes.iter().map(|&a| shape[a]).product())
}

/// `mask` (U32) as F32 0/1.
pub(crate) fn mask(a: &Storage, b: &Storage, op: CompareOp) -> Result<Storage> {
    a.compare(b, op)?.cast(DType::F32)
}

/// Math beyond the plain unary ops: `clamp_tensor` (tensor bounds),
/// `logsumexp`, `prod`, `std`, `norm` (`torch.linalg.vector_norm`),
/// `max_dim`/`min_dim` (values and indices, `torch.max(x, dim)`) and
/// `argmax_all`/`argmin_all`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::from_vec(vec![3.0f32, -4.0, 1.0, 2.0], &[2, 2], &Device::Cpu)?;
/// assert_eq!(x.norm(2.0, &[1], false)?.to_vec_f32()?[0], 5.0);
/// assert_eq!(x.prod(&[], false)?.item()?, -24.0);
/// let (values, indices) = x.max_dim(1, false)?;
/// assert_eq!(values.to_vec_f32()?, [3.0, 2.0]);
/// assert_eq!(indices.to_vec::<i32>()?, [0, 1]);
/// assert_eq!(x.argmin_all()?.to_vec::<i32>()?, [1]);
/// let lse = x.logsumexp(&[1], false)?.to_vec_f32()?;
/// assert!((lse[1] - (1f32.exp() + 2f32.exp()).ln()).abs() < 1e-6);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.clamp(x, min, max)` with tensor bounds (either may be `None`,
    /// not both): `minimum(maximum(x, min), max)`, all three broadcast
    /// together; NaN in any operand gives NaN, and `min > max` gives `max`.
    /// The gradient follows PyTorch 2.15 exactly: it flows to `x` where
    /// `min <= x <= max`, to the bound that was selected elsewhere, and is
    /// shared half and half where `x` ties a bound (unless `min == max`).
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        let op = "clamp";
        if min.is_none() && max.is_none() {
            return Err(Error::invalid(
                op,
                "at least one of min and max must be given",
            ));
        }
        expect_f32(op, self)?;
        let mut out = self.storage();
        let mut inputs = vec![self];
        if let Some(lo) = min {
            expect_f32(op, lo)?;
            out = out.binary(&lo.storage(), BinaryOp::Maximum)?;
            inputs.push(lo);
        }
        if let Some(hi) = max {
            expect_f32(op, hi)?;
            out = out.binary(&hi.storage(), BinaryOp::Minimum)?;
            inputs.push(hi);
        }
        let node = MathOp::ClampTensor {
            has_min: min.is_some(),
            has_max: max.is_some(),
        };
        Ok(Tensor::record(out, Op::Math(node), &inputs))
    }

    /// `log(sum(exp(x)))` over `axes` (`&[]` = all; `torch.logsumexp`),
    /// computed stably as `m + log(sum(exp(x - m)))` with `m` the maximum
    /// (0 where it is infinite, so rows of -inf give -inf and a +inf gives
    /// +inf); NaN propagates, an empty reduction gives -inf. Gradient:
    /// `softmax(x)`.
    pub fn logsumexp(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.logsumexp(axes, keepdim);
        }
        let op = "logsumexp";
        expect_f32(op, self)?;
        let shape = self.shape().to_vec();
        let norm = normalize_axes(op, axes, shape.len())?;
        let out_shape = reduced_shape(&shape, &norm, keepdim);
        let x = self.storage();
        let out = if reduced_len(op, &shape, axes)? == 0 {
            Storage::full(&out_shape, f64::NEG_INFINITY, self.dtype(), &self.device())?
        } else {
            let m = x.max(axes, true)?;
            let infinite = m
                .unary(UnaryOp::Abs)?
                .compare_scalar(CompareOp::Eq, f32::INFINITY)?;
            let zero = Storage::full(&[], 0.0, DType::F32, &self.device())?;
            let m = Storage::where_cond(&infinite, &zero, &m)?;
            let s = x
                .binary(&m, BinaryOp::Sub)?
                .unary(UnaryOp::Exp)?
                .sum(axes, true)?
                .unary(UnaryOp::Log)?
                .binary(&m, BinaryOp::Add)?;
            let dims: Vec<isize> = out_shape.iter().map(|&d| d as isize).collect();
            s.reshape(&dims)?
        };
        let node = MathOp::LogSumExp {
            axes: axes.to_vec(),
            keepdim,
        };
        Ok(Tensor::record(out, Op::Math(node), &[self]))
    }

    /// Product over `axes` (`&[]` = all; `torch.prod`); the product of
    /// nothing is 1. An I32 tensor (or a U32 mask) gives I32, wrapping on
    /// overflow (PyTorch: int64), with no gradient. The gradient is right
    /// with zeros in the input: with
    /// exactly one zero in a reduced group, that element's gradient is the
    /// product of the others and the rest get 0; with two or more, all 0.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.prod(axes, keepdim);
        }
        let out = self.storage().prod(axes, keepdim)?;
        let node = MathOp::Prod {
            axes: axes.to_vec(),
            keepdim,
        };
        Ok(Tensor::record(out, Op::Math(node), &[self]))
    }

    /// Standard deviation over `axes` (`&[]` = all; `torch.std`): the square
    /// root of [`var`](Self::var) with `correction` (1 = unbiased, PyTorch's
    /// default). Where the result is 0 the gradient is 0, as in PyTorch.
    pub fn std(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
        let op = "std";
        expect_f32(op, self)?;
        normalize_axes(op, axes, self.rank())?;
        let out = self
            .storage()
            .var(axes, correction, keepdim)?
            .unary(UnaryOp::Sqrt)?;
        let node = MathOp::Std {
            axes: axes.to_vec(),
            correction,
            keepdim,
        };
        Ok(Tensor::record(out, Op::Math(node), &[self]))
    }

    /// The vector `p`-norm over `axes` (`&[]` = all;
    /// `torch.linalg.vector_norm(x, ord=p, dim, keepdim)`): `p = 2` is
    /// Euclidean (gradient 0 at the zero vector, as PyTorch), `1` the sum of
    /// magnitudes, `f32::INFINITY`/`NEG_INFINITY` the largest/smallest
    /// magnitude (ties share the gradient), `0` the count of non-zeros (gradient
    /// zeros, as PyTorch's), any other `p` is `(sum |x|^p)^(1/p)`. NaN `p` is an
    /// error.
    pub fn norm(&self, p: f32, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.norm(p, axes, keepdim);
        }
        let op = "norm";
        if p.is_nan() {
            return Err(Error::invalid(op, "the order p must be a number, got NaN"));
        }
        expect_f32(op, self)?;
        normalize_axes(op, axes, self.rank())?;
        if p.is_infinite() {
            // One node, not abs then amax/amin: its gradient treats NaN as
            // linalg.vector_norm's does (see `norm_grad`), not as amax's.
            let abs = self.storage().unary(UnaryOp::Abs)?;
            let out = if p > 0.0 {
                abs.max(axes, keepdim)?
            } else {
                abs.min(axes, keepdim)?
            };
            let node = MathOp::Norm {
                p,
                axes: axes.to_vec(),
                keepdim,
            };
            return Ok(Tensor::record(out, Op::Math(node), &[self]));
        }
        if p == 1.0 {
            return self.abs()?.sum(axes, keepdim);
        }
        if p == 0.0 {
            // A count: recorded so that the result requires grad with its
            // input, as in PyTorch, whose gradient for it is zeros.
            let nonzero = self.storage().compare_scalar(CompareOp::Ne, 0.0)?;
            let out = nonzero.cast(self.dtype())?.sum(axes, keepdim)?;
            let node = MathOp::Norm {
                p,
                axes: axes.to_vec(),
                keepdim,
            };
            return Ok(Tensor::record(out, Op::Math(node), &[self]));
        }
        let x = self.storage();
        let out = if p == 2.0 {
            x.unary(UnaryOp::Square)?
                .sum(axes, keepdim)?
                .unary(UnaryOp::Sqrt)?
        } else {
            x.unary(UnaryOp::Abs)?
                .binary_scalar(BinaryOp::Pow, p, false)?
                .sum(axes, keepdim)?
                .binary_scalar(BinaryOp::Pow, 1.0 / p, false)?
        };
        let node = MathOp::Norm {
            p,
            axes: axes.to_vec(),
            keepdim,
        };
        Ok(Tensor::record(out, Op::Math(node), &[self]))
    }

    /// `torch.max(x, dim, keepdim)`: the largest value along `dim` and its
    /// I32 index (the first one on ties; NaN counts as the largest). The
    /// values are differentiable, the gradient going to the chosen index.
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim("max", dim, keepdim, true)
    }

    /// `torch.min(x, dim, keepdim)`: the smallest value along `dim` and its
    /// I32 index (see [`max_dim`](Self::max_dim)).
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim("min", dim, keepdim, false)
    }

    fn extreme_dim(
        &self,
        op: &'static str,
        dim: isize,
        keepdim: bool,
        largest: bool,
    ) -> Result<(Tensor, Tensor)> {
        if self.dtype() != DType::I32 {
            expect_f32(op, self)?;
        }
        if self.rank() == 0 {
            // torch accepts dim 0 / -1 of a 0-d tensor: the value, index 0.
            normalize_axis(op, dim, 1)?;
            let index = Tensor::full(&[], 0.0, DType::I32, &self.device())?;
            return Ok((self.reshape(&[])?, index));
        }
        let a = normalize_axis(op, dim, self.rank())? as isize;
        if self.shape()[a as usize] == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "cannot reduce dim {dim} of shape {:?}: it is empty",
                    self.shape()
                ),
            ));
        }
        let s = self.storage();
        let index = if largest {
            s.argmax(a, true)?
        } else {
            s.argmin(a, true)?
        };
        let index = Tensor::from_storage_leaf(index);
        let values = self.gather(a, &index)?;
        if keepdim {
            Ok((values, index))
        } else {
            Ok((values.squeeze(a)?, index.squeeze(a)?))
        }
    }

    /// `torch.argmax(x)` with no dim: the I32 index (0-d) of the first
    /// maximum in the flattened (row-major) tensor; NaN counts as the
    /// maximum. Empty tensors are an error.
    pub fn argmax_all(&self) -> Result<Tensor> {
        let flat = self.storage().reshape(&[-1])?;
        Ok(Tensor::from_storage_leaf(flat.argmax(0, false)?))
    }

    /// `torch.argmin(x)` with no dim: the I32 index (0-d) of the first
    /// minimum in the flattened tensor (see [`argmax_all`](Self::argmax_all)).
    pub fn argmin_all(&self) -> Result<Tensor> {
        let flat = self.storage().reshape(&[-1])?;
        Ok(Tensor::from_storage_leaf(flat.argmin(0, false)?))
    }
}
