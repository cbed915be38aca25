//! Creation functions of `torch` beyond `zeros`/`full`/`arange`:
//! `linspace`, `logspace`, `eye`, `full_like`, `rand_like`, `randn_like`.
//!
//! `linspace` and `logspace` compute their values on the host from the
//! scalar arguments alone (nothing is read back) exactly as PyTorch's CPU
//! kernel rounds them, then upload them once, like `torch.tensor`. `eye`
//! is made on the device from two `arange`s and a comparison.

use wgrad_core::{DType, Error, Result};

use crate::Device;
use crate::storage::Storage;
use crate::tensor::{Tensor, next_seed};

/// `value` rounded to `dtype`'s precision (for F16/BF16 endpoints), as f32.
fn round_to(value: f64, dtype: DType) -> f32 {
    let v = value as f32;
    match dtype {
        DType::F16 => half::f16::from_f32(v).to_f32(),
        DType::BF16 => half::bf16::from_f32(v).to_f32(),
        _ => v,
    }
}

/// PyTorch's float linspace: the step in f32, the first half of the
/// points `start + step * i` and the second half `end - step * (n - 1 - i)`,
/// each rounded once (PyTorch's kernel is compiled with fused multiply-adds).
fn float_points(start: f32, end: f32, steps: usize) -> Vec<f32> {
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps - 1) as f32;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            if i < half {
                step.mul_add(i as f32, start)
            } else {
                (-step).mul_add((steps - 1 - i) as f32, end)
            }
        })
        .collect()
}

/// PyTorch's integer linspace: integer endpoints (truncated), the step
/// and the points in f64, each point truncated.
fn int_points(start: f64, end: f64, steps: usize) -> Vec<i32> {
    let (start, end) = (start.trunc(), end.trunc());
    if steps == 1 {
        return vec![start as i32];
    }
    let step = (end - start) / (steps - 1) as f64;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            let v = if i < half {
                step.mul_add(i as f64, start)
            } else {
                (-step).mul_add((steps - 1 - i) as f64, end)
            };
            v as i32
        })
        .collect()
}

fn check_creation_dtype(op: &'static str, dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 | DType::I32 => Ok(()),
        other => Err(Error::invalid(
            op,
            format!("dtype {other} is not supported (use F32, F16, BF16 or I32)"),
        )),
    }
}

fn check_finite(op: &'static str, start: f64, end: f64) -> Result<()> {
    if start.is_finite() && end.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("start and end must be finite, got start {start} and end {end}"),
        ))
    }
}

/// Uploads f32 values as a 1-D tensor of `dtype` (F32, F16 or BF16).
fn upload_f32(values: Vec<f32>, dtype: DType, device: &Device) -> Result<Tensor> {
    let n = values.len();
    let storage = Storage::from_vec(values, &[n], device)?;
    let storage = if dtype == DType::F32 {
        storage
    } else {
        storage.cast(dtype)?
    };
    Ok(Tensor::from_storage_leaf(storage))
}

