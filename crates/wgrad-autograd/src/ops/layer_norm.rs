//! `layer_norm` (`torch.nn.functional.layer_norm`) and its backward rule:
//! one fused op on either device (semantics and checks:
//! `wgrad_core::checks::layer_norm`) whose node keeps each row's mean and
//! rstd, so the backward needs no recomputed statistics.

use wgrad_core::Result;
use wgrad_core::checks::layer_norm::{LayerNormGeometry, layer_norm};

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

impl Tensor {
    /// `F.layer_norm(x, normalized_shape, weight, bias, eps)`: normalises
    /// over the trailing dims `normalized_shape` by each slice's mean and
    /// biased variance, `(x - mean) / sqrt(var + eps)`, then scales by
    /// `weight` and shifts by `bias` (each of shape `normalized_shape`,
    /// both optional). One fused kernel forward and two backward on the
    /// GPU; [`LayerNorm`](../wgrad_nn/struct.LayerNorm.html) is this with
    /// learned parameters.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 4.0, 4.0], &[2, 3], &Device::Cpu)?;
    /// let y = x.layer_norm(&[3], None, None, 1e-5)?;
    /// let v = y.to_vec_f32()?;
    /// assert!((v[0] + 1.2247).abs() < 1e-3 && v[1].abs() < 1e-6);
    /// assert_eq!(&v[3..], [0.0, 0.0, 0.0]); // a constant row
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f32,
    ) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.layer_norm(
                normalized_shape,
                weight,
                bias,
                eps,
            );
        }
        let geometry = layer_norm(
            (&self.shape(), self.dtype()),
            normalized_shape,
            weight
                .map(|w| (w.shape(), w.dtype()))
                .as_ref()
                .map(|(s, d)| (&s[..], *d)),
            bias.map(|b| (b.shape(), b.dtype()))
                .as_ref()
                .map(|(s, d)| (&s[..], *d)),
            eps,
        )?;
        let (ws, bs) = (weight.map(Tensor::storage), bias.map(Tensor::storage));
        let (y, mean, rstd) =
            self.storage()
                .layer_norm_forward(ws.as_ref(), bs.as_ref(), &geometry)?;
        let mut inputs = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        Ok(Tensor::record(
            y,
            Op::LayerNorm(Box::new(LayerNormSaved {
                geometry,
                mean,
                rstd,
                has_weight: weight.is_some(),
                has_bias: bias.is_some(),
            })),
            &inputs,
        ))
    }
}

/// What a layer_norm node keeps besides its inputs `[x, weight?, bias?]`.
#[derive(Clone, Debug)]
pub(crate) struct LayerNormSaved {
    pub geometry: LayerNormGeometry,
    pub mean: Storage,
    pub rstd: Storage,
    pub has_weight: bool,
    pub has_bias: bool,
}

/// Gradients of `[x, weight?, bias?]` (the inputs the node has), each only
/// where `needs` (one per input) asks.
pub(crate) fn layer_norm_grads(
    g: &Storage,
    saved: &LayerNormSaved,
    x: Storage,
    weight: Option<Storage>,
    needs: &[bool],
) -> Result<Vec<Option<Storage>>> {
    let need = |i: usize| needs.get(i).copied().unwrap_or(false);
    let w_at = 1;
    let b_at = 1 + usize::from(saved.has_weight);
    let (dx, dw, db) = g.layer_norm_backward(
        &x,
        weight.as_ref(),
        &saved.mean,
        &saved.rstd,
        &saved.geometry,
        [
            need(0),
            saved.has_weight && need(w_at),
            saved.has_bias && need(b_at),
        ],
    )?;
    let mut out = vec![dx];
    if saved.has_weight {
        out.push(dw);
    }
    if saved.has_bias {
        out.push(db);
    }
    Ok(out)
}
