//! Activation modules (`torch.nn.ReLU`, `GELU`, ...): parameterless
//! wrappers over the elementwise ops, so they can sit in a
//! [`Sequential`](crate::Sequential).

use wgrad_autograd::Tensor;
use wgrad_core::Result;

use crate::Module;

/// Declares a parameterless module applying `Tensor::$method`, with a
/// doctest that runs it.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $method:ident $(, #[$extra:meta])?) => {
        $(#[$doc])*
        ///
        /// ```
        /// use wgrad_autograd::{Device, Tensor};
        #[doc = concat!("use wgrad_nn::{Module, ", stringify!($name), "};")]
        #[doc = concat!("let act = ", stringify!($name), "::new();")]
        /// let y = act.forward(&Tensor::randn(&[2, 3], &Device::Cpu)?)?;
        /// assert_eq!(y.shape(), [2, 3]);
        /// # Ok::<(), wgrad_core::Error>(())
        /// ```
        #[derive(Clone, Debug, Module)]
        $(#[$extra])?
        pub struct $name {
            training: bool,
        }

        impl $name {
            /// The module, in training mode (which does not change its output).
            pub fn new() -> Self {
                $name { training: true }
            }

            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                x.$method()
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}

activation!(
    /// `max(x, 0)` (`torch.nn.ReLU`). In a [`Sequential`](crate::Sequential)
    /// after a `Linear` or `Conv2d` it runs in that layer's own pass
    /// (`Module::forward_relu`).
    ReLU => relu, #[module(relu)]
);
/// The GELU, `x * Phi(x)` (`torch.nn.GELU`): exact (erf) by default, or
/// the tanh approximation (`approximate='tanh'`, GPT-2's).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{GELU, Module};
/// let x = Tensor::randn(&[2, 3], &Device::Cpu)?;
/// assert_eq!(GELU::new().forward(&x)?.shape(), [2, 3]);
/// let tanh = GELU::with_approximate("tanh")?;
/// assert_eq!(tanh.forward(&x)?.to_vec_f32()?, x.gelu_tanh()?.to_vec_f32()?);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct GELU {
    /// `approximate='tanh'`.
    tanh: bool,
    training: bool,
}

impl GELU {
    /// The exact GELU (`approximate='none'`).
    pub fn new() -> Self {
        GELU {
            tanh: false,
            training: true,
        }
    }

    /// `torch.nn.GELU(approximate=...)`: `"none"` or `"tanh"`.
    pub fn with_approximate(approximate: &str) -> Result<Self> {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            other => {
                return Err(wgrad_core::Error::invalid(
                    "GELU",
                    format!("approximate argument must be either none or tanh, got {other:?}"),
                ));
            }
        };
        Ok(GELU {
            tanh,
            training: true,
        })
    }

    /// The `approximate` setting, `"none"` or `"tanh"`.
    pub fn approximate(&self) -> &'static str {
        if self.tanh { "tanh" } else { "none" }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if self.tanh { x.gelu_tanh() } else { x.gelu() }
    }
}

impl Default for GELU {
    fn default() -> Self {
        Self::new()
    }
}
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
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{LeakyReLU, Module};
/// let act = LeakyReLU::new(0.1);
/// let y = act.forward(&Tensor::from_vec(vec![-2.0f32, 3.0], &[2], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2]);
/// assert_eq!(y.to_vec_f32()?, [-0.2, 3.0]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.leaky_relu(self.negative_slope)
    }
}

impl Default for LeakyReLU {
    /// torch's default slope, 0.01.
    fn default() -> Self {
        LeakyReLU::new(0.01)
    }
}
