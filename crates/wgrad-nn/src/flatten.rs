//! [`Flatten`]: merges trailing dims into one (`torch.nn.Flatten`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::Result;

use crate::Module;

/// Flattens the dims from `start_dim` on into one (torch's default
/// `start_dim = 1` keeps the batch dim), e.g. `[N, 1, 28, 28]` -> `[N, 784]`.
#[derive(Clone, Debug)]
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
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten::new()
    }
}

impl Module for Flatten {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.flatten(self.start_dim)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
    fn train(&mut self, on: bool) {
        self.training = on;
    }
    fn is_training(&self) -> bool {
        self.training
    }
    fn to_device(&mut self, _device: &Device) -> Result<()> {
        Ok(())
    }
}
