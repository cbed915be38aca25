//! [`Linear`]: `y = x W^T + b` (`torch.nn.Linear`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::Result;

use crate::Module;
use crate::init::{self, FanMode, Nonlinearity};

/// A fully connected layer: `forward(x) = x @ weight^T + bias` over the last
/// dim of `x` (any leading batch dims), through the fused [`linear`] (the
/// bias added in the product's pass; under autocast the input, weight and
/// bias all run in the region's dtype). `weight` is `[out, in]` and `bias`
/// `[out]`, as in PyTorch.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Linear, Module};
/// let layer = Linear::new(4, 3, true, &Device::Cpu)?;
/// let y = layer.forward(&Tensor::randn(&[2, 4], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 3]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
#[module(forward_relu = forward_relu)]
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Tensor,
    /// `[out_features]`, when the layer has one.
    pub bias: Option<Tensor>,
    training: bool,
}

impl Linear {
    /// A layer with PyTorch's default initialisation: the weight from
    /// `kaiming_uniform_(a = sqrt(5))`, i.e. `U(-1/sqrt(in), 1/sqrt(in))`,
    /// and the bias from the same range. Drawn from the default generator
    /// (see `wgrad_autograd::manual_seed`), identically on every device.
    pub fn new(
        in_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        let weight = Tensor::zeros(&[out_features, in_features], device)?;
        init::kaiming_uniform_(
            &weight,
            5f32.sqrt(),
            FanMode::FanIn,
            Nonlinearity::LeakyRelu,
        )?;
        let bias = if bias {
            let b = Tensor::zeros(&[out_features], device)?;
            let bound = if in_features > 0 {
                1.0 / (in_features as f32).sqrt()
            } else {
                0.0
            };
            init::uniform_(&b, -bound, bound)?;
            Some(b.with_requires_grad(true)?)
        } else {
            None
        };
        Ok(Linear {
            weight: weight.with_requires_grad(true)?,
            bias,
            training: true,
        })
    }

    /// A layer over given parameters (`weight` `[out, in]`, `bias` `[out]`).
    pub fn from_parameters(weight: Tensor, bias: Option<Tensor>) -> Self {
        Linear {
            weight,
            bias,
            training: true,
        }
    }

    /// `in_features`.
    pub fn in_features(&self) -> usize {
        self.weight.shape().get(1).copied().unwrap_or(0)
    }

    /// `out_features`.
    pub fn out_features(&self) -> usize {
        self.weight.shape().first().copied().unwrap_or(0)
    }
}

impl Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.linear(&self.weight, self.bias.as_ref())
    }

    /// `relu(forward(x))` in one node, the ReLU in the product's pass.
    fn forward_relu(&self, x: &Tensor) -> Result<Tensor> {
        x.linear_relu(&self.weight, self.bias.as_ref())
    }
}

/// `torch.nn.functional.linear(x, weight, bias)`: `x @ weight^T + bias`
/// over the last dim of `x` (any leading dims; a 1-D `x` gives `[out]`),
/// one fused op whose bias is added in the product's own pass (see
/// [`Tensor::linear`]). `weight` is `[out, in]`, `bias` `[out]`.
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor};
/// let x = Tensor::ones(&[4, 2, 3], &Device::Cpu)?;
/// let w = Tensor::ones(&[5, 3], &Device::Cpu)?;
/// let b = Tensor::full(&[5], 0.5, DType::F32, &Device::Cpu)?;
/// let y = wgrad_nn::linear(&x, &w, Some(&b))?;
/// assert_eq!(y.shape(), [4, 2, 5]);
/// assert_eq!(y.to_vec_f32()?[0], 3.5);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    x.linear(weight, bias)
}
