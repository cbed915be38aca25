//! `scaled_dot_product_attention` (PyTorch's
//! `torch.nn.functional.scaled_dot_product_attention`) and its backward
//! rule: one fused op on either device (see `wgrad_core::checks::attention`
//! for the semantics), whose node saves the per-row log-sum-exp so the
//! backward recomputes the probabilities instead of storing them.

use wgrad_core::Result;
use wgrad_core::checks::attention::{AttentionArgs, AttentionGeometry, attention_geometry};

use crate::autocast::{self, AutocastGuard, lower_precision};
use crate::grad_mode::is_grad_enabled;
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::{Tensor, next_seed};

impl Tensor {
    /// Attention of this query `[..., L, E]` over `key` `[..., S, E]` and
    /// `value` `[..., S, Ev]`: `softmax(q k^T * scale + mask) v`, with the
    /// batch dims of all three broadcast, as PyTorch's
    /// `F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
    /// is_causal, scale)`.
    ///
    /// - `attn_mask`: boolean (U32, e.g. from a comparison; true = take
    ///   part) or additive (F32), broadcastable to `[..., L, S]`. Not
    ///   allowed together with `is_causal`. An additive mask that requires
    ///   grad gets its gradient (that call runs the unfused attention).
    /// - `dropout_p`: probability of zeroing each attention weight (the
    ///   rest scaled by `1 / (1 - p)`); applied whenever it is nonzero, as
    ///   in PyTorch's functional form (modules pass 0 in eval mode).
    /// - `is_causal`: query `i` sees keys `j <= i` (top-left aligned).
    /// - `scale`: `None` is `1 / sqrt(E)`.
    ///
    /// A query row whose every key is masked gives zeros (PyTorch's safe
    /// softmax). The GPU runs fused kernels that never store the `L x S`
    /// scores; the backward recomputes them from the saved log-sum-exp.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let q = Tensor::randn(&[2, 4, 8, 16], &Device::Cpu)?;
    /// let kv = Tensor::randn(&[2, 4, 8, 16], &Device::Cpu)?;
    /// let y = q.scaled_dot_product_attention(&kv, &kv, None, 0.0, true, None)?;
    /// assert_eq!(y.shape(), [2, 4, 8, 16]);
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn scaled_dot_product_attention(
        &self,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let args = AttentionArgs {
            dropout_p,
            is_causal,
            scale,
        };
        let seed = if dropout_p > 0.0 { next_seed() } else { 0 };
        self.scaled_dot_product_attention_with(key, value, attn_mask, &args, seed)
    }

    /// [`scaled_dot_product_attention`](Self::scaled_dot_product_attention)
    /// with the keyword arguments in one struct and an explicit dropout
    /// seed instead of one from the default generator, so that a dropout
    /// draw can be repeated exactly (on either device: both draw the same
    /// weights for one seed).
    pub fn scaled_dot_product_attention_with(
        &self,
        key: &Tensor,
        value: &Tensor,
        attn_mask: Option<&Tensor>,
        args: &AttentionArgs,
        seed: u64,
    ) -> Result<Tensor> {
        if autocast::is_autocast_enabled() {
            let (q, k, v) = (
                lower_precision(self)?,
                lower_precision(key)?,
                lower_precision(value)?,
            );
            let _plain = AutocastGuard::disabled();
            return q.scaled_dot_product_attention_with(&k, &v, attn_mask, args, seed);
        }
        let mask_info = attn_mask.map(|m| (m.shape(), m.dtype()));
        let geometry = attention_geometry(
            &self.shape(),
            &key.shape(),
            &value.shape(),
            mask_info.as_ref().map(|(s, d)| (&s[..], *d)),
            args,
            seed,
        )?;
        if let Some(m) = attn_mask
            && m.dtype().is_float()
            && m.requires_grad()
            && is_grad_enabled()
        {
            return self.attention_with_mask_grad(key, value, m, &geometry, seed);
        }
        let mask = attn_mask.map(|m| m.storage());
        let (out, lse) = self.storage().attention_forward(
            &key.storage(),
            &value.storage(),
            mask.as_ref(),
            &geometry,
        )?;
        Ok(Tensor::record(
            out,
            Op::Attention(Box::new(AttentionSaved {
                geometry,
                mask,
                lse,
            })),
            &[self, key, value],
        ))
    }
}

impl Tensor {
    /// The attention written out (scores, masked softmax, dropout, values)
    /// for an additive mask that requires grad: PyTorch differentiates the
    /// mask too, which the fused kernels (like PyTorch's own fused ones) do
    /// not. The `L x S` scores exist here. A row whose every score is
    /// `-inf` still gives zeros and zero gradients.
    fn attention_with_mask_grad(
        &self,
        key: &Tensor,
        value: &Tensor,
        mask: &Tensor,
        geometry: &AttentionGeometry,
        seed: u64,
    ) -> Result<Tensor> {
        let device = self.device();
        let scores = self
            .matmul_t(key, false, true)?
            .mul_scalar(geometry.scale)?
            .add(mask)?;
        let zero = Tensor::zeros(&[], &device)?;
        // Rows with no key left would soft-max to NaN (and NaN gradients):
        // give them finite scores, then zero weights.
        let dead = scores.max(&[-1], true)?.eq_scalar(f32::NEG_INFINITY)?;
        let live_scores = Tensor::where_cond(&dead, &zero, &scores)?;
        let mut weights = Tensor::where_cond(&dead, &zero, &live_scores.softmax(-1)?)?;
        if geometry.dropout_p > 0.0 {
            let keep = Tensor::rand_with(&weights.shape(), 0.0, 1.0, seed, &device)?
                .ge_scalar(geometry.dropout_p)?;
            let kept = weights.mul_scalar(1.0 / (1.0 - geometry.dropout_p))?;
            weights = Tensor::where_cond(&keep, &kept, &zero)?;
        }
        weights.matmul(value)
    }
}

/// What an attention node keeps besides its inputs and output.
#[derive(Clone, Debug)]
pub(crate) struct AttentionSaved {
    pub geometry: AttentionGeometry,
    pub mask: Option<Storage>,
    pub lse: Storage,
}

/// Gradients of q, k and v (each summed back to its own shape where its
/// batch dims were broadcast).
pub(crate) fn attention_grads(
    g: &Storage,
    saved: &AttentionSaved,
    operands: [Storage; 3],
    out: Storage,
    shapes: [Vec<usize>; 3],
) -> Result<Vec<Option<Storage>>> {
    let [q, k, v] = operands;
    let (dq, dk, dv) = q.attention_backward(
        &k,
        &v,
        saved.mask.as_ref(),
        &out,
        &saved.lse,
        g,
        &saved.geometry,
    )?;
    let [sq, sk, sv] = shapes;
    Ok(vec![
        Some(dq.sum_to_shape(&sq)?),
        Some(dk.sum_to_shape(&sk)?),
        Some(dv.sum_to_shape(&sv)?),
    ])
}
