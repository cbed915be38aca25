//! Loss functions with `torch.nn.functional` semantics. Each takes a
//! [`Reduction`]: per-element losses (`None`), their mean, or their sum.
//!
//! Input and target must have the same shape (torch broadcasts them with a
//! warning that it is almost certainly a bug; here it is an error).

mod binary;
mod classification;
mod regression;

pub use binary::binary_cross_entropy_with_logits;
pub use classification::{CrossEntropyOptions, cross_entropy, nll_loss, nll_loss_with};
pub use regression::{l1_loss, mse_loss, smooth_l1_loss};

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
}

impl Reduction {
    /// Applies the reduction to per-element losses.
    pub fn apply(self, losses: Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(losses),
            Reduction::Mean => losses.mean_all(),
            Reduction::Sum => losses.sum_all(),
        }
    }
}

/// Errors unless `input` and `target` have the same shape.
fn same_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() != target.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: input.shape().to_vec(),
            rhs: target.shape().to_vec(),
        });
    }
    Ok(())
}
