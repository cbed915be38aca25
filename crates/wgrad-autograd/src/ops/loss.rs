//! Fused losses.

use wgrad_core::Result;

use crate::graph::Op;
use crate::tensor::Tensor;

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
            },
            &[self],
        ))
    }
}
