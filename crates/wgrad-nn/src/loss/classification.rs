//! Multi-class losses: cross-entropy (fused on the device) and NLL.

use wgrad_autograd::Tensor;
use wgrad_core::{DType, Error, Result};

use super::Reduction;

/// Options of [`cross_entropy`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropyOptions {
    /// How the per-sample losses are combined (default `Mean`).
    pub reduction: Reduction,
    /// Mixes the target with the uniform distribution: `(1 - ls) * onehot + ls / C`
    /// (default 0, must be in `[0, 1]`).
    pub label_smoothing: f32,
    /// Class-index targets equal to this contribute neither loss nor
    /// gradient, and `Mean` does not count them (default -100).
    pub ignore_index: i32,
}

impl Default for CrossEntropyOptions {
    fn default() -> Self {
        CrossEntropyOptions {
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
            ignore_index: -100,
        }
    }
}

/// Logits `[C]`, `[N, C]` or `[N, C, d1, ..]` with class-index targets of the
/// logits' shape without the class dim, as rows `[M, C]` and targets `[M]`,
/// plus the shape per-sample losses take.
fn as_rows(
    op: &'static str,
    logits: &Tensor,
    target: &Tensor,
) -> Result<(Tensor, Tensor, Vec<usize>)> {
    let shape = logits.shape();
    let expected: Vec<usize> = match shape.len() {
        0 => {
            return Err(Error::invalid(
                op,
                "logits must have a class dim, got a 0-d tensor",
            ));
        }
        1 => Vec::new(),
        _ => shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != 1)
            .map(|(_, &s)| s)
            .collect(),
    };
    if target.shape() != expected {
        return Err(Error::ShapeMismatch {
            op,
            lhs: shape.to_vec(),
            rhs: target.shape().to_vec(),
        });
    }
    let classes = if shape.len() == 1 { shape[0] } else { shape[1] };
    let rows: usize = expected.iter().product();
    let logits = match shape.len() {
        1 | 2 => logits.clone(),
        rank => {
            // Move the class dim last so every sample is one row.
            let mut order: Vec<isize> = vec![0];
            order.extend(2..rank as isize);
            order.push(1);
            logits.permute(&order)?
        }
    };
    let logits = logits.reshape(&[rows as isize, classes as isize])?;
    let target = target.reshape(&[rows as isize])?;
    Ok((logits, target, expected))
}

/// Per-sample losses back in `shape` and reduced; `Mean` divides by the
/// number of targets that are not `ignore_index` (computed on the device;
/// NaN when every target is ignored, as in torch).
fn reduce_ignoring(
    losses: Tensor,
    target: &Tensor,
    shape: &[usize],
    reduction: Reduction,
    ignore_index: i32,
) -> Result<Tensor> {
    match reduction {
        Reduction::None => losses.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>()),
        Reduction::Sum => losses.sum_all(),
        // F32 losses: one fused reduction (one dispatch on a GPU, where the
        // composite below took five).
        Reduction::Mean if losses.dtype() == DType::F32 => {
            losses.cross_entropy_mean(target, ignore_index)
        }
        Reduction::Mean => {
            let counted = target
                .ne_scalar(ignore_index as f32)?
                .cast(losses.dtype())?
                .sum_all()?;
            losses.sum_all()?.div(&counted)
        }
        Reduction::BatchMean => Err(Error::invalid(
            "cross_entropy",
            "reduction BatchMean (\"batchmean\") is kl_div's only",
        )),
    }
}

