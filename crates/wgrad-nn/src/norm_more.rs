//! [`RMSNorm`] (`torch.nn.RMSNorm`) and [`InstanceNorm1d`] /
//! [`InstanceNorm2d`] (`torch.nn.InstanceNorm1d/2d`), composed from
//! reductions and elementwise ops on either device.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;

/// `x / sqrt(mean(x^2) + eps) * weight` over the trailing
/// `normalized_shape` dims (`torch.nn.RMSNorm`; `eps` `None` is the input
/// dtype's machine epsilon, as PyTorch; `weight` starts at ones).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, RMSNorm};
/// let norm = RMSNorm::new(&[4], None, true, &Device::Cpu)?;
/// let y = norm.forward(&Tensor::full(&[2, 4], 3.0, wgrad_core::DType::F32, &Device::Cpu)?)?;
/// assert!(y.to_vec_f32()?.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct RMSNorm {
    normalized_shape: Vec<usize>,
    eps: Option<f32>,
    /// Per-element scale, when `elementwise_affine`.
    pub weight: Option<Tensor>,
    training: bool,
}

impl RMSNorm {
    /// `torch.nn.RMSNorm(normalized_shape, eps, elementwise_affine)`.
    pub fn new(
        normalized_shape: &[usize],
        eps: Option<f32>,
        elementwise_affine: bool,
        device: &Device,
    ) -> Result<Self> {
        if normalized_shape.is_empty() {
            return Err(Error::invalid(
                "RMSNorm",
                "normalized_shape must have at least one dim",
            ));
        }
        let weight = if elementwise_affine {
            Some(Tensor::ones(normalized_shape, device)?.with_requires_grad(true)?)
        } else {
            None
        };
        Ok(RMSNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let n = self.normalized_shape.len();
        let shape = x.shape();
        if shape.len() < n || shape[shape.len() - n..] != self.normalized_shape[..] {
            return Err(Error::invalid(
                "RMSNorm",
                format!(
                    "Given normalized_shape={:?}, expected input with shape [*, {}], but got input of size {:?}",
                    self.normalized_shape,
                    self.normalized_shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    shape.as_slice()
                ),
            ));
        }
        let eps = self.eps.unwrap_or(match x.dtype() {
            wgrad_core::DType::F16 => 9.765_625e-4,
            wgrad_core::DType::BF16 => 7.812_5e-3,
            _ => f32::EPSILON,
        });
        let axes: Vec<isize> = (1..=n as isize).map(|a| -a).collect();
        let rms = x.square()?.mean(&axes, true)?.add_scalar(eps)?.rsqrt()?;
        let y = x.mul(&rms)?;
        match &self.weight {
            Some(w) => y.mul(w),
            None => Ok(y),
        }
    }
}

/// What the two instance norms share: `(x - mean) / sqrt(var + eps)` over
/// each sample's channel's spatial dims (biased variance), then the
/// optional per-channel `weight` and `bias`.
struct Instance {
    num_features: usize,
    eps: f32,
    weight: Option<Tensor>,
    bias: Option<Tensor>,
}

impl Instance {
    fn new(num_features: usize, eps: f32, affine: bool, device: &Device) -> Result<Self> {
        let (weight, bias) = if affine {
            (
                Some(Tensor::ones(&[num_features], device)?.with_requires_grad(true)?),
                Some(Tensor::zeros(&[num_features], device)?.with_requires_grad(true)?),
            )
        } else {
            (None, None)
        };
        Ok(Instance {
            num_features,
            eps,
            weight,
            bias,
        })
    }

    /// `spatial`: the dims after the channel (1 or 2).
    fn forward(&self, name: &'static str, x: &Tensor, spatial: usize) -> Result<Tensor> {
        let rank = x.rank();
        if rank != spatial + 1 && rank != spatial + 2 {
            return Err(Error::invalid(
                name,
                format!(
                    "expected {}D (unbatched) or {}D (batched) input, got {rank}D input",
                    spatial + 1,
                    spatial + 2
                ),
            ));
        }
        let channel_axis = rank - spatial - 1;
        let channels = x.shape()[channel_axis];
        if self.weight.is_some() && channels != self.num_features {
            return Err(Error::invalid(
                name,
                format!(
                    "expected input's size at dim={channel_axis} to match num_features ({}), but got: {channels}.",
                    self.num_features
                ),
            ));
        }
        let count: usize = x.shape()[channel_axis + 1..].iter().product();
        // No running statistics: evaluation normalises by the input's own
        // statistics too, so PyTorch's check holds in both modes.
        if count <= 1 {
            return Err(Error::invalid(
                name,
                format!(
                    "Expected more than 1 spatial element when training, got input size {:?}",
                    x.shape().as_slice()
                ),
            ));
        }
        let axes: Vec<isize> = (1..=spatial as isize).map(|a| -a).collect();
        let mean = x.mean(&axes, true)?;
        let var = x.var(&axes, 0, true)?;
        let mut y = x.sub(&mean)?.mul(&var.add_scalar(self.eps)?.rsqrt()?)?;
        // Per-channel parameters line up with the channel dim.
        let mut param_shape = vec![1isize; spatial + 1];
        param_shape[0] = channels as isize;
        if let Some(w) = &self.weight {
            y = y.mul(&w.reshape(&param_shape)?)?;
        }
        if let Some(b) = &self.bias {
            y = y.add(&b.reshape(&param_shape)?)?;
        }
        Ok(y)
    }
}

macro_rules! instance_norm {
    ($(#[$doc:meta])* $name:ident, $spatial:expr) => {
        $(#[$doc])*
        pub struct $name {
            inner: Instance,
            training: bool,
        }

        impl $name {
            /// `torch.nn.InstanceNorm(num_features, eps, affine=...)` with
            /// `track_running_stats=False` (PyTorch's default; running
            /// statistics are not offered).
            pub fn new(num_features: usize, eps: f32, affine: bool, device: &Device) -> Result<Self> {
                Ok($name {
                    inner: Instance::new(num_features, eps, affine, device)?,
                    training: true,
                })
            }
        }

        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                self.inner.forward(stringify!($name), x, $spatial)
            }
            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                let mut out = Vec::new();
                if let Some(w) = &self.inner.weight {
                    out.push(("weight".to_string(), w.clone()));
                }
                if let Some(b) = &self.inner.bias {
                    out.push(("bias".to_string(), b.clone()));
                }
                out
            }
            fn train(&mut self, on: bool) {
                self.training = on;
            }
            fn is_training(&self) -> bool {
                self.training
            }
            fn to_device(&mut self, device: &Device) -> Result<()> {
                use crate::module::derive_support::TensorSlots;
                self.inner.weight.move_to(device)?;
                self.inner.bias.move_to(device)
            }
        }
    };
}

instance_norm!(
    /// Instance normalisation of `[N, C, L]` or `[C, L]` inputs over `L`
    /// (`torch.nn.InstanceNorm1d`).
    InstanceNorm1d,
    1
);
instance_norm!(
    /// Instance normalisation of `[N, C, H, W]` or `[C, H, W]` inputs over
    /// `H, W` (`torch.nn.InstanceNorm2d`).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{InstanceNorm2d, Module};
    /// let norm = InstanceNorm2d::new(3, 1e-5, true, &Device::Cpu)?;
    /// assert_eq!(norm.forward(&Tensor::randn(&[2, 3, 4, 4], &Device::Cpu)?)?.shape(), [2, 3, 4, 4]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    InstanceNorm2d,
    2
);
