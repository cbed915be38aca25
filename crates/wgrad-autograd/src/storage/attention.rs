//! Scaled dot-product attention: the CPU/GPU dispatch point of the fused
//! forward and backward.

use wgrad_core::Result;
use wgrad_core::checks::attention::{AttentionGeometry, OP};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::{Storage, mismatch};

/// The CPU tensors of `operands`, or `None` if any is elsewhere.
fn all_cpu<const N: usize>(operands: [&Storage; N]) -> Option<[&CpuTensor; N]> {
    let mut out = Vec::with_capacity(N);
    for s in operands {
        match s {
            Storage::Cpu(t) => out.push(t),
            Storage::Gpu(_) => return None,
        }
    }
    out.try_into().ok()
}

/// The GPU tensors of `operands`, or `None` if any is elsewhere.
fn all_gpu<const N: usize>(operands: [&Storage; N]) -> Option<[&GpuTensor; N]> {
    let mut out = Vec::with_capacity(N);
    for s in operands {
        match s {
            Storage::Gpu(t) => out.push(t),
            Storage::Cpu(_) => return None,
        }
    }
    out.try_into().ok()
}

/// The first operand not on `q`'s device kind, for the error.
fn stray<'a>(q: &'a Storage, operands: &[&'a Storage]) -> &'a Storage {
    operands
        .iter()
        .find(|s| {
            matches!(
                (q, s),
                (Storage::Cpu(_), Storage::Gpu(_)) | (Storage::Gpu(_), Storage::Cpu(_))
            )
        })
        .copied()
        .unwrap_or(q)
}

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