/// Cross-entropy between logits and targets
/// (`torch.nn.functional.cross_entropy`).
///
/// Logits are `[C]`, `[N, C]` or `[N, C, d1, ..]`. Targets are either I32
/// class indices with the logits' shape minus the class dim, computed by
/// one fused kernel forward and backward (log-softmax + NLL per row, no
/// intermediate tensors); or F32 class probabilities of the logits' shape.
/// A class index outside `0..C` that is not `ignore_index` is
/// `IndexOutOfRange` (on a GPU, at the next readback).
pub fn cross_entropy(
    logits: &Tensor,
    target: &Tensor,
    options: CrossEntropyOptions,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    // Autocast runs the losses in float32 (a no-op outside a region).
    let (logits, target) = (
        &wgrad_autograd::autocast::full_precision(logits)?,
        &wgrad_autograd::autocast::full_precision(target)?,
    );
    let CrossEntropyOptions {
        reduction,
        label_smoothing,
        ignore_index,
    } = options;
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::invalid(
            OP,
            format!("label_smoothing must be in [0, 1], got {label_smoothing}"),
        ));
    }
    match target.dtype() {
        DType::I32 => {
            let (rows, targets, shape) = as_rows(OP, logits, target)?;
            if reduction == Reduction::Mean && rows.dtype() == DType::F32 {
                // One node: the mean's division rides in the gradient kernel.
                return rows.cross_entropy_mean_loss(&targets, label_smoothing, ignore_index);
            }
            let losses = rows.cross_entropy_per_sample(&targets, label_smoothing, ignore_index)?;
            reduce_ignoring(losses, &targets, &shape, reduction, ignore_index)
        }
        DType::F32 | DType::F16 | DType::BF16 => {
            soft_target_cross_entropy(logits, target, label_smoothing, reduction)
        }
        got => Err(Error::DTypeMismatch {
            op: OP,
            expected: DType::I32,
            got,
        }),
    }
}

/// [`cross_entropy`] with PyTorch's class `weight` (`[C]`), composed from
/// log-softmax and gathers rather than the fused kernel. Class-index
/// targets: sample `i` weighs `w[y_i]`, label smoothing weighs class `c`'s
/// term by `w_c`, and `Mean` divides by the summed weights of the
/// targets that are not ignored (PyTorch's weighted mean). Probability
/// targets: `-sum_c w_c q_c logp_c`, `Mean` over the samples.
pub fn cross_entropy_weighted(
    logits: &Tensor,
    target: &Tensor,
    weight: &Tensor,
    options: CrossEntropyOptions,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    let (logits, target, weight) = (
        &wgrad_autograd::autocast::full_precision(logits)?,
        &wgrad_autograd::autocast::full_precision(target)?,
        &wgrad_autograd::autocast::full_precision(weight)?,
    );
    let ls = options.label_smoothing;
    if !(0.0..=1.0).contains(&ls) {
        return Err(Error::invalid(
            OP,
            format!("label_smoothing must be in [0, 1], got {ls}"),
        ));
    }
    let shape = logits.shape();
    let class_axis = if shape.len() == 1 { 0 } else { 1 };
    let classes = shape
        .get(class_axis)
        .copied()
        .ok_or_else(|| Error::invalid(OP, "logits must have a class dim, got a 0-d tensor"))?;
    if weight.shape()[..] != [classes] {
        return Err(Error::invalid(
            OP,
            format!(
                "weight must be a 1-D tensor of the {classes} classes, got shape {:?}",
                weight.shape()
            ),
        ));
    }
    if target.dtype() != DType::I32 {
        // Probability targets: per-class weights inside the sum.
        if target.shape() != shape {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: shape.to_vec(),
                rhs: target.shape().to_vec(),
            });
        }
        let q = target
            .mul_scalar(1.0 - ls)?
            .add_scalar(ls / classes as f32)?;
        let mut w_shape = vec![1isize; shape.len()];
        w_shape[class_axis] = classes as isize;
        let losses = logits
            .log_softmax(class_axis as isize)?
            .mul(&q)?
            .mul(&weight.reshape(&w_shape)?)?
            .sum(&[class_axis as isize], false)?
            .neg()?;
        return options.reduction.apply(losses);
    }
    let (rows, targets, out_shape) = as_rows(OP, logits, target)?;
    let log_probs = rows.log_softmax(1)?;
    let (picked, valid, safe) = picked_log_probs(&log_probs, &targets, options.ignore_index)?;
    let zero = Tensor::zeros(&[], &rows.device())?;
    let w_y = Tensor::where_cond(&valid, &weight.index_select(0, &safe)?, &zero)?;
    let mut losses = Tensor::where_cond(&valid, &picked.neg()?.mul(&w_y)?, &zero)?;
    if ls > 0.0 {
        let smooth = log_probs
            .mul(&weight.reshape(&[1, classes as isize])?)?
            .sum(&[1], false)?
            .neg()?;
        let smooth = Tensor::where_cond(&valid, &smooth, &zero)?;
        losses = losses
            .mul_scalar(1.0 - ls)?
            .add(&smooth.mul_scalar(ls / classes as f32)?)?;
    }
    match options.reduction {
        Reduction::Mean => losses.sum_all()?.div(&w_y.sum_all()?),
        other => reduce_ignoring(losses, &targets, &out_shape, other, options.ignore_index),
    }
}

