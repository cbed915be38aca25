//! `arange`: a 1-D range computed on the GPU, bit-exact with the CPU.

use wgrad_core::{DType, Error, Result};
use wgrad_device::GpuDevice;
use wgrad_kernels::{KernelCache, families};

use crate::GpuTensor;
use crate::params::{self, ArangeParams};

/// Splits a finite f64 into the words the kernel takes: `[mantissa low 32,
/// mantissa high 21, exponent (as i32 bits), sign]` with
/// `x = ±mantissa * 2^exponent`, mantissa < 2^53.
fn soft_f64_words(x: f64) -> [u32; 4] {
    let bits = x.to_bits();
    let sign = (bits >> 63) as u32;
    let field = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    // Subnormals (field 0) are fraction * 2^-1074; normals carry the hidden bit.
    let (mantissa, exponent) = if field == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), field - 1075)
    };
    [
        mantissa as u32,
        (mantissa >> 32) as u32,
        exponent as u32,
        sign,
    ]
}

impl GpuTensor {
    /// The 1-D range `start, start + step, ...` up to (excluding) `end`, as
    /// `torch.arange`: `ceil((end - start) / step)` elements. Element `i` is
    /// `start + i * step` evaluated with f64 rounding (emulated on the GPU)
    /// and converted to `dtype` like Rust's `as`, so it equals
    /// `CpuTensor::arange` bit for bit.
    pub fn arange(
        device: &GpuDevice,
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
    ) -> Result<GpuTensor> {
        const OP: &str = "arange";
        if !(start.is_finite() && end.is_finite() && step.is_finite()) || step == 0.0 {
            return Err(Error::invalid(
                OP,
                format!("start {start}, end {end} and step {step} must be finite, step nonzero"),
            ));
        }
        let count = ((end - start) / step).ceil();
        if count < 0.0 {
            return Err(Error::invalid(
                OP,
                format!("step {step} has the wrong sign to go from {start} to {end}"),
            ));
        }
        if count > f64::from(u32::MAX) {
            return Err(Error::invalid(
                OP,
                format!("range {start}..{end} by {step} has too many elements ({count})"),
            ));
        }
        if dtype.is_half() {
            // The F32 range converted once: what the CPU's
            // `half::f16::from_f64` gives on x86 (F16C rounds through f32).
            return Self::arange(device, start, end, step, DType::F32)?.cast(dtype);
        }
        let n = count as usize;
        let kernels = KernelCache::of(device)?;
        let out = Self::empty_on(&kernels, OP, &[n], dtype)?;
        if n == 0 {
            return Ok(out);
        }
        let [start_lo, start_hi, start_exp, start_sign] = soft_f64_words(start);
        let [step_lo, step_hi, step_exp, step_sign] = soft_f64_words(step);
        let p = ArangeParams {
            numel: params::to_u32(OP, "element count", n)?,
            start_lo,
            start_hi,
            start_exp: start_exp as i32,
            start_sign,
            step_lo,
            step_hi,
            step_exp: step_exp as i32,
            step_sign,
            _pad: 0,
        };
        let code = match dtype {
            DType::F32 => 0.0,
            DType::I32 => 1.0,
            DType::U32 => 2.0,
            DType::F16 | DType::BF16 => {
                return Err(Error::invalid(OP, "16-bit dtypes take the F32 path above"));
            }
        };
        kernels.dispatch_1d(
            &families::movement::ARANGE,
            &[("OUT_DTYPE", code)],
            &[&out.buffer],
            &p,
            n as u64,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::soft_f64_words;

    /// `2^k` for a normal exponent, built from its bits (exact at any
    /// optimisation level, unlike `powi`, whose unoptimised loop turns
    /// `2^-1074` into `1 / inf = 0`).
    fn pow2(k: i32) -> f64 {
        assert!((-1022..=1023).contains(&k), "{k}");
        f64::from_bits(((k + 1023) as u64) << 52)
    }

    /// The value the words stand for, scaled in two exact halves so that
    /// subnormal results need no subnormal power of two.
    fn value(w: [u32; 4]) -> f64 {
        let m = (u64::from(w[1]) << 32 | u64::from(w[0])) as f64;
        let e = w[2] as i32;
        let v = m * pow2(e / 2) * pow2(e - e / 2);
        if w[3] == 1 { -v } else { v }
    }

    #[test]
    fn decomposition_round_trips() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            1e300,
            -1e-310,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            let w = soft_f64_words(x);
            assert!(u64::from(w[1]) < 1 << 21, "{x}");
            assert_eq!(value(w).to_bits(), x.to_bits(), "{x}");
        }
    }
}
