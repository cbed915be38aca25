//! `layer_norm`: the CPU/GPU dispatch point of the fused forward and
//! backward.

use wgrad_core::Result;
use wgrad_core::checks::layer_norm::{LayerNormGeometry, OP};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::half_compute::{half_of, narrow, widen_all};
use super::{Storage, all_cpu, all_gpu, mismatch, stray};

/// The input, input gradient or parameter gradients of one call.
type Grads = (Option<Storage>, Option<Storage>, Option<Storage>);

impl Storage {
    /// The output and each row's mean and rstd of `layer_norm(self)`.
    pub fn layer_norm_forward(
        &self,
        weight: Option<&Storage>,
        bias: Option<&Storage>,
        g: &LayerNormGeometry,
    ) -> Result<(Storage, Storage, Storage)> {
        let (w, b) = (weight.unwrap_or(self), bias.unwrap_or(self));
        if [self, w, b].iter().any(|s| s.dtype().is_half()) {
            // Computed in F32; the output takes the input's dtype, the row
            // statistics stay F32 (PyTorch's too).
            let [x, w, b] = widen_all([self, w, b])?;
            let (y, m, r) = x.layer_norm_forward(weight.map(|_| &w), bias.map(|_| &b), g)?;
            return Ok((narrow(y, half_of(self))?, m, r));
        }
        if let Some([x, w, b]) = all_cpu([self, w, b]) {
            let (y, m, r) = x.layer_norm_forward(weight.map(|_| w), bias.map(|_| b), g)?;
            return Ok((Storage::Cpu(y), Storage::Cpu(m), Storage::Cpu(r)));
        }
        if let Some([x, w, b]) = all_gpu([self, w, b]) {
            let (y, m, r) = x.layer_norm_forward(weight.map(|_| w), bias.map(|_| b), g)?;
            return Ok((Storage::Gpu(y), Storage::Gpu(m), Storage::Gpu(r)));
        }
        Err(mismatch(OP, self, stray(self, &[w, b])))
    }

    /// Gradients of `layer_norm`'s input, weight and bias (where `needs`
    /// asks) from the output gradient `self`.
    pub fn layer_norm_backward(
        &self,
        x: &Storage,
        weight: Option<&Storage>,
        mean: &Storage,
        rstd: &Storage,
        g: &LayerNormGeometry,
        needs: [bool; 3],
    ) -> Result<Grads> {
        let w = weight.unwrap_or(x);
        if [self, x, w].iter().any(|s| s.dtype().is_half()) {
            let (hx, hw) = (half_of(x), half_of(w));
            let [dy, x, w] = widen_all([self, x, w])?;
            let (dx, dw, db) =
                dy.layer_norm_backward(&x, weight.map(|_| &w), mean, rstd, g, needs)?;
            let round = |t: Option<Storage>, to| t.map(|t| narrow(t, to)).transpose();
            return Ok((round(dx, hx)?, round(dw, hw)?, round(db, hw)?));
        }
        if let Some([dy, x, w, m, r]) = all_cpu([self, x, w, mean, rstd]) {
            let (dx, dw, db) =
                CpuTensor::layer_norm_backward(dy, x, weight.map(|_| w), m, r, g, needs)?;
            return Ok((
                dx.map(Storage::Cpu),
                dw.map(Storage::Cpu),
                db.map(Storage::Cpu),
            ));
        }
        if let Some([dy, x, w, m, r]) = all_gpu([self, x, w, mean, rstd]) {
            let (dx, dw, db) =
                GpuTensor::layer_norm_backward(dy, x, weight.map(|_| w), m, r, g, needs)?;
            return Ok((
                dx.map(Storage::Gpu),
                dw.map(Storage::Gpu),
                db.map(Storage::Gpu),
            ));
        }
        Err(mismatch(OP, self, stray(self, &[x, w, mean, rstd])))
    }
}
