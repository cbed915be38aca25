//! [`Dropout`]: random zeroing during training (`torch.nn.Dropout`).

use wgrad_autograd::{Tensor, next_seed};
use wgrad_core::{Error, Result};

use crate::Module;

/// In training mode, zeroes each element with probability `p` and scales
/// the survivors by `1 / (1 - p)` so the expected value is unchanged; in
/// evaluation mode, the identity.
///
/// The mask is drawn on the tensor's device from the counter-based RNG
/// seeded by `wgrad_autograd::next_seed()`, so runs are reproducible under
/// `manual_seed` and a CPU and a GPU run drop the same elements.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Dropout, Module};
/// let mut drop = Dropout::new(0.5)?;
/// let x = Tensor::ones(&[4, 8], &Device::Cpu)?;
/// assert_eq!(drop.forward(&x)?.shape(), [4, 8]);
/// drop.eval();
/// assert_eq!(drop.forward(&x)?.to_vec_f32()?, x.to_vec_f32()?);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct Dropout {
    p: f32,
    training: bool,
}

impl Dropout {
    /// A dropout layer with drop probability `p` in `[0, 1]`, in training mode.
    pub fn new(p: f32) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "Dropout",
                format!("dropout probability has to be between 0 and 1, but got {p}"),
            ));
        }
        Ok(Dropout { p, training: true })
    }

    /// The drop probability.
    pub fn p(&self) -> f32 {
        self.p
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !self.training || self.p == 0.0 {
            return Ok(x.clone());
        }
        if self.p == 1.0 {
            // Everything is dropped; the 1/(1-p) scale would be infinite and
            // turn the masked gradient into 0 * inf = NaN.
            return x.mul_scalar(0.0);
        }
        let device = x.device();
        // u >= p keeps an element with probability 1 - p (u is in [0, 1)).
        let keep =
            Tensor::rand_with(&x.shape(), 0.0, 1.0, next_seed(), &device)?.ge_scalar(self.p)?;
        let scaled = x.mul_scalar(1.0 / (1.0 - self.p))?;
        let zero = Tensor::zeros(&[], &device)?;
        Tensor::where_cond(&keep, &scaled, &zero)
    }
}

/// Zeroes whole channels: in training each channel of each sample (axis 1
/// of `[N, C, H, W]`, or of a 3-D input, which PyTorch 2.x reads as
/// `[N, C, L]`) is dropped with
/// probability `p` and the survivors scaled by `1 / (1 - p)`
/// (`torch.nn.Dropout2d`); the identity in evaluation. Same generator as
/// [`Dropout`].
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Dropout2d, Module};
/// let drop = Dropout2d::new(0.5)?;
/// let y = drop.forward(&Tensor::ones(&[2, 3, 4, 4], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 3, 4, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct Dropout2d {
    p: f32,
    training: bool,
}

impl Dropout2d {
    /// A channel-dropout layer with drop probability `p` in `[0, 1]`.
    pub fn new(p: f32) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "Dropout2d",
                format!("dropout probability has to be between 0 and 1, but got {p}"),
            ));
        }
        Ok(Dropout2d { p, training: true })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !self.training || self.p == 0.0 {
            return Ok(x.clone());
        }
        let shape = x.shape();
        // The mask has the sample and channel dims and 1 elsewhere. A 3-D
        // input is [N, C, L], as PyTorch 2.x reads it (with a warning that
        // this will change to [C, H, W]).
        let kept_dims = match shape.len() {
            3 | 4 => 2,
            _ => {
                return Err(Error::invalid(
                    "Dropout2d",
                    format!(
                        "expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, got shape {shape:?}"
                    ),
                ));
            }
        };
        if self.p == 1.0 {
            return x.mul_scalar(0.0);
        }
        let mask_shape: Vec<usize> = shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if i < kept_dims { d } else { 1 })
            .collect();
        let device = x.device();
        let keep =
            Tensor::rand_with(&mask_shape, 0.0, 1.0, next_seed(), &device)?.ge_scalar(self.p)?;
        let scaled = x.mul_scalar(1.0 / (1.0 - self.p))?;
        let zero = Tensor::zeros(&[], &device)?;
        Tensor::where_cond(&keep, &scaled, &zero)
    }
}

/// `torch.nn.functional.dropout(x, p, training)`: [`Dropout`]'s forward
/// without a module (the identity when `training` is false).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::ones(&[4, 8], &Device::Cpu)?;
/// assert_eq!(wgrad_nn::dropout(&x, 0.5, false)?.to_vec_f32()?, x.to_vec_f32()?);
/// assert_eq!(wgrad_nn::dropout(&x, 0.5, true)?.shape(), [4, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn dropout(x: &Tensor, p: f32, training: bool) -> Result<Tensor> {
    let mut layer = Dropout::new(p)?;
    layer.train(training);
    layer.forward(x)
}

/// `torch.nn.functional.dropout2d(x, p, training)`: [`Dropout2d`]'s
/// forward without a module.
pub fn dropout2d(x: &Tensor, p: f32, training: bool) -> Result<Tensor> {
    let mut layer = Dropout2d::new(p)?;
    layer.train(training);
    layer.forward(x)
}
