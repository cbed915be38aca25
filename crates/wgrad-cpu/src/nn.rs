//! Fused cross-entropy (log-softmax + NLL per sample) and its gradient:
//! the reference semantics of `kernels/nn/cross_entropy*.wgsl`.
//!
//! Fusing matters for the GPU (one pass over the logits instead of a
//! log-softmax tensor, a gather and their backward); here it is simply the
//! clearest statement of `torch.nn.functional.cross_entropy(reduction='none')`
//! with class-index targets, `label_smoothing` and `ignore_index`.

use std::borrow::Cow;

use ndarray::{ArrayViewD, Axis};
use wgrad_core::math::exp;
use wgrad_core::{DType, Error, Result, checks};

use crate::alloc::{try_vec, try_zeroed};
use crate::parallel;
use crate::softmax::{lane_max, sum_exp_shifted};
use crate::tensor::{CpuTensor, expect_dtype};

impl CpuTensor {
    /// Per-sample cross-entropy of logits `[N, C]` (F32, any strides)
    /// against class indices `target` `[N]` (I32):
    /// `loss_n = -(1 - ls) * logp[n, t_n] - ls / C * sum_c logp[n, c]`
    /// with `logp = log_softmax(logits, 1)`, and 0 where
    /// `t_n == ignore_index`. A target outside `0..C` that is not
    /// `ignore_index` is `IndexOutOfRange`.
    pub fn cross_entropy(
        &self,
        target: &CpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Self> {
        const OP: &str = "cross_entropy";
        let (n, c) = check_inputs(OP, self, target, label_smoothing)?;
        let targets = checked_targets(OP, target, c, ignore_index)?;
        let row_loss = |lane: &[f32], t: usize| {
            let (m, log_total) = max_and_log_sum_exp(lane);
            let logp = |x: f32| (x - m) - log_total;
            let mut loss = -(1.0 - label_smoothing) * logp(lane[t]);
            // Skipped at 0 so a -inf logit (a masked class) cannot turn the
            // unused smoothing term into 0 * inf = NaN.
            if label_smoothing != 0.0 {
                let sum_logp: f32 = lane.iter().map(|&x| logp(x)).sum();
                loss -= label_smoothing / c as f32 * sum_logp;
            }
            loss
        };
        let mut out = try_zeroed(OP, n)?;
        if let Some(data) = self.contiguous_slice::<f32>()? {
            // Dense logits: rows over threads when large.
            parallel::for_each_row(&mut out, 1, n * c * parallel::HEAVY, |row, o| {
                if let Some(t) = targets[row] {
                    o[0] = row_loss(&data[row * c..(row + 1) * c], t);
                }
            });
            return CpuTensor::from_vec(out, &[n]);
        }
        let logits = self.as_f32()?;
        for (row, (o, t)) in out.iter_mut().zip(&targets).enumerate() {
            let Some(t) = *t else { continue };
            *o = row_loss(&dense_row(OP, &logits, row)?, t);
        }
        CpuTensor::from_vec(out, &[n])
    }

    /// The 'mean' reduction of per-sample losses `[N]` (this tensor, F32,
    /// e.g. [`cross_entropy`](Self::cross_entropy)'s) over the samples whose
    /// `target` `[N]` (I32) is not `ignore_index`: `(mean, count)`, both
    /// 0-d F32, as `F.cross_entropy(..., reduction='mean')` divides (a NaN
    /// mean when every sample is ignored). Summed in f64.
    pub fn cross_entropy_mean(
        &self,
        target: &CpuTensor,
        ignore_index: i32,
    ) -> Result<(Self, Self)> {
        const OP: &str = "cross_entropy_mean";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, target, DType::I32)?;
        checks::loss::loss_mean(OP, self.shape(), target.shape())?;
        let losses = self.dense::<f32>(OP)?;
        let targets = target.dense::<i32>(OP)?;
        let (mut sum, mut count) = (0.0f64, 0usize);
        for (&l, &t) in losses.iter().zip(targets.iter()) {
            if t != ignore_index {
                sum += f64::from(l);
                count += 1;
            }
        }
        let count = count as f64;
        Ok((
            CpuTensor::from_vec(vec![(sum / count) as f32], &[])?,
            CpuTensor::from_vec(vec![count as f32], &[])?,
        ))
    }

    /// Checks that every element is in [0, 1] (not NaN), as
    /// `binary_cross_entropy` requires of its input; the first element
    /// outside is PyTorch's error, with its index.
    pub fn check_unit_interval(&self) -> Result<()> {
        const OP: &str = "binary_cross_entropy";
        expect_dtype(OP, self, DType::F32)?;
        let values = self.dense::<f32>(OP)?;
        match values.iter().position(|v| !(0.0..=1.0).contains(v)) {
            Some(i) => Err(checks::loss::outside_unit_interval(OP, i)),
            None => Ok(()),
        }
    }

