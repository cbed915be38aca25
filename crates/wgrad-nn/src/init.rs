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

/// The standard normal CDF, `Phi(x)`.
fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + libm_erf(x / std::f64::consts::SQRT_2))
}

/// `erf` in f64 (Abramowitz-Stegun 7.1.26 is too coarse for bounds; this
/// is the series / continued fraction split the `erf` of C libraries
/// uses, accurate to ~1e-15).
fn libm_erf(x: f64) -> f64 {
    if x.abs() < 2.0 {
        // Maclaurin series: erf x = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)).
        let mut term = x;
        let mut sum = x;
        let x2 = x * x;
        for n in 1..60 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // erfc by Lentz's continued fraction for |x| >= 2.
        let ax = x.abs();
        let mut f = ax;
        let mut c = ax;
        let mut d = 0.0;
        for k in 1..200 {
            let a = k as f64 / 2.0;
            d = ax + a * d;
            d = if d == 0.0 { 1e-300 } else { 1.0 / d };
            c = ax + a / c;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        let erfc = (-ax * ax).exp() / (f * std::f64::consts::PI.sqrt());
        (1.0 - erfc).copysign(x)
    }
}

/// `erfinv` on the tensor's device, from Giles' single-precision
/// approximation ("Approximating the erfinv function", 2010): two
/// polynomials in `w = -log((1 - x)(1 + x))`, chosen per element.
fn erfinv(x: &Tensor) -> Result<Tensor> {
    let w = x
        .neg()?
        .add_scalar(1.0)?
        .mul(&x.add_scalar(1.0)?)?
        .log()?
        .neg()?;
    let poly = |t: &Tensor, coefficients: &[f32]| -> Result<Tensor> {
        let mut p = t.mul_scalar(0.0)?.add_scalar(coefficients[0])?;
        for &c in &coefficients[1..] {
            p = p.mul(t)?.add_scalar(c)?;
        }
        Ok(p)
    };
    let central = poly(
        &w.sub_scalar(2.5)?,
        &[
            2.810_226_4e-8,
            3.432_739_4e-7,
            -3.523_387_7e-6,
            -4.391_506_5e-6,
            0.000_218_580_87,
            -0.001_253_725,
            -0.004_177_681_6,
            0.246_640_73,
            1.501_409_4,
        ],
    )?;
    let tail = poly(
        &w.sqrt()?.sub_scalar(3.0)?,
        &[
            -0.000_200_214_26,
            0.000_100_950_56,
            0.001_349_343_2,
            -0.003_673_428_4,
            0.005_739_507_7,
            -0.007_622_461,
            0.009_438_870_5,
            1.001_674_2,
            2.832_976_8,
        ],
    )?;
    let p = Tensor::where_cond(&w.lt_scalar(5.0)?, &central, &tail)?;
    p.mul(x)
}

/// Fills `t` from `N(mean, std^2)` truncated to `[a, b]`
/// (`torch.nn.init.trunc_normal_`, defaults 0, 1, -2, 2), by PyTorch's
/// method: uniform values between the CDF of the bounds pushed through the
/// inverse CDF (`erfinv`), then clamped to `[a, b]`. Drawn on the tensor's
/// device from the default generator.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[256, 64], &Device::Cpu)?;
/// wgrad_nn::init::trunc_normal_(&w, 0.0, 0.02, -0.04, 0.04)?;
/// assert!(w.to_vec_f32()?.iter().all(|v| v.abs() <= 0.04));
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn trunc_normal_(t: &Tensor, mean: f32, std: f32, a: f32, b: f32) -> Result<()> {
    if std.is_nan() || std < 0.0 || a.is_nan() || b.is_nan() || a >= b {
        return Err(Error::invalid(
            "trunc_normal_",
            format!("needs std >= 0 and a < b, got std {std}, [{a}, {b}]"),
        ));
    }
    let (mean64, std64) = (f64::from(mean), f64::from(std).max(f64::MIN_POSITIVE));
    let lo = normal_cdf((f64::from(a) - mean64) / std64);
    let hi = normal_cdf((f64::from(b) - mean64) / std64);
    refill("trunc_normal_", t, |shape, device| {
        let u = Tensor::from_storage_leaf(Storage::rand(
            shape,
            (2.0 * lo - 1.0) as f32,
            (2.0 * hi - 1.0) as f32,
            next_seed(),
            device,
        )?);
        let x = erfinv(&u)?
            .mul_scalar(std * std::f32::consts::SQRT_2)?
            .add_scalar(mean)?
            .clamp(Some(a), Some(b))?;
        Ok(x.storage())
    })
}

/// Fills the 2-D `t` with the identity (`torch.nn.init.eye_`): ones on
/// the diagonal, zeros elsewhere.
pub fn eye_(t: &Tensor) -> Result<()> {
    if t.rank() != 2 {
        return Err(Error::invalid(
            "eye_",
            format!(
                "only tensors with 2 dimensions are supported, got shape {:?}",
                t.shape().as_slice()
            ),
        ));
    }
    refill("eye_", t, |shape, device| {
        Ok(Tensor::eye(shape[0], Some(shape[1]), DType::F32, device)?.storage())
    })
}

/// Fills `t` (at least 2-D; dims after the first flattened) with a
/// (semi-)orthogonal matrix times `gain` (`torch.nn.init.orthogonal_`):
/// the Q of a QR decomposition of a standard normal matrix, its columns'
/// signs fixed by R's diagonal, as PyTorch's. The normal matrix comes from
/// the default generator; the decomposition (Householder, f64) runs on the
/// host and the result is moved to the tensor's device, once, as an init.
pub fn orthogonal_(t: &Tensor, gain: f32) -> Result<()> {
    if t.rank() < 2 {
        return Err(Error::invalid(
            "orthogonal_",
            format!(
                "only tensors with 2 or more dimensions are supported, got shape {:?}",
                t.shape().as_slice()
            ),
        ));
    }
    let shape = t.shape();
    let rows = shape[0];
    let cols: usize = shape[1..].iter().product();
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    // Decompose the tall orientation: [n, k] with n >= k.
    let (n, k) = (rows.max(cols), rows.min(cols));
    let draw = Tensor::from_storage_leaf(Storage::randn(
        &[n, k],
        0.0,
        1.0,
        next_seed(),
        &wgrad_autograd::Device::Cpu,
    )?);
    let a: Vec<f64> = draw.to_vec_f32()?.into_iter().map(f64::from).collect();
    let q = householder_q(&a, n, k);
    // q is [n, k]; PyTorch transposes it back when rows < cols.
    let mut out = vec![0f32; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            let v = if rows >= cols {
                q[i * k + j]
            } else {
                q[j * k + i]
            };
            out[i * cols + j] = (v * f64::from(gain)) as f32;
        }
    }
    refill("orthogonal_", t, |shape, device| {
        Ok(
            Tensor::from_vec(out.clone(), shape, &wgrad_autograd::Device::Cpu)?
                .to(device)?
                .storage(),
        )
    })
}

