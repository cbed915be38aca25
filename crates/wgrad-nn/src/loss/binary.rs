//! Binary cross-entropy, on probabilities and on logits.

use wgrad_autograd::Tensor;
use wgrad_autograd::autocast::full_precision;
use wgrad_core::{BinaryOp, DType, Error, Result, UnaryOp};

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
    binary_cross_entropy_with_logits_with(
        logits,
        target,
        BceOptions {
            reduction,
            ..BceOptions::default()
        },
    )
}

/// Options of the binary cross-entropies, with PyTorch's defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct BceOptions<'a> {
    /// How the per-element losses are combined (default `Mean`).
    pub reduction: Reduction,
    /// A rescaling weight per element, broadcast to the input (`weight=`).
    pub weight: Option<&'a Tensor>,
    /// With logits only: the weight of positive examples, broadcast along
    /// the last dim (one per class, `pos_weight=`).
    pub pos_weight: Option<&'a Tensor>,
}

/// [`binary_cross_entropy_with_logits`] with `weight` and `pos_weight`:
/// `l = (1 - t) x + (1 + (pw - 1) t) softplus(-x)`, times `weight`, as
/// PyTorch's kernel computes it (`-log_sigmoid(x)` for `softplus(-x)`).
pub fn binary_cross_entropy_with_logits_with(
    logits: &Tensor,
    target: &Tensor,
    options: BceOptions,
) -> Result<Tensor> {
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (logits, target) = (&full_precision(logits)?, &full_precision(target)?);
    same_shape("binary_cross_entropy_with_logits", logits, target)?;
    // softplus(-x) = -log_sigmoid(x) (PyTorch's form of the loss): log1p(exp(-x))
    // keeps the tail's relative precision for confident logits (x = 10:
    // 4.5399e-5, as PyTorch; log(1 + e) gave 4.5418e-5) and turns linear
    // past -x = 20. So the loss is +inf at x = +inf (t < 1) and NaN at -inf,
    // as in PyTorch (max(x, 0) - x t + log1p(exp(-|x|)) gave NaN at +inf),
    // and its gradient is (1 - t) - sigmoid(-x) = sigmoid(x) - t, 0.5 - t
    // at x = 0 (forms through relu(-x) or abs lose the 0.5 there).
    let softplus_neg = logits.neg()?.unary(UnaryOp::Softplus {
        beta: 1.0,
        threshold: 20.0,
    })?;
    let linear = target
        .binary_scalar(BinaryOp::Sub, 1.0, true)?
        .mul(logits)?;
    let losses = match options.pos_weight {
        None => linear.add(&softplus_neg)?,
        Some(pw) => {
            let pw = full_precision(pw)?;
            let log_weight = pw.sub_scalar(1.0)?.mul(target)?.add_scalar(1.0)?;
            linear.add(&log_weight.mul(&softplus_neg)?)?
        }
    };
    weighted(losses, options, "binary_cross_entropy_with_logits")
}

/// `-w [t log(x) + (1 - t) log(1 - x)]` reduced, for probabilities `x`
/// (`torch.nn.functional.binary_cross_entropy`); each log is clamped at
/// -100 as in PyTorch, so `x = 0` or `1` gives a finite loss. Inputs
/// outside [0, 1] give NaN (PyTorch raises; checking would read the
/// device). `pos_weight` is an error here, as in PyTorch.
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    options: BceOptions,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    let (input, target) = (&full_precision(input)?, &full_precision(target)?);
    same_shape(OP, input, target)?;
    if options.pos_weight.is_some() {
        return Err(Error::invalid(
            OP,
            "pos_weight applies to binary_cross_entropy_with_logits only",
        ));
    }
    // PyTorch's error for inputs outside [0, 1] (on a GPU at the next
    // readback, from a device check).
    input.storage().check_unit_interval()?;
    let log_p = clamped_log(input)?;
    let log_q = clamped_log(&input.neg()?.add_scalar(1.0)?)?;
    let losses = target
        .mul(&log_p)?
        .add(&target.neg()?.add_scalar(1.0)?.mul(&log_q)?)?
        .neg()?;
    weighted(losses, options, OP)
}

/// `max(log(x), -100)`, with a zero gradient (not 0/0) where `x` is 0:
/// a saturated sigmoid gives exact 0s and 1s. (PyTorch's own backward
/// gives `(x - t) / 1e-12` there.)
fn clamped_log(x: &Tensor) -> Result<Tensor> {
    let positive = x.gt_scalar(0.0)?;
    let one = Tensor::ones(&[], &x.device())?;
    let floor = Tensor::full(&[], -100.0, DType::F32, &x.device())?;
    let log = Tensor::where_cond(&positive, x, &one)?.log()?;
    Tensor::where_cond(&positive, &log, &floor)?.clamp(Some(-100.0), None)
}

/// Per-element losses times `options.weight` (which must broadcast to
/// them without enlarging them), reduced.
fn weighted(losses: Tensor, options: BceOptions, op: &'static str) -> Result<Tensor> {
    let losses = match options.weight {
        None => losses,
        Some(w) => {
            let out = losses.mul(&full_precision(w)?)?;
            if out.shape() != losses.shape() {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: losses.shape().to_vec(),
                    rhs: w.shape().to_vec(),
                });
            }
            out
        }
    };
    options.reduction.apply(losses)
}