    /// Gradient of [`cross_entropy`](Self::cross_entropy) w.r.t. the logits
    /// given the per-sample upstream gradient `grad` `[N]` (F32):
    /// `dlogits[n, c] = grad_n * (softmax[n, c] - (1 - ls) * [c == t_n] - ls / C)`,
    /// with all-zero rows for ignored samples. The result is contiguous `[N, C]`.
    pub fn cross_entropy_backward(
        &self,
        target: &CpuTensor,
        grad: &CpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Self> {
        const OP: &str = "cross_entropy_backward";
        let (n, c) = check_inputs(OP, self, target, label_smoothing)?;
        expect_dtype(OP, grad, DType::F32)?;
        checks::loss::cross_entropy_grad(OP, n, grad.shape())?;
        let targets = checked_targets(OP, target, c, ignore_index)?;
        let grads = grad.dense::<f32>(OP)?;
        let uniform = label_smoothing / c.max(1) as f32;
        let row_grad = |lane: &[f32], t: usize, g: f32, dst: &mut [f32]| {
            let (m, log_total) = max_and_log_sum_exp(lane);
            let total = exp(log_total);
            for (k, (d, &x)) in dst.iter_mut().zip(lane.iter()).enumerate() {
                let hit = if k == t { 1.0 - label_smoothing } else { 0.0 };
                *d = g * (exp(x - m) / total - hit - uniform);
            }
        };
        let mut out = try_zeroed(OP, n * c)?;
        if let Some(data) = self.contiguous_slice::<f32>()?
            && c > 0
        {
            // Dense logits: rows over threads when large (ignored rows stay 0).
            parallel::for_each_row(&mut out, c, n * c * parallel::HEAVY, |row, dst| {
                if let Some(t) = targets[row] {
                    row_grad(&data[row * c..(row + 1) * c], t, grads[row], dst);
                }
            });
            return CpuTensor::from_vec(out, &[n, c]);
        }
        let logits = self.as_f32()?;
        for (row, (dst, t)) in out.chunks_mut(c.max(1)).zip(&targets).enumerate() {
            let Some(t) = *t else { continue };
            row_grad(&dense_row(OP, &logits, row)?, t, grads[row], dst);
        }
        CpuTensor::from_vec(out, &[n, c])
    }
}

/// Row `row` of the 2-D logits: borrowed when they are dense, else staged
/// into a dense lane (rows are strided when the logits are a transposed
/// view).
fn dense_row<'a>(
    op: &'static str,
    logits: &'a ArrayViewD<'_, f32>,
    row: usize,
) -> Result<Cow<'a, [f32]>> {
    let lane = logits.index_axis(Axis(0), row);
    Ok(match lane.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => {
            let mut staged = try_vec(op, lane.len())?;
            staged.extend(lane.iter().copied());
            Cow::Owned(staged)
        }
    })
}

/// Validates logits `[N, C]` F32, target `[N]` I32 and the smoothing
/// factor; returns `(N, C)`.
fn check_inputs(
    op: &'static str,
    logits: &CpuTensor,
    target: &CpuTensor,
    label_smoothing: f32,
) -> Result<(usize, usize)> {
    expect_dtype(op, logits, DType::F32)?;
    expect_dtype(op, target, DType::I32)?;
    checks::loss::cross_entropy(op, logits.shape(), target.shape(), label_smoothing)
}

/// The class of every sample (`None` for ignored ones); any other target
/// outside `0..classes` is an error.
fn checked_targets(
    op: &'static str,
    target: &CpuTensor,
    classes: usize,
    ignore_index: i32,
) -> Result<Vec<Option<usize>>> {
    let targets = target.dense::<i32>(op)?;
    let mut out = try_vec(op, targets.len())?;
    for &t in targets.iter() {
        if t == ignore_index {
            out.push(None);
            continue;
        }
        match usize::try_from(t) {
            Ok(u) if u < classes => out.push(Some(u)),
            _ => {
                return Err(Error::IndexOutOfRange {
                    op,
                    index: i64::from(t),
                    size: classes,
                });
            }
        }
    }
    Ok(out)
}

/// `(max, ln(sum(exp(x - max))))` of a lane; NaN propagates through the max.
fn max_and_log_sum_exp(lane: &[f32]) -> (f32, f32) {
    let m = lane_max(lane);
    (m, sum_exp_shifted(lane, m).ln())
}
