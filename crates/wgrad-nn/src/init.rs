//! Parameter initialisation, like `torch.nn.init`: every function fills a
//! tensor in place (replacing its data, keeping shape, dtype, device and
//! `requires_grad`).
//!
//! Random fills draw their seed from `wgrad_autograd::next_seed()`, so
//! `manual_seed` makes them reproducible, and since `rand`/`randn` are
//! counter-based the same seed gives the same values on the CPU and a GPU.
//!
//! ```
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::init::{self, FanMode, Nonlinearity};
//! let w = Tensor::zeros(&[64, 16], &Device::Cpu)?.with_requires_grad(true)?;
//! init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu)?;
//! let bound = init::calculate_gain(Nonlinearity::Relu, None) * (3.0f32 / 16.0).sqrt();
//! assert!(w.to_vec_f32()?.iter().all(|v| v.abs() <= bound));
//! assert!(w.requires_grad()); // still a parameter
//! assert_eq!(init::calculate_fan_in_and_fan_out(&[64, 16, 3, 3])?, (144, 576));
//! init::constant_(&w, 0.5)?;
//! assert!(w.to_vec_f32()?.iter().all(|&v| v == 0.5));
//! # Ok::<(), wgrad_core::Error>(())
//! ```

use wgrad_autograd::{Storage, Tensor, next_seed};
use wgrad_core::{DType, Error, Result};

/// Which fan [`kaiming_uniform_`] / [`kaiming_normal_`] preserve the
/// variance of: the forward pass (`fan_in`) or the backward pass (`fan_out`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FanMode {
    /// Inputs per output unit (`mode='fan_in'`, torch's default).
    #[default]
    FanIn,
    /// Outputs per input unit (`mode='fan_out'`).
    FanOut,
}

/// The nonlinearity a gain is computed for ([`calculate_gain`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nonlinearity {
    /// Gain 1 (also right for convolutions and sigmoid).
    Linear,
    /// Gain 1.
    Sigmoid,
    /// Gain 5/3.
    Tanh,
    /// Gain `sqrt(2)`.
    Relu,
    /// Gain `sqrt(2 / (1 + slope^2))`; torch's default for Kaiming init.
    #[default]
    LeakyRelu,
    /// Gain 3/4.
    Selu,
}

/// The recommended gain for `nonlinearity` (`torch.nn.init.calculate_gain`).
/// `param` is the negative slope of `LeakyRelu` (default 0.01) and ignored
/// otherwise.
pub fn calculate_gain(nonlinearity: Nonlinearity, param: Option<f32>) -> f32 {
    match nonlinearity {
        Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f32.sqrt(),
        Nonlinearity::LeakyRelu => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        Nonlinearity::Selu => 0.75,
    }
}

/// `(fan_in, fan_out)` of a weight of `shape`, as torch computes them:
/// `fan_in = shape[1] * receptive`, `fan_out = shape[0] * receptive` with
/// `receptive = prod(shape[2..])`. Needs at least 2 dims.
pub fn calculate_fan_in_and_fan_out(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::invalid(
            "init",
            format!("fan in and fan out need at least 2 dims, got shape {shape:?}"),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

fn fan(shape: &[usize], mode: FanMode) -> Result<usize> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(shape)?;
    Ok(match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    })
}

/// Replaces the data of the F32 tensor `t` with `fill(shape, device)`.
fn refill(
    op: &'static str,
    t: &Tensor,
    fill: impl FnOnce(&[usize], &wgrad_autograd::Device) -> Result<Storage>,
) -> Result<()> {
    if !t.dtype().is_float() {
        return Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got: t.dtype(),
        });
    }
    let storage = fill(&t.shape(), &t.device())?;
    // The fill draws F32; a 16-bit parameter keeps its dtype.
    let storage = if storage.dtype() == t.dtype() {
        storage
    } else {
        storage.cast(t.dtype())?
    };
    t.set_storage(storage)
}

/// Fills `t` from `U(low, high)` (`torch.nn.init.uniform_`).
pub fn uniform_(t: &Tensor, low: f32, high: f32) -> Result<()> {
    if low.is_nan() || high.is_nan() || low > high {
        return Err(Error::invalid(
            "uniform_",
            format!("needs low <= high, got [{low}, {high})"),
        ));
    }
    refill("uniform_", t, |shape, device| {
        Storage::rand(shape, low, high, next_seed(), device)
    })
}

/// Fills `t` from `N(mean, std^2)` (`torch.nn.init.normal_`).
pub fn normal_(t: &Tensor, mean: f32, std: f32) -> Result<()> {
    if std.is_nan() || std < 0.0 {
        return Err(Error::invalid(
            "normal_",
            format!("needs std >= 0, got {std}"),
        ));
    }
    refill("normal_", t, |shape, device| {
        Storage::randn(shape, mean, std, next_seed(), device)
    })
}

/// Fills `t` with `value` (`torch.nn.init.constant_`).
pub fn constant_(t: &Tensor, value: f32) -> Result<()> {
    refill("constant_", t, |shape, device| {
        Storage::full(shape, f64::from(value), DType::F32, device)
    })
}

/// Fills `t` with zeros (`torch.nn.init.zeros_`).
pub fn zeros_(t: &Tensor) -> Result<()> {
    constant_(t, 0.0)
}

/// Fills `t` with ones (`torch.nn.init.ones_`).
pub fn ones_(t: &Tensor) -> Result<()> {
    constant_(t, 1.0)
}

/// Kaiming (He) uniform init (`torch.nn.init.kaiming_uniform_`):
/// `U(-b, b)` with `b = gain * sqrt(3 / fan)`, `gain =
/// calculate_gain(nonlinearity, a)`. A zero-element tensor is left as is.
pub fn kaiming_uniform_(
    t: &Tensor,
    a: f32,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let std = calculate_gain(nonlinearity, Some(a)) / (fan(&t.shape(), mode)? as f32).sqrt();
    let bound = 3f32.sqrt() * std;
    uniform_(t, -bound, bound)
}

/// Kaiming (He) normal init (`torch.nn.init.kaiming_normal_`):
/// `N(0, std^2)` with `std = gain / sqrt(fan)`. A zero-element tensor is
/// left as is.
pub fn kaiming_normal_(
    t: &Tensor,
    a: f32,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let std = calculate_gain(nonlinearity, Some(a)) / (fan(&t.shape(), mode)? as f32).sqrt();
    normal_(t, 0.0, std)
}

/// Xavier (Glorot) uniform init (`torch.nn.init.xavier_uniform_`):
/// `U(-b, b)` with `b = gain * sqrt(6 / (fan_in + fan_out))`.
pub fn xavier_uniform_(t: &Tensor, gain: f32) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(&t.shape())?;
    let std = gain * (2.0 / (fan_in + fan_out) as f32).sqrt();
    let bound = 3f32.sqrt() * std;
    uniform_(t, -bound, bound)
}

/// Xavier (Glorot) normal init (`torch.nn.init.xavier_normal_`):
/// `N(0, std^2)` with `std = gain * sqrt(2 / (fan_in + fan_out))`.
pub fn xavier_normal_(t: &Tensor, gain: f32) -> Result<()> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(&t.shape())?;
    let std = gain * (2.0 / (fan_in + fan_out) as f32).sqrt();
    normal_(t, 0.0, std)
}
