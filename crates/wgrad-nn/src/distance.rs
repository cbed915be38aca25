//! Vector normalisation, cosine similarity and pairwise distance
//! (`F.normalize`, `F.cosine_similarity`, `F.pairwise_distance` and the
//! modules `nn.CosineSimilarity`, `nn.PairwiseDistance`), composed from
//! differentiable ops, so they run on either device and give PyTorch's
//! gradients.
//!
//! ```
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::{CosineSimilarity, PairwiseDistance, cosine_similarity, normalize};
//! let cpu = Device::Cpu;
//! let x = Tensor::from_vec(vec![3.0f32, 4.0, 0.0, 0.0], &[2, 2], &cpu)?;
//! // A zero row stays zero (divided by eps, not by its norm).
//! assert_eq!(normalize(&x, 2.0, 1, 1e-12)?.to_vec_f32()?, [0.6, 0.8, 0.0, 0.0]);
//! let y = Tensor::from_vec(vec![3.0f32, 4.0, 1.0, 0.0], &[2, 2], &cpu)?;
//! assert_eq!(cosine_similarity(&x, &y, 1, 1e-8)?.to_vec_f32()?, [1.0, 0.0]);
//! assert_eq!(CosineSimilarity::default().forward(&x, &y)?.shape(), [2]);
//! let d = PairwiseDistance::new(2.0, 0.0, false).forward(&x, &y)?;
//! assert_eq!(d.to_vec_f32()?, [0.0, 1.0]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

use wgrad_autograd::Tensor;
use wgrad_core::shape::{broadcast_shapes, is_scalar_axis, normalize_axis};
use wgrad_core::{DType, Result};

/// `torch.nn.functional.normalize(input, p, dim, eps)`: `input / max(||input||_p,
/// eps)` along `dim` (`p = 2`, `dim = 1`, `eps = 1e-12` in PyTorch). The norm is
/// [`Tensor::norm`]'s (any `p`, `inf`, `0`); where it is below `eps` the
/// gradient does not flow through it (PyTorch's `clamp_min`), so a zero
/// vector's gradient is `g / eps`. A 0-d input takes `dim` 0 or -1.
pub fn normalize(input: &Tensor, p: f32, dim: isize, eps: f32) -> Result<Tensor> {
    check_dim("normalize", dim, input.rank())?;
    let denom = input.norm(p, &[dim], true)?.clamp(Some(eps), None)?;
    input.div(&denom)
}

/// `torch.nn.functional.cosine_similarity(x1, x2, dim, eps)` (PyTorch's
/// defaults `dim = 1`, `eps = 1e-8`): `sum((x1 / max(||x1||, eps)) * (x2 /
/// max(||x2||, eps)))` along `dim` of the broadcast shape, which is removed.
/// As in PyTorch 2.x each norm is clamped on its own (so two vectors of norm
/// below `eps` give `x1 . x2 / eps^2`, not 1), under `no_grad`: the clamp
/// passes the gradient through (a zero `x1` against `x2` gets `x2 / (||x2|| *
/// eps)`). Integer and mask inputs are taken as F32.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: isize, eps: f32) -> Result<Tensor> {
    const OP: &str = "cosine_similarity";
    let (x1, x2) = (floating(x1)?, floating(x2)?);
    let shape = broadcast_shapes(OP, &x1.shape(), &x2.shape())?;
    check_dim(OP, dim, shape.len())?;
    let (x1, x2) = (x1.expand(&shape)?, x2.expand(&shape)?);
    let n1 = clamp_min_straight_through(&x1.norm(2.0, &[dim], true)?, eps)?;
    let n2 = clamp_min_straight_through(&x2.norm(2.0, &[dim], true)?, eps)?;
    x1.div(&n1)?.mul(&x2.div(&n2)?)?.sum(&[dim], false)
}