/// `log_probs[i, t_i]` of rows `[M, C]` and I32 targets `[M]`, with the
/// mask of the targets that are not `ignore_index` and the targets with
/// the ignored ones pointed at class 0 (so the gather cannot fault; the
/// caller masks their picks out).
fn picked_log_probs(
    log_probs: &Tensor,
    targets: &Tensor,
    ignore_index: i32,
) -> Result<(Tensor, Tensor, Tensor)> {
    let valid = targets.ne_scalar(ignore_index as f32)?;
    let zero = Tensor::zeros(&[], &log_probs.device())?;
    // Class ids are exact in f32 (< 2^24), so the round trip loses nothing.
    let safe = Tensor::where_cond(&valid, &targets.cast(DType::F32)?, &zero)?.cast(DType::I32)?;
    let picked = log_probs.gather(1, &safe.unsqueeze(1)?)?.squeeze(1)?;
    Ok((picked, valid, safe))
}

/// Cross-entropy against class probabilities: `-sum_c q_c * logp_c` with
/// `q = (1 - ls) * target + ls / C`; `Mean` divides by the number of samples.
fn soft_target_cross_entropy(
    logits: &Tensor,
    target: &Tensor,
    label_smoothing: f32,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    let shape = logits.shape();
    if target.shape() != shape {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: shape.to_vec(),
            rhs: target.shape().to_vec(),
        });
    }
    let class_axis = if shape.len() == 1 { 0 } else { 1 };
    let classes = shape
        .get(class_axis)
        .copied()
        .ok_or_else(|| Error::invalid(OP, "logits must have a class dim, got a 0-d tensor"))?;
    let q = if label_smoothing == 0.0 {
        target.clone()
    } else {
        target
            .mul_scalar(1.0 - label_smoothing)?
            .add_scalar(label_smoothing / classes as f32)?
    };
    let losses = logits
        .log_softmax(class_axis as isize)?
        .mul(&q)?
        .sum(&[class_axis as isize], false)?
        .neg()?;
    reduction.apply(losses)
}

/// Negative log-likelihood of log-probabilities (`torch.nn.functional.nll_loss`
/// with `ignore_index = -100`): `-log_probs[n, t_n]`. Shapes as
/// [`cross_entropy`] with class-index targets.
pub fn nll_loss(log_probs: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    nll_loss_with(log_probs, target, reduction, -100)
}

/// [`nll_loss`] with an explicit `ignore_index`: ignored targets give 0
/// loss and are not counted by `Mean`.
pub fn nll_loss_with(
    log_probs: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    ignore_index: i32,
) -> Result<Tensor> {
    const OP: &str = "nll_loss";
    let log_probs = &wgrad_autograd::autocast::full_precision(log_probs)?;
    if target.dtype() != DType::I32 {
        return Err(Error::DTypeMismatch {
            op: OP,
            expected: DType::I32,
            got: target.dtype(),
        });
    }
    let (rows, targets, shape) = as_rows(OP, log_probs, target)?;
    // Ignored targets (often -100) would make the gather fault: they are
    // pointed at class 0 and their loss masked out.
    let (picked, valid, _) = picked_log_probs(&rows, &targets, ignore_index)?;
    let zero = Tensor::zeros(&[], &rows.device())?;
    let losses = Tensor::where_cond(&valid, &picked.neg()?, &zero)?;
    reduce_ignoring(losses, &targets, &shape, reduction, ignore_index)
}
