//! Scaled dot-product attention: the CPU/GPU dispatch point of the fused
//! forward and backward.

use wgrad_core::Result;
use wgrad_core::checks::attention::{AttentionGeometry, OP};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::half_compute::{half_of, narrow, widen_all};
use super::{Storage, all_cpu, all_gpu, mismatch, stray};

impl Storage {
    /// Attention output and per-row log-sum-exp of q (`self`), k, v and
    /// the optional mask (see `wgrad_core::checks::attention`).
    pub fn attention_forward(
        &self,
        k: &Storage,
        v: &Storage,
        mask: Option<&Storage>,
        g: &AttentionGeometry,
    ) -> Result<(Storage, Storage)> {
        if let Some(half) = half_of(self) {
            // Computed in F32; the output is rounded to q's dtype, the
            // log-sum-exp stays F32 (PyTorch's too).
            let [q, k, v] = widen_all([self, k, v])?;
            let mask = mask.map(|m| widen_all([m])).transpose()?;
            let (o, l) = q.attention_forward(&k, &v, mask.as_ref().map(|[m]| m), g)?;
            return Ok((narrow(o, Some(half))?, l));
        }
        let m = mask.unwrap_or(self);
        if let Some([q, k, v, m]) = all_cpu([self, k, v, m]) {
            let (o, l) = CpuTensor::attention_forward(q, k, v, mask.map(|_| m), g)?;
            return Ok((Storage::Cpu(o), Storage::Cpu(l)));
        }
        if let Some([q, k, v, m]) = all_gpu([self, k, v, m]) {
            let (o, l) = GpuTensor::attention_forward(q, k, v, mask.map(|_| m), g)?;
            return Ok((Storage::Gpu(o), Storage::Gpu(l)));
        }
        Err(mismatch(OP, self, stray(self, &[k, v, m])))
    }

    /// Gradients of q (`self`), k and v in the broadcast batch shape.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        &self,
        k: &Storage,
        v: &Storage,
        mask: Option<&Storage>,
        out: &Storage,
        lse: &Storage,
        grad_out: &Storage,
        g: &AttentionGeometry,
    ) -> Result<(Storage, Storage, Storage)> {
        if [self, k, v, out, grad_out]
            .iter()
            .any(|s| s.dtype().is_half())
        {
            let halves = [half_of(self), half_of(k), half_of(v)];
            let [q, k, v, out, grad_out] = widen_all([self, k, v, out, grad_out])?;
            let mask = mask.map(|m| widen_all([m])).transpose()?;
            let m = mask.as_ref().map(|[m]| m);
            let (dq, dk, dv) = q.attention_backward(&k, &v, m, &out, lse, &grad_out, g)?;
            return Ok((
                narrow(dq, halves[0])?,
                narrow(dk, halves[1])?,
                narrow(dv, halves[2])?,
            ));
        }
        let m = mask.unwrap_or(self);
        if let Some([q, k, v, m, o, l, d]) = all_cpu([self, k, v, m, out, lse, grad_out]) {
            let (dq, dk, dv) = CpuTensor::attention_backward(q, k, v, mask.map(|_| m), o, l, d, g)?;
            return Ok((Storage::Cpu(dq), Storage::Cpu(dk), Storage::Cpu(dv)));
        }
        if let Some([q, k, v, m, o, l, d]) = all_gpu([self, k, v, m, out, lse, grad_out]) {
            let (dq, dk, dv) = GpuTensor::attention_backward(q, k, v, mask.map(|_| m), o, l, d, g)?;
            return Ok((Storage::Gpu(dq), Storage::Gpu(dk), Storage::Gpu(dv)));
        }
        Err(mismatch(
            OP,
            self,
            stray(self, &[k, v, m, out, lse, grad_out]),
        ))
    }
}