/// Creation functions: `linspace`, `logspace`, `eye` and the `_like`
/// family (`full_like`, `rand_like`, `randn_like`; `zeros_like` and
/// `ones_like` are with the other creation functions).
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor};
/// let cpu = Device::Cpu;
/// let x = Tensor::linspace(0.0, 1.0, 5, DType::F32, &cpu)?;
/// assert_eq!(x.to_vec_f32()?, [0.0, 0.25, 0.5, 0.75, 1.0]);
/// let p = Tensor::logspace(0.0, 3.0, 4, 2.0, DType::F32, &cpu)?;
/// assert_eq!(p.to_vec_f32()?, [1.0, 2.0, 4.0, 8.0]);
/// let i = Tensor::eye(2, Some(3), DType::F32, &cpu)?;
/// assert_eq!(i.to_vec_f32()?, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
/// assert_eq!(i.full_like(7.0)?.to_vec_f32()?, [7.0; 6]);
/// assert_eq!(i.rand_like()?.shape(), [2, 3]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.linspace(start, end, steps, dtype=dtype, device=device)`:
    /// `steps` evenly spaced points from `start` to `end` inclusive (0
    /// steps give an empty tensor, 1 step `[start]`). F32 values are
    /// PyTorch's bit for bit (`start + i * step` for the first half,
    /// `end - (steps - 1 - i) * step` for the rest, fused multiply-adds);
    /// F16/BF16 are those computed from the rounded endpoints, rounded;
    /// I32 truncates each point as PyTorch does. Non-finite endpoints and
    /// U32 are errors.
    pub fn linspace(
        start: f64,
        end: f64,
        steps: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "linspace";
        check_creation_dtype(OP, dtype)?;
        check_finite(OP, start, end)?;
        wgrad_core::shape::checked_numel(OP, &[steps])?;
        if steps == 0 {
            return Tensor::full(&[0], 0.0, dtype, device);
        }
        if dtype == DType::I32 {
            let values = int_points(start, end, steps);
            return Tensor::from_vec(values, &[steps], device);
        }
        let values = float_points(round_to(start, dtype), round_to(end, dtype), steps);
        upload_f32(values, dtype, device)
    }

    /// `torch.logspace(start, end, steps, base, dtype=dtype, device=device)`:
    /// `base ** linspace(start, end, steps)` (the exponents as
    /// [`linspace`](Self::linspace) computes them, the power in f64 and
    /// rounded once, as PyTorch's kernel; I32 truncates the power).
    pub fn logspace(
        start: f64,
        end: f64,
        steps: usize,
        base: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        const OP: &str = "logspace";
        check_creation_dtype(OP, dtype)?;
        check_finite(OP, start, end)?;
        wgrad_core::shape::checked_numel(OP, &[steps])?;
        if steps == 0 {
            return Tensor::full(&[0], 0.0, dtype, device);
        }
        if dtype == DType::I32 {
            let (s, e) = (start.trunc(), end.trunc());
            let step = if steps == 1 {
                0.0
            } else {
                (e - s) / (steps - 1) as f64
            };
            let half = steps / 2;
            let values: Vec<i32> = (0..steps)
                .map(|i| {
                    let x = if i < half {
                        step.mul_add(i as f64, s)
                    } else {
                        (-step).mul_add((steps - 1 - i) as f64, e)
                    };
                    base.powf(x) as i32
                })
                .collect();
            return Tensor::from_vec(values, &[steps], device);
        }
        let exps = float_points(round_to(start, dtype), round_to(end, dtype), steps);
        let values = exps
            .into_iter()
            .map(|x| base.powf(f64::from(x)) as f32)
            .collect();
        upload_f32(values, dtype, device)
    }

    /// `torch.eye(n, m, dtype=dtype, device=device)`: an `n x m` matrix
    /// (`m` defaults to `n`) with ones on the main diagonal and zeros
    /// elsewhere, made on the device (`arange` + comparison + cast).
    pub fn eye(n: usize, m: Option<usize>, dtype: DType, device: &Device) -> Result<Tensor> {
        const OP: &str = "eye";
        let m = m.unwrap_or(n);
        wgrad_core::shape::checked_numel(OP, &[n, m])?;
        if n == 0 || m == 0 {
            return Tensor::full(&[n, m], 0.0, dtype, device);
        }
        let rows = Tensor::arange(0.0, n as f64, 1.0, DType::I32, device)?.reshape(&[-1, 1])?;
        let cols = Tensor::arange(0.0, m as f64, 1.0, DType::I32, device)?;
        let mask = rows.eq(&cols)?;
        if dtype == DType::U32 {
            return Ok(mask);
        }
        Ok(Tensor::from_storage_leaf(mask.storage().cast(dtype)?))
    }

    /// `torch.full_like(x, value)`: `value` (converted to this tensor's
    /// dtype) in this tensor's shape, on its device; a new leaf.
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        Tensor::full(&self.shape(), value, self.dtype(), &self.device())
    }

    /// `torch.rand_like(x)`: uniform `[0, 1)` values from the default
    /// generator in this tensor's shape, dtype (F32, F16, BF16; integer
    /// dtypes are an error, as in PyTorch) and device.
    pub fn rand_like(&self) -> Result<Tensor> {
        let dtype = self.float_dtype("rand_like")?;
        let storage = Storage::rand(&self.shape(), 0.0, 1.0, next_seed(), &self.device())?;
        Ok(Tensor::from_storage_leaf(storage.cast(dtype)?))
    }

    /// `torch.randn_like(x)`: standard normal values from the default
    /// generator in this tensor's shape, dtype (floats only) and device.
    pub fn randn_like(&self) -> Result<Tensor> {
        let dtype = self.float_dtype("randn_like")?;
        let storage = Storage::randn(&self.shape(), 0.0, 1.0, next_seed(), &self.device())?;
        Ok(Tensor::from_storage_leaf(storage.cast(dtype)?))
    }

    fn float_dtype(&self, op: &'static str) -> Result<DType> {
        let dtype = self.dtype();
        if dtype.is_float() {
            Ok(dtype)
        } else {
            Err(Error::invalid(
                op,
                format!("needs a floating-point tensor, got dtype {dtype}"),
            ))
        }
    }
}
