//! Loss functions with `torch.nn.functional` semantics. Each takes a
//! [`Reduction`]: per-element losses (`None`), their mean, or their sum.
//!
//! For the regression, binary and divergence losses input and target must
//! have the same shape (torch broadcasts them with a warning that it is
//! almost certainly a bug; here it is an error). The margin, embedding and
//! likelihood losses (`margin_ranking_loss`, `hinge_embedding_loss`,
//! `soft_margin_loss`, `multilabel_soft_margin_loss`, `cosine_embedding_loss`,
//! `triplet_margin_loss`, `poisson_nll_loss`, `gaussian_nll_loss`) broadcast
//! as PyTorch does (no warning there) and refuse `Reduction::BatchMean`.
//!
//! ```
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::loss::*;
//! let cpu = Device::Cpu;
//! let pred = Tensor::from_vec(vec![1.0f32, 2.0, 4.0], &[3], &cpu)?;
//! let target = Tensor::from_vec(vec![1.0f32, 0.0, 3.0], &[3], &cpu)?;
//! assert_eq!(mse_loss(&pred, &target, Reduction::Mean)?.item()?, 5.0 / 3.0);
//! assert_eq!(l1_loss(&pred, &target, Reduction::Sum)?.item()?, 3.0);
//! let huber = smooth_l1_loss(&pred, &target, 1.0, Reduction::None)?;
//! assert_eq!(huber.to_vec_f32()?, [0.0, 1.5, 0.5]);
//! // Classification: logits [N, C] against I32 class indices [N].
//! let logits = Tensor::zeros(&[2, 4], &cpu)?;
//! let labels = Tensor::from_vec(vec![1i32, 3], &[2], &cpu)?;
//! let ce = cross_entropy(&logits, &labels, CrossEntropyOptions::default())?;
//! assert!((ce.item()? - 4f32.ln()).abs() < 1e-6);
//! let smoothed = CrossEntropyOptions { label_smoothing: 0.1, ..Default::default() };
//! assert!((cross_entropy(&logits, &labels, smoothed)?.item()? - 4f32.ln()).abs() < 1e-6);
//! let nll = nll_loss(&logits.log_softmax(-1)?, &labels, Reduction::Mean)?;
//! assert!((nll.item()? - ce.item()?).abs() < 1e-6);
//! // Binary: raw logits against 0/1 targets (sigmoid inside, stable).
//! let z = Tensor::zeros(&[2], &cpu)?;
//! let t = Tensor::from_vec(vec![0.0f32, 1.0], &[2], &cpu)?;
//! let bce = binary_cross_entropy_with_logits(&z, &t, Reduction::Mean)?;
//! assert!((bce.item()? - 2f32.ln()).abs() < 1e-6);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

mod binary;
mod classification;
mod divergence;
mod embedding;
mod likelihood;
mod margin;
mod regression;

pub use binary::{
    BceOptions, binary_cross_entropy, binary_cross_entropy_with_logits,
    binary_cross_entropy_with_logits_with,
};
pub use classification::{
    CrossEntropyOptions, cross_entropy, cross_entropy_weighted, nll_loss, nll_loss_with,
};
pub use divergence::kl_div;
pub use embedding::{cosine_embedding_loss, triplet_margin_loss};
pub use likelihood::{Variance, gaussian_nll_loss, poisson_nll_loss};
pub use margin::{
    hinge_embedding_loss, margin_ranking_loss, multilabel_soft_margin_loss, soft_margin_loss,
};
pub use regression::{huber_loss, l1_loss, mse_loss, smooth_l1_loss};

use wgrad_autograd::Tensor;
use wgrad_core::{Error, Result};

/// How per-element losses are combined (`reduction=` in PyTorch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the per-element losses.
    None,
    /// Their mean (torch's default).
    #[default]
    Mean,
    /// Their sum.
    Sum,
    /// Their sum divided by the first dim's size (`kl_div`'s
    /// `"batchmean"`, the mathematically correct KL divergence per sample;
    /// the sum for a 0-d input).
    BatchMean,
}

impl Reduction {
    /// Applies the reduction to per-element losses.
    pub fn apply(self, losses: Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(losses),
            Reduction::Mean => losses.mean_all(),
            Reduction::Sum => losses.sum_all(),
            Reduction::BatchMean => {
                let batch = losses.shape().first().copied().unwrap_or(1);
                losses.sum_all()?.div_scalar(batch as f32)
            }
        }
    }
}

/// Errors unless `input` and `target` are on one device and have the same
/// shape (the loss's own name in the error, not an inner op's).
fn same_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    let (a, b) = (input.device(), target.device());
    if !a.same(&b) {
        return Err(Error::DeviceMismatch {
            op,
            lhs: a.to_string(),
            rhs: b.to_string(),
        });
    }
    if input.shape() != target.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: input.shape().to_vec(),
            rhs: target.shape().to_vec(),
        });
    }
    Ok(())
}

/// `reduction` as the losses without a `"batchmean"` take it: PyTorch's
/// error for `Reduction::BatchMean`.
fn plain_reduction(op: &'static str, reduction: Reduction) -> Result<Reduction> {
    if reduction == Reduction::BatchMean {
        return Err(Error::invalid(
            op,
            "batchmean is not a valid value for reduction",
        ));
    }
    Ok(reduction)
}
