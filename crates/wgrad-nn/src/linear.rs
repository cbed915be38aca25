//! [`Linear`]: `y = x W^T + b` (`torch.nn.Linear`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::Result;

use crate::Module;
use crate::init::{self, FanMode, Nonlinearity};

/// A fully connected layer: `forward(x) = x @ weight^T + bias` over the last
/// dim of `x` (any leading batch dims). `weight` is `[out, in]` and `bias`
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
        // A single sample [in] is a batch of one, as torch.matmul promotes it.
        if x.rank() == 1 {
            return self.forward(&x.unsqueeze(0)?)?.squeeze(0);
        }
        // The transpose is free: matmul_t reads W through swapped strides.
        let y = x.matmul_t(&self.weight, false, true)?;
        match &self.bias {
            // Under autocast the bias joins the product's lower precision.
            Some(b) => y.add(&wgrad_autograd::autocast::lower_precision(b)?),
            None => Ok(y),
        }
    }
}
