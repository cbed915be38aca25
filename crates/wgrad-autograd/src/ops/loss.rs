//! Fused losses.

use wgrad_core::Result;

use crate::Storage;
use crate::grad_mode::is_grad_enabled;
use crate::graph::Op;
use crate::tensor::Tensor;

/// The fused cross-entropy under `wgrad_nn::loss::cross_entropy`, which
/// adds the reductions, higher-rank logits and probability targets.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// // Two samples, three classes; equal logits give log(3) each.
/// let logits = Tensor::zeros(&[2, 3], &cpu)?;
/// let target = Tensor::from_vec(vec![0i32, 2], &[2], &cpu)?;
/// let loss = logits.cross_entropy_per_sample(&target, 0.0, -100)?;
/// for l in loss.to_vec_f32()? {
///     assert!((l - 3f32.ln()).abs() < 1e-6);
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// Per-sample cross-entropy (`reduction='none'`) of logits `[N, C]`
    /// against I32 class targets `[N]`, as one fused log-softmax + NLL kernel
    /// forward and backward. Samples whose target equals `ignore_index` get 0.
    /// `wgrad_nn::cross_entropy` builds the mean/sum reductions on top.
    pub fn cross_entropy_per_sample(
        &self,
        target: &Tensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.cross_entropy_per_sample(
                target,
                label_smoothing,
                ignore_index,
            );
        }
        let target = target.storage();
        let out = self
            .storage()
            .cross_entropy(&target, label_smoothing, ignore_index)?;
        Ok(Tensor::record(
            out,
            Op::CrossEntropy {
                target,
                label_smoothing,
                ignore_index,
                mean_count: None,
                unit_seed: None,
                seeded_grad: None,
            },
            &[self],
        ))
    }

    /// The 'mean' reduction of per-sample losses (this tensor, `[N]` F32,
    /// e.g. [`cross_entropy_per_sample`](Self::cross_entropy_per_sample)'s)
    /// over the samples whose `target` `[N]` (I32) is not `ignore_index`:
    /// their sum divided by their count, as
    /// `F.cross_entropy(..., reduction='mean')` (NaN when every sample is
    /// ignored). One fused reduction on a GPU.
    pub fn cross_entropy_mean(&self, target: &Tensor, ignore_index: i32) -> Result<Tensor> {
        let (mean, count) = self
            .storage()
            .cross_entropy_mean(&target.storage(), ignore_index)?;
        Ok(Tensor::record(
            mean,
            Op::CrossEntropyMean { count },
            &[self],
        ))
    }

    /// `cross_entropy_per_sample(..)` reduced by `cross_entropy_mean(..)`
    /// (`F.cross_entropy(..., reduction='mean')`) as one graph node: on a
    /// GPU one forward dispatch for small losses (at most 256 rows), and a
    /// backward that divides by the count in the gradient kernel itself.
    /// F32 logits (`DTypeMismatch` otherwise; `nn::loss::cross_entropy`
    /// reduces half logits its own way).
    pub fn cross_entropy_mean_loss(
        &self,
        target: &Tensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<Tensor> {
        if self.dtype() != wgrad_core::DType::F32 {
            return Err(wgrad_core::Error::DTypeMismatch {
                op: "cross_entropy",
                expected: wgrad_core::DType::F32,
                got: self.dtype(),
            });
        }
        let target = target.storage();
        let logits = self.storage();
        let (mean, count, unit_seed, seeded_grad) = match (&logits, &target) {
            // One fused pass where the loss is small enough, with the
            // gradient for its own seed where a backward may follow.
            (Storage::Gpu(x), Storage::Gpu(t)) if self.requires_grad() && is_grad_enabled() => {
                let (mean, count, seeded) =
                    x.cross_entropy_mean_loss_with_grad(t, label_smoothing, ignore_index)?;
                let (unit, grad) = seeded.unzip();
                (
                    Storage::Gpu(mean),
                    Storage::Gpu(count),
                    unit.map(Storage::Gpu),
                    grad.map(Storage::Gpu),
                )
            }
            (Storage::Gpu(x), Storage::Gpu(t)) => {
                let (mean, count, unit) =
                    x.cross_entropy_mean_loss(t, label_smoothing, ignore_index)?;
                (
                    Storage::Gpu(mean),
                    Storage::Gpu(count),
                    unit.map(Storage::Gpu),
                    None,
                )
            }
            _ => {
                let (mean, count) = logits
                    .cross_entropy(&target, label_smoothing, ignore_index)?
                    .cross_entropy_mean(&target, ignore_index)?;
                (mean, count, None, None)
            }
        };
        Ok(Tensor::record(
            mean,
            Op::CrossEntropy {
                target,
                label_smoothing,
                ignore_index,
                mean_count: Some(count),
                unit_seed,
                seeded_grad,
            },
            &[self],
        ))
    }
}
