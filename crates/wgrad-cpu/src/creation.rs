//! Creation ops: constant fills, ranges and counter-based random tensors.

use std::sync::Arc;

use wgrad_core::random::{normal, seed_keys, uniform};
use wgrad_core::{DType, Error, Result};

use crate::alloc::{try_filled, try_vec};
use crate::tensor::{CpuData, CpuTensor, checked_numel};

impl CpuTensor {
    /// A contiguous tensor of `shape` with every element `value` converted to
    /// `dtype` (`as` casts: integers truncate toward zero and saturate).
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Self> {
        Self::fill("full", shape, value, dtype)
    }

    /// All zeros.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Self> {
        Self::fill("zeros", shape, 0.0, dtype)
    }

    /// All ones.
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Self> {
        Self::fill("ones", shape, 1.0, dtype)
    }

    /// [`CpuTensor::full`] with errors naming `op`.
    fn fill(op: &'static str, shape: &[usize], value: f64, dtype: DType) -> Result<Self> {
        let n = checked_numel(op, shape)?;
        let data = match dtype {
            DType::F32 => CpuData::F32(Arc::new(try_filled(op, n, value as f32)?)),
            DType::U32 => CpuData::U32(Arc::new(try_filled(op, n, value as u32)?)),
            DType::I32 => CpuData::I32(Arc::new(try_filled(op, n, value as i32)?)),
            DType::F16 => CpuData::F16(Arc::new(try_filled(op, n, half::f16::from_f64(value))?)),
            DType::BF16 => CpuData::BF16(Arc::new(try_filled(op, n, half::bf16::from_f64(value))?)),
        };
        Self::from_data(op, data, shape)
    }

    /// The 1-D range `start, start + step, ...` up to (excluding) `end`, as
    /// `torch.arange`: `ceil((end - start) / step)` elements. Values are
    /// computed in f64 and then converted to `dtype`.
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Self> {
        if !(start.is_finite() && end.is_finite() && step.is_finite()) || step == 0.0 {
            return Err(Error::invalid(
                "arange",
                format!("start {start}, end {end} and step {step} must be finite, step nonzero"),
            ));
        }
        let count = ((end - start) / step).ceil();
        if count < 0.0 {
            return Err(Error::invalid(
                "arange",
                format!("step {step} has the wrong sign to go from {start} to {end}"),
            ));
        }
        if count > u32::MAX as f64 {
            return Err(Error::invalid(
                "arange",
                format!("range {start}..{end} by {step} has too many elements ({count})"),
            ));
        }
        let n = count as usize;
        let values = (0..n).map(|i| start + i as f64 * step);
        let data = match dtype {
            DType::F32 => CpuData::F32(Arc::new(collect("arange", values.map(|v| v as f32))?)),
            DType::U32 => CpuData::U32(Arc::new(collect("arange", values.map(|v| v as u32))?)),
            DType::I32 => CpuData::I32(Arc::new(collect("arange", values.map(|v| v as i32))?)),
            DType::F16 => CpuData::F16(Arc::new(collect(
                "arange",
                values.map(half::f16::from_f64),
            )?)),
            DType::BF16 => CpuData::BF16(Arc::new(collect(
                "arange",
                values.map(half::bf16::from_f64),
            )?)),
        };
        Self::from_data("arange", data, &[n])
    }

    /// Uniform f32 values in `[low, high)`; element `i` is
    /// `wgrad_core::random::uniform(seed_keys(seed), i, low, high)`, the same
    /// number the GPU kernel draws.
    pub fn rand(shape: &[usize], low: f32, high: f32, seed: u64) -> Result<Self> {
        let keys = seed_keys(seed);
        Self::random("rand", shape, |i| uniform(keys, i, low, high))
    }

    /// Normal f32 values with `mean` and `std`; element `i` is
    /// `wgrad_core::random::normal(seed_keys(seed), i, mean, std)`.
    pub fn randn(shape: &[usize], mean: f32, std: f32, seed: u64) -> Result<Self> {
        let keys = seed_keys(seed);
        Self::random("randn", shape, |i| normal(keys, i, mean, std))
    }

    /// Fills a tensor from a counter-indexed generator.
    fn random(op: &'static str, shape: &[usize], f: impl Fn(u32) -> f32) -> Result<Self> {
        let n = checked_numel(op, shape)?;
        // The counter is 32 bits on both devices; larger tensors would repeat.
        let n32 = u32::try_from(n).map_err(|_| {
            Error::invalid(op, format!("shape {shape:?} has more than 2^32 elements"))
        })?;
        let data = collect(op, (0..n32).map(f))?;
        Self::from_data(op, CpuData::F32(Arc::new(data)), shape)
    }
}

/// The values of an exact-size iterator in a fresh vector, for `op`.
fn collect<T: Send + 'static>(
    op: &'static str,
    values: impl ExactSizeIterator<Item = T>,
) -> Result<Vec<T>> {
    let mut out = try_vec(op, values.len())?;
    out.extend(values);
    Ok(out)
}