/// The `[n, k]` Q of the thin QR decomposition of the row-major `[n, k]`
/// matrix `a` (n >= k), with each column multiplied by the sign of R's
/// diagonal entry so that R's diagonal is positive (PyTorch's
/// `q *= sign(diag(r))`).
fn householder_q(a: &[f64], n: usize, k: usize) -> Vec<f64> {
    let mut r = a.to_vec();
    let mut vs: Vec<Vec<f64>> = Vec::with_capacity(k);
    let mut diag_sign = vec![1.0; k];
    for j in 0..k {
        let norm = (j..n)
            .map(|i| r[i * k + j] * r[i * k + j])
            .sum::<f64>()
            .sqrt();
        let x0 = r[j * k + j];
        let alpha = if x0 >= 0.0 { -norm } else { norm };
        let mut v: Vec<f64> = (j..n).map(|i| r[i * k + j]).collect();
        v[0] -= alpha;
        let vnorm2: f64 = v.iter().map(|x| x * x).sum();
        if vnorm2 > 0.0 {
            for c in j..k {
                let dot: f64 = (j..n).map(|i| v[i - j] * r[i * k + c]).sum();
                let f = 2.0 * dot / vnorm2;
                for i in j..n {
                    r[i * k + c] -= f * v[i - j];
                }
            }
        }
        diag_sign[j] = if r[j * k + j] < 0.0 { -1.0 } else { 1.0 };
        vs.push(v);
    }
    // Q = H_0 H_1 ... H_{k-1} applied to the first k columns of I.
    let mut q = vec![0.0; n * k];
    for j in 0..k {
        q[j * k + j] = 1.0;
    }
    for j in (0..k).rev() {
        let v = &vs[j];
        let vnorm2: f64 = v.iter().map(|x| x * x).sum();
        if vnorm2 == 0.0 {
            continue;
        }
        for c in 0..k {
            let dot: f64 = (j..n).map(|i| v[i - j] * q[i * k + c]).sum();
            let f = 2.0 * dot / vnorm2;
            for i in j..n {
                q[i * k + c] -= f * v[i - j];
            }
        }
    }
    for i in 0..n {
        for (c, s) in diag_sign.iter().enumerate() {
            q[i * k + c] *= s;
        }
    }
    q
}
