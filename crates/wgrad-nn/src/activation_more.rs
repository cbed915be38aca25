//! The activation modules with settings (`torch.nn.ELU(alpha)`,
//! `Softplus(beta, threshold)`, `Hardtanh`, `ReLU6`, `SELU`, `Softmax(dim)`,
//! `LogSoftmax(dim)`, `LogSigmoid`, `Softsign`, `Mish`, `PReLU`, `Identity`),
//! over the elementwise ops, with PyTorch's defaults; the plain ones
//! (`ReLU`, `GELU`, ...) are in `activation.rs`.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;

/// `x` unchanged (`torch.nn.Identity`), e.g. to replace a layer.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Identity, Module};
/// let x = Tensor::randn(&[2, 3], &Device::Cpu)?;
/// assert_eq!(Identity::new().forward(&x)?.to_vec_f32()?, x.to_vec_f32()?);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Default, Module)]
pub struct Identity {
    training: bool,
}

impl Identity {
    /// The module.
    pub fn new() -> Self {
        Identity { training: true }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

/// Declares a module with one `dim` setting whose forward is `$body` of
/// the input `$x` and the dim `$dim`.
macro_rules! along_dim {
    ($(#[$doc:meta])* $name:ident, |$x:ident, $dim:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Module)]
        pub struct $name {
            /// The dim the rows run along (negative counts from the end).
            pub dim: isize,
            training: bool,
        }

        impl $name {
            /// The module over `dim` (PyTorch's implicit dim is deprecated
            /// there, so it is required here).
            pub fn new(dim: isize) -> Self {
                $name { dim, training: true }
            }

            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $dim = self.dim;
                $body
            }
        }
    };
}

along_dim!(
    /// `softmax` along `dim` (`torch.nn.Softmax(dim)`).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{Module, Softmax};
    /// let y = Softmax::new(1).forward(&Tensor::zeros(&[2, 4], &Device::Cpu)?)?;
    /// assert_eq!(y.to_vec_f32()?, [0.25; 8]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    Softmax,
    |x, dim| x.softmax(dim)
);
along_dim!(
    /// `log_softmax` along `dim` (`torch.nn.LogSoftmax(dim)`).
    LogSoftmax,
    |x, dim| x.log_softmax(dim)
);

/// `x` for `x > 0`, `alpha * (exp(x) - 1)` otherwise (`torch.nn.ELU`,
/// default `alpha` 1).
#[derive(Clone, Debug, Module)]
pub struct ELU {
    /// The negative branch's scale.
    pub alpha: f32,
    training: bool,
}

impl ELU {
    /// The module with `alpha`.
    pub fn new(alpha: f32) -> Self {
        ELU {
            alpha,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.elu(self.alpha)
    }
}

impl Default for ELU {
    /// PyTorch's `alpha = 1.0`.
    fn default() -> Self {
        ELU::new(1.0)
    }
}

/// PyTorch's SELU constants (Klambauer et al.).
const SELU_ALPHA: f32 = 1.673_263_2;
const SELU_SCALE: f32 = 1.050_701;

/// `scale * elu(x, alpha)` with the self-normalising constants
/// (`torch.nn.SELU`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, SELU};
/// let y = SELU::new().forward(&Tensor::from_vec(vec![1.0f32], &[1], &Device::Cpu)?)?;
/// assert!((y.to_vec_f32()?[0] - 1.050701).abs() < 1e-6);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Default, Module)]
pub struct SELU {
    training: bool,
}

impl SELU {
    /// The module.
    pub fn new() -> Self {
        SELU { training: true }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.elu(SELU_ALPHA)?.mul_scalar(SELU_SCALE)
    }
}

/// `log(1 + exp(beta x)) / beta`, linear where `beta x > threshold`
/// (`torch.nn.Softplus`, defaults `beta` 1, `threshold` 20).
#[derive(Clone, Debug, Module)]
pub struct Softplus {
    /// The sharpness.
    pub beta: f32,
    /// Above `beta x > threshold` the output is `x`.
    pub threshold: f32,
    training: bool,
}

impl Softplus {
    /// The module with `beta` and `threshold`.
    pub fn new(beta: f32, threshold: f32) -> Self {
        Softplus {
            beta,
            threshold,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.softplus(self.beta, self.threshold)
    }
}

impl Default for Softplus {
    /// PyTorch's `beta = 1`, `threshold = 20`.
    fn default() -> Self {
        Softplus::new(1.0, 20.0)
    }
}

/// `x` clamped to `[min_val, max_val]` (`torch.nn.Hardtanh`, defaults -1
/// and 1).
#[derive(Clone, Debug, Module)]
pub struct Hardtanh {
    /// The lower bound.
    pub min_val: f32,
    /// The upper bound.
    pub max_val: f32,
    training: bool,
}

impl Hardtanh {
    /// The module with the bounds; `max_val < min_val` is PyTorch's error.
    pub fn new(min_val: f32, max_val: f32) -> Result<Self> {
        if max_val < min_val {
            return Err(Error::invalid(
                "Hardtanh",
                format!("max_val ({max_val}) cannot be less than min_val ({min_val})"),
            ));
        }
        Ok(Hardtanh {
            min_val,
            max_val,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.hardtanh(self.min_val, self.max_val)
    }
}

impl Default for Hardtanh {
    /// PyTorch's bounds -1 and 1.
    fn default() -> Self {
        Hardtanh {
            min_val: -1.0,
            max_val: 1.0,
            training: true,
        }
    }
}

/// Declares a parameterless module over a composition of ops.
macro_rules! composed {
    ($(#[$doc:meta])* $name:ident, |$x:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, Module)]
        pub struct $name {
            training: bool,
        }

        impl $name {
            /// The module.
            pub fn new() -> Self {
                $name { training: true }
            }

            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                $body
            }
        }
    };
}

composed!(
    /// `min(max(x, 0), 6)` (`torch.nn.ReLU6`): [`Hardtanh`] with the bounds
    /// 0 and 6 (gradient 0 at both).
    ReLU6,
    |x| x.hardtanh(0.0, 6.0)
);
composed!(
    /// `x * tanh(softplus(x))` (`torch.nn.Mish`).
    Mish,
    |x| x.mish()
);
composed!(
    /// `log(sigmoid(x)) = -softplus(-x)` (`torch.nn.LogSigmoid`): no
    /// overflow for large `|x|`.
    LogSigmoid,
    |x| x.neg()?.softplus(1.0, 20.0)?.neg()
);
composed!(
    /// `x / (1 + |x|)` (`torch.nn.Softsign`).
    Softsign,
    |x| x.div(&x.abs()?.add_scalar(1.0)?)
);

/// `x` for `x > 0`, `weight * x` otherwise, with a learned `weight` of
/// `num_parameters` values (1, or one per channel: dim 1 of the input)
/// initialised to `init` (`torch.nn.PReLU`, defaults 1 and 0.25). The
/// parameter is named `weight`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, PReLU};
/// let act = PReLU::new(3, 0.25, &Device::Cpu)?;
/// let y = act.forward(&Tensor::full(&[2, 3, 4], -1.0, wgrad_core::DType::F32, &Device::Cpu)?)?;
/// assert_eq!(y.to_vec_f32()?, [-0.25; 24]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct PReLU {
    /// `[num_parameters]`.
    pub weight: Tensor,
    training: bool,
}

impl PReLU {
    /// The module with `num_parameters` slopes set to `init`.
    pub fn new(num_parameters: usize, init: f32, device: &Device) -> Result<Self> {
        if num_parameters == 0 {
            return Err(Error::invalid("PReLU", "num_parameters must be at least 1"));
        }
        let weight = Tensor::full(
            &[num_parameters],
            f64::from(init),
            wgrad_core::DType::F32,
            device,
        )?
        .with_requires_grad(true)?;
        Ok(PReLU {
            weight,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let n = self.weight.numel();
        // One slope broadcasts everywhere; per-channel slopes line up with
        // dim 1, as PyTorch's.
        let w = if n == 1 {
            self.weight.reshape(&[])?
        } else {
            // Below 2-D there is no channel dim: one channel, as PyTorch.
            let channel_dim = 1;
            let channels = x.shape().get(channel_dim).copied().unwrap_or(1);
            if channels != n {
                return Err(Error::invalid(
                    "PReLU",
                    format!(
                        "Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} and channel size = {channels} (input shape {:?})",
                        x.shape().as_slice()
                    ),
                ));
            }
            let mut shape = vec![1isize; x.rank() - channel_dim];
            shape[0] = n as isize;
            self.weight.reshape(&shape)?
        };
        // NaN is not positive: it takes the `weight * x` branch and stays NaN.
        let positive = x.gt_scalar(0.0)?;
        // The slope multiplies x with its positive elements zeroed, not x:
        // the weight's gradient then gets nothing from them, never
        // 0 * inf = NaN at x = +inf (PyTorch's kernel selects per element).
        let negative = x.masked_fill(&positive, 0.0)?.mul(&w)?;
        Tensor::where_cond(&positive, x, &negative)
    }
}

/// `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))` (`torch.nn.CELU`,
/// default `alpha` 1).
#[derive(Clone, Debug, Module)]
pub struct CELU {
    /// The negative branch's scale (not 0).
    pub alpha: f32,
    training: bool,
}

impl CELU {
    /// The module with `alpha`; 0 is PyTorch's error.
    pub fn new(alpha: f32) -> Result<Self> {
        if alpha == 0.0 {
            return Err(Error::invalid(
                "CELU",
                "ZeroDivisionError from celu: alpha cannot be 0",
            ));
        }
        Ok(CELU {
            alpha,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if self.alpha > 0.0 {
            return x.div_scalar(self.alpha)?.elu(1.0)?.mul_scalar(self.alpha);
        }
        // A negative alpha flips x / alpha's sign, so the branch follows x
        // itself (PyTorch's elu with input_scale 1 / alpha): x above 0,
        // alpha * (exp(x / alpha) - 1) elsewhere. The exponential sees
        // only the x <= 0 side, so the other side's gradient is no 0 * inf.
        let positive = x.gt_scalar(0.0)?;
        let below = Tensor::where_cond(&positive, &x.zeros_like()?, x)?;
        let negative = below
            .div_scalar(self.alpha)?
            .expm1()?
            .mul_scalar(self.alpha)?;
        Tensor::where_cond(&positive, x, &negative)
    }
}

/// `a * sigmoid(b)` for the two halves `a`, `b` of `dim` (`torch.nn.GLU`,
/// default `dim` -1).
#[derive(Clone, Debug, Module)]
pub struct GLU {
    /// The halved dim.
    pub dim: isize,
    training: bool,
}

impl GLU {
    /// The module over `dim`.
    pub fn new(dim: isize) -> Self {
        GLU {
            dim,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let rank = x.rank();
        let axis = if self.dim < 0 {
            rank as isize + self.dim
        } else {
            self.dim
        };
        if rank == 0 || axis < 0 || axis >= rank as isize {
            return Err(Error::invalid(
                "GLU",
                format!("dim {} is out of range for a {rank}-d input", self.dim),
            ));
        }
        let n = x.shape()[axis as usize];
        if !n.is_multiple_of(2) {
            return Err(Error::invalid(
                "GLU",
                format!("Halving dimension must be even, but dimension {axis} is size {n}"),
            ));
        }
        let a = x.narrow(axis, 0, n / 2)?;
        let b = x.narrow(axis, n / 2, n / 2)?;
        a.mul(&b.sigmoid()?)
    }
}

impl Default for GLU {
    /// PyTorch's `dim = -1`.
    fn default() -> Self {
        GLU::new(-1)
    }
}

along_dim!(
    /// `softmax(-x)` along `dim` (`torch.nn.Softmin(dim)`).
    Softmin,
    |x, dim| x.neg()?.softmax(dim)
);

composed!(
    /// `x - tanh(x)` (`torch.nn.Tanhshrink`).
    Tanhshrink,
    |x| x.sub(&x.tanh()?)
);
composed!(
    /// `0` for `x <= -3`, `x` for `x >= 3`, `x (x + 3) / 6` between
    /// (`torch.nn.Hardswish`; gradient 0 at -3 and 1 at 3, as PyTorch's).
    Hardswish,
    |x| {
        // The middle branch sees x clamped to [-3, 3]: the same values and
        // gradients where it is taken, and no 0 * inf gradient where not.
        // NaN skips the clamp (whose gradient blocks it), so its gradient
        // is NaN, as PyTorch's vectorized hardswish_backward gives.
        let inner = Tensor::where_cond(&x.isnan()?, x, &x.clamp(Some(-3.0), Some(3.0))?)?;
        let middle = inner.mul(&inner.add_scalar(3.0)?)?.div_scalar(6.0)?;
        let upper = Tensor::where_cond(&x.ge_scalar(3.0)?, x, &middle)?;
        // x * 0: PyTorch's -0.0 for negative inputs.
        Tensor::where_cond(&x.le_scalar(-3.0)?, &x.mul_scalar(0.0)?, &upper)
    }
);
composed!(
    /// `0` for `x <= -3`, `1` for `x >= 3`, `x / 6 + 1/2` between
    /// (`torch.nn.Hardsigmoid`; gradient 1/6 strictly between).
    Hardsigmoid,
    |x| {
        let middle = x.div_scalar(6.0)?.add_scalar(0.5)?;
        // NaN stays NaN, with gradient 0: PyTorch's hardsigmoid_backward
        // passes the gradient only strictly inside (-3, 3).
        let middle = Tensor::where_cond(&x.isnan()?, &middle.detach(), &middle)?;
        // Constants, not `middle * 0`: that is NaN at x = +-inf.
        let upper = Tensor::where_cond(&x.ge_scalar(3.0)?, &x.full_like(1.0)?, &middle)?;
        // +0.0, as PyTorch's.
        Tensor::where_cond(&x.le_scalar(-3.0)?, &x.full_like(0.0)?, &upper)
    }
);

/// `x` where `x > threshold`, else `value` (`torch.nn.Threshold`).
#[derive(Clone, Debug, Module)]
pub struct Threshold {
    /// Inputs above it pass.
    pub threshold: f32,
    /// What replaces the others.
    pub value: f32,
    training: bool,
}

impl Threshold {
    /// The module with `threshold` and `value`.
    pub fn new(threshold: f32, value: f32) -> Self {
        Threshold {
            threshold,
            value,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // PyTorch tests `x <= threshold`, so NaN passes through. The
        // replacement is a constant (`x * 0 + value` was NaN at x = -inf).
        let replaced = x.full_like(f64::from(self.value))?;
        Tensor::where_cond(&x.le_scalar(self.threshold)?, &replaced, x)
    }
}

/// `x` with NaN elements cut off from the gradient: PyTorch's vectorized
/// shrink backwards pass the gradient only where `|x| > lambd`, which NaN
/// is not (its scalar loop, for tensors of a few elements, passes it).
fn nan_blocked(x: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(&x.isnan()?, &x.detach(), x)
}

/// Declares a shrink module (`lambd`, default 0.5) from a forward closure.
macro_rules! shrink {
    ($(#[$doc:meta])* $name:ident, |$x:ident, $l:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Module)]
        pub struct $name {
            /// The half-width of the band around 0 that maps to 0.
            pub lambd: f32,
            training: bool,
        }

        impl $name {
            /// The module with `lambd`.
            pub fn new(lambd: f32) -> Self {
                $name { lambd, training: true }
            }

            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $l = self.lambd;
                $body
            }
        }

        impl Default for $name {
            /// PyTorch's `lambd = 0.5`.
            fn default() -> Self {
                $name::new(0.5)
            }
        }
    };
}

shrink!(
    /// `x` where `|x| > lambd`, else 0 (`torch.nn.Hardshrink`).
    Hardshrink,
    |x, l| {
        // +0.0 inside the band, as PyTorch's.
        let zero = x.mul_scalar(0.0)?.abs()?;
        let inside = x.ge_scalar(-l)?.logical_and(&x.le_scalar(l)?)?;
        Tensor::where_cond(&inside, &zero, &nan_blocked(x)?)
    }
);
shrink!(
    /// `x - lambd` above `lambd`, `x + lambd` below `-lambd`, else 0
    /// (`torch.nn.Softshrink`).
    Softshrink,
    |x, l| {
        if l.is_nan() || l < 0.0 {
            return Err(Error::invalid(
                "Softshrink",
                format!("lambda must be in range [0, {}] for input dtype Float, but found {l}", f32::MAX),
            ));
        }
        // x * 0 inside the band (signed, as PyTorch's).
        let zero = x.mul_scalar(0.0)?;
        let x = &nan_blocked(x)?;
        let shifted = Tensor::where_cond(&x.gt_scalar(l)?, &x.sub_scalar(l)?, &x.add_scalar(l)?)?;
        let inside = x.ge_scalar(-l)?.logical_and(&x.le_scalar(l)?)?;
        Tensor::where_cond(&inside, &zero, &shifted)
    }
);
