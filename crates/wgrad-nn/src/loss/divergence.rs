//! Kullback-Leibler divergence.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::Result;

use super::{Reduction, same_shape};

/// `torch.nn.functional.kl_div(input, target, reduction, log_target)`:
/// `input` holds log-probabilities; the pointwise loss is
/// `target * (log(target) - input)` (0 where `target` is 0, as PyTorch's
/// `xlogy`), or with `log_target` (`target` given as log-probabilities)
/// `exp(target) * (target - input)`. `Reduction::BatchMean` is PyTorch's
/// `"batchmean"` (the KL divergence per sample); `Mean` averages over
/// every element, as PyTorch's (warned-about) default does.
pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    log_target: bool,
) -> Result<Tensor> {
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape("kl_div", input, target)?;
    let losses = if log_target {
        target.exp()?.mul(&target.sub(input)?)?
    } else {
        // xlogy(t, t): 0 where t is 0 (log taken of 1 there); a negative
        // target gives NaN, as in PyTorch.
        let zero = target.eq_scalar(0.0)?;
        let one = Tensor::ones(&[], &target.device())?;
        let t_log_t = target.mul(&Tensor::where_cond(&zero, &one, target)?.log()?)?;
        t_log_t.sub(&target.mul(input)?)?
    };
    reduction.apply(losses)
}
