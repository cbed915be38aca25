//! Activation modules (`torch.nn.ReLU`, `GELU`, ...): parameterless
//! wrappers over the elementwise ops, so they can sit in a
//! [`Sequential`](crate::Sequential).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::Result;

use crate::Module;

/// Declares a parameterless module applying `Tensor::$method`.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            training: bool,
        }

        impl $name {
            /// The module, in training mode (which does not change its output).
            pub fn new() -> Self {
                $name { training: true }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl Module for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                x.$method()
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
    };
}

activation!(
    /// `max(x, 0)` (`torch.nn.ReLU`).
    ReLU => relu
);
activation!(
    /// The exact (erf) GELU, `x * Phi(x)` (`torch.nn.GELU()`, `approximate='none'`).
    GELU => gelu
);
activation!(
    /// `x * sigmoid(x)` (`torch.nn.SiLU`).
    SiLU => silu
);
activation!(
    /// `tanh(x)` (`torch.nn.Tanh`).
    Tanh => tanh
);
activation!(
    /// `1 / (1 + exp(-x))` (`torch.nn.Sigmoid`).
    Sigmoid => sigmoid
);

/// `x` for `x >= 0`, `negative_slope * x` otherwise (`torch.nn.LeakyReLU`).
#[derive(Clone, Debug)]
pub struct LeakyReLU {
    /// Slope for negative inputs (torch's default is 0.01).
    pub negative_slope: f32,
    training: bool,
}

impl LeakyReLU {
    /// The module with the given negative slope.
    pub fn new(negative_slope: f32) -> Self {
        LeakyReLU {
            negative_slope,
            training: true,
        }
    }
}

impl Default for LeakyReLU {
    /// torch's default slope, 0.01.
    fn default() -> Self {
        LeakyReLU::new(0.01)
    }
}

impl Module for LeakyReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.leaky_relu(self.negative_slope)
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
