//! Binary cross-entropy on logits.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::Result;

use super::{Reduction, same_shape};

/// `-[t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))]` reduced
/// (`torch.nn.functional.binary_cross_entropy_with_logits`), in the stable
/// form `max(x, 0) - x * t + log(1 + exp(-|x|))`.
///
/// `max(x, 0)` is written `(x + |x|) / 2` so that at `x = 0`, where `|x|` has
/// no derivative, the two uses of `|x|` cancel and the gradient is the exact
/// `sigmoid(0) - t` (with `relu` it would come out as `-t`).
pub fn binary_cross_entropy_with_logits(
    logits: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor> {
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (logits, target) = (&full_precision(logits)?, &full_precision(target)?);
    same_shape("binary_cross_entropy_with_logits", logits, target)?;
    let abs = logits.abs()?;
    let positive_part = logits.add(&abs)?.mul_scalar(0.5)?;
    // exp(-|x|) <= 1, so 1 + exp(-|x|) never overflows; its rounding for
    // large |x| costs at most ~6e-8 absolute.
    let softplus_tail = abs.neg()?.exp()?.add_scalar(1.0)?.log()?;
    let losses = positive_part
        .sub(&logits.mul(target)?)?
        .add(&softplus_tail)?;
    reduction.apply(losses)
}
