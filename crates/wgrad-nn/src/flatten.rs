//! [`Flatten`]: merges trailing dims into one (`torch.nn.Flatten`).

use wgrad_autograd::Tensor;
use wgrad_core::Result;

use crate::Module;

/// Flattens the dims from `start_dim` on into one (torch's default
/// `start_dim = 1` keeps the batch dim), e.g. `[N, 1, 28, 28]` -> `[N, 784]`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Flatten, Module};
/// let y = Flatten::new().forward(&Tensor::zeros(&[2, 1, 28, 28], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 784]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct Flatten {
    start_dim: usize,
    training: bool,
}

impl Flatten {
    /// Flattens everything but the batch dim.
    pub fn new() -> Self {
        Flatten::from_dim(1)
    }

    /// Flattens the dims from `start_dim` on.
    pub fn from_dim(start_dim: usize) -> Self {
        Flatten {
            start_dim,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.flatten(self.start_dim)
    }
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten::new()
    }
}
