//! [`LayerNorm`]: normalisation over the trailing dims (`torch.nn.LayerNorm`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;

/// `y = (x - mean) / sqrt(var + eps) * weight + bias`, with the mean and the
/// biased variance (correction 0) taken over the last
/// `normalized_shape.len()` dims, whose sizes must equal `normalized_shape`.
/// `weight` (ones) and `bias` (zeros) have `normalized_shape` and exist
/// only with `elementwise_affine`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{LayerNorm, Module};
/// let norm = LayerNorm::new(&[8], 1e-5, true, &Device::Cpu)?;
/// let y = norm.forward(&Tensor::randn(&[2, 5, 8], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 5, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct LayerNorm {
    normalized_shape: Vec<usize>,
    eps: f32,
    /// Per-element scale, when affine.
    pub weight: Option<Tensor>,
    /// Per-element shift, when affine.
    pub bias: Option<Tensor>,
    training: bool,
}

impl LayerNorm {
    /// A layer normalising over `normalized_shape` (torch's defaults:
    /// `eps = 1e-5`, `elementwise_affine = true`).
    pub fn new(
        normalized_shape: &[usize],
        eps: f32,
        elementwise_affine: bool,
        device: &Device,
    ) -> Result<Self> {
        if normalized_shape.is_empty() {
            return Err(Error::invalid(
                "LayerNorm",
                "normalized_shape must have at least one dim",
            ));
        }
        let (weight, bias) = if elementwise_affine {
            (
                Some(Tensor::ones(normalized_shape, device)?.with_requires_grad(true)?),
                Some(Tensor::zeros(normalized_shape, device)?.with_requires_grad(true)?),
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            bias,
            training: true,
        })
    }

    /// Keeps the shift only when `bias` (torch's `bias=False` drops it;
    /// the scale stays): `LayerNorm::new(..)?.with_bias(false)`.
    pub fn with_bias(mut self, bias: bool) -> Self {
        if !bias {
            self.bias = None;
        }
        self
    }

    /// The normalised trailing shape.
    pub fn normalized_shape(&self) -> &[usize] {
        &self.normalized_shape
    }

    /// The epsilon added to the variance.
    pub fn eps(&self) -> f32 {
        self.eps
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let shape = x.shape();
        let k = self.normalized_shape.len();
        if shape.len() < k || shape[shape.len() - k..] != self.normalized_shape[..] {
            return Err(Error::ShapeMismatch {
                op: "layer_norm",
                lhs: shape.to_vec(),
                rhs: self.normalized_shape.clone(),
            });
        }
        x.layer_norm(
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}