/// `torch.nn.functional.pairwise_distance(x1, x2, p, eps, keepdim)`
/// (PyTorch's defaults `p = 2`, `eps = 1e-6`, `keepdim = false`): `||x1 - x2 +
/// eps||_p` over the last dim of the broadcast shape (`eps` is added to the
/// difference, as PyTorch does, so equal vectors are `sqrt(n) * eps` apart
/// and the gradient there is defined). A 0-d pair is `|x1 - x2 + eps|`.
/// Integer and mask inputs are taken as F32.
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f32,
    eps: f32,
    keepdim: bool,
) -> Result<Tensor> {
    const OP: &str = "pairwise_distance";
    let (x1, x2) = (floating(x1)?, floating(x2)?);
    broadcast_shapes(OP, &x1.shape(), &x2.shape())?;
    x1.sub(&x2)?.add_scalar(eps)?.norm(p, &[-1], keepdim)
}

/// `nn.CosineSimilarity(dim, eps)`: [`cosine_similarity`] along `dim`.
/// It takes two inputs, so it is not a [`Module`](crate::Module) (whose
/// `forward` takes one): call its inherent [`forward`](Self::forward), and
/// mark a field of this type `#[module(skip)]` in a derived model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CosineSimilarity {
    /// The dim reduced (PyTorch's default 1).
    pub dim: isize,
    /// The smallest norm divided by (default `1e-8`).
    pub eps: f32,
}

impl CosineSimilarity {
    /// `nn.CosineSimilarity(dim, eps)`.
    pub fn new(dim: isize, eps: f32) -> Self {
        CosineSimilarity { dim, eps }
    }

    /// `cos(x1, x2)`: [`cosine_similarity`] with this module's `dim`, `eps`.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        cosine_similarity(x1, x2, self.dim, self.eps)
    }
}

impl Default for CosineSimilarity {
    /// PyTorch's defaults: `dim = 1`, `eps = 1e-8`.
    fn default() -> Self {
        CosineSimilarity::new(1, 1e-8)
    }
}

/// `nn.PairwiseDistance(p, eps, keepdim)`: [`pairwise_distance`] over the
/// last dim. Two inputs, so not a [`Module`](crate::Module) (see
/// [`CosineSimilarity`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairwiseDistance {
    /// The order `p` of the norm (PyTorch's attribute `norm`, default 2).
    pub norm: f32,
    /// Added to the difference (default `1e-6`).
    pub eps: f32,
    /// Keep the reduced dim as size 1 (default `false`).
    pub keepdim: bool,
}

impl PairwiseDistance {
    /// `nn.PairwiseDistance(p, eps, keepdim)`.
    pub fn new(p: f32, eps: f32, keepdim: bool) -> Self {
        PairwiseDistance {
            norm: p,
            eps,
            keepdim,
        }
    }

    /// `||x1 - x2 + eps||_p`: [`pairwise_distance`] with this module's options.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
    }
}

impl Default for PairwiseDistance {
    /// PyTorch's defaults: `p = 2`, `eps = 1e-6`, `keepdim = false`.
    fn default() -> Self {
        PairwiseDistance::new(2.0, 1e-6, false)
    }
}

/// `max(x, min)` whose gradient is the identity's everywhere: PyTorch's
/// `with torch.no_grad(): x.clamp_(min)` on a tensor that stays in the
/// graph (cosine_similarity's norms, gaussian_nll_loss's `var`). Where `x`
/// is below `min` the value is exactly `min` (`(x - x) + min`); NaN stays NaN.
pub(crate) fn clamp_min_straight_through(x: &Tensor, min: f32) -> Result<Tensor> {
    let below = x.lt_scalar(min)?;
    let lifted = x.sub(&x.detach())?.add_scalar(min)?;
    Tensor::where_cond(&below, &lifted, x)
}

/// `x` as a float tensor: I32 and U32 (mask) inputs cast to F32, as PyTorch
/// promotes integer and bool inputs of these functions.
fn floating(x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_float() {
        Ok(x.clone())
    } else {
        x.cast(DType::F32)
    }
}

/// Errors unless `dim` names a dim of a rank-`rank` tensor (0 or -1 for a
/// 0-d one), naming `op`.
fn check_dim(op: &'static str, dim: isize, rank: usize) -> Result<()> {
    if !is_scalar_axis(dim, rank) {
        normalize_axis(op, dim, rank)?;
    }
    Ok(())
}
