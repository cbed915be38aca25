//! Kullback-Leibler divergence.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::Result;

use super::{Reduction, same_shape};

/// `torch.nn.functional.kl_div(input, target, reduction, log_target)`:
/// `input` holds log-probabilities; the pointwise loss is
/// `target * (log(target) - input)` (0 where `target` is 0, as PyTorch's
/// `xlogy`), or with `log_target` (`target` given as log-probabilities)
/// `exp(target) * (target - input)`. A target that requires grad gets
/// PyTorch's gradient, NaN where it is 0 without `log_target` (xlogy's
/// `t / t`). `Reduction::BatchMean` is PyTorch's
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
        // xlogy(t, t): 0 where t is 0; a negative target gives NaN, as in
        // PyTorch. t * log(t) is taken everywhere and masked, so a target
        // that requires grad gets PyTorch's xlogy gradient, log(t) + t / t:
        // NaN where t is 0 (the masked branch's 0 times log(0) = -inf).
        let at_zero = target.eq_scalar(0.0)?;
        let zero = Tensor::zeros(&[], &target.device())?;
        let t_log_t = Tensor::where_cond(&at_zero, &zero, &target.mul(&target.log()?)?)?;
        t_log_t.sub(&target.mul(input)?)?
    };
    reduction.apply(losses)
}
