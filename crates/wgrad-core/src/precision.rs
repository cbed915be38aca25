//! `torch.set_float32_matmul_precision`: how much precision f32 matrix
//! products may give up for speed.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::{Error, Result};

/// The internal precision of f32 matrix products, PyTorch's three levels.
///
/// Tensors stay f32 at every level; only how a product computes inside
/// changes. wgrad's GPU backend acts on `Medium` where the adapter has f16
/// tensor cores (cooperative matrices): the operands are rounded to f16 and
/// the products summed in f32, about 4x the speed of its f32 kernels on an
/// H100. Unlike PyTorch's `medium` (bf16), f16 has 10 mantissa bits but a
/// range of ±65504: larger operands become infinities. `High` (PyTorch:
/// TF32) has no counterpart on WebGPU and computes as `Highest`; so does
/// the CPU backend at every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MatmulPrecision {
    /// Full f32 products (the default).
    #[default]
    Highest,
    /// TF32 in PyTorch; here the same as [`Highest`](Self::Highest).
    High,
    /// Lower-precision operands with f32 sums (f16 tensor cores on the GPU).
    Medium,
}

impl MatmulPrecision {
    /// PyTorch's name of the level.
    pub fn name(self) -> &'static str {
        match self {
            MatmulPrecision::Highest => "highest",
            MatmulPrecision::High => "high",
            MatmulPrecision::Medium => "medium",
        }
    }

    /// The level PyTorch calls `name` ("highest", "high" or "medium").
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "highest" => Ok(MatmulPrecision::Highest),
            "high" => Ok(MatmulPrecision::High),
            "medium" => Ok(MatmulPrecision::Medium),
            _ => Err(Error::invalid(
                "set_float32_matmul_precision",
                format!("precision must be \"highest\", \"high\" or \"medium\", got {name:?}"),
            )),
        }
    }

    fn code(self) -> u8 {
        match self {
            MatmulPrecision::Highest => 0,
            MatmulPrecision::High => 1,
            MatmulPrecision::Medium => 2,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            1 => MatmulPrecision::High,
            2 => MatmulPrecision::Medium,
            _ => MatmulPrecision::Highest,
        }
    }
}

/// Process-wide, as in PyTorch (the setting is not per thread or device).
static PRECISION: AtomicU8 = AtomicU8::new(0);

/// `torch.set_float32_matmul_precision(name)`: "highest" (default), "high"
/// or "medium"; see [`MatmulPrecision`] for what each does here. Applies to
/// products launched after the call, on every thread.
pub fn set_float32_matmul_precision(name: &str) -> Result<()> {
    set_matmul_precision(MatmulPrecision::parse(name)?);
    Ok(())
}

/// [`set_float32_matmul_precision`] with the level as a value.
pub fn set_matmul_precision(precision: MatmulPrecision) {
    PRECISION.store(precision.code(), Ordering::Relaxed);
}

/// `torch.get_float32_matmul_precision()`: the current level's name.
pub fn get_float32_matmul_precision() -> &'static str {
    matmul_precision().name()
}

/// The current level.
pub fn matmul_precision() -> MatmulPrecision {
    MatmulPrecision::from_code(PRECISION.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_errors() {
        for p in [
            MatmulPrecision::Highest,
            MatmulPrecision::High,
            MatmulPrecision::Medium,
        ] {
            assert_eq!(MatmulPrecision::parse(p.name()).unwrap(), p);
            assert_eq!(MatmulPrecision::from_code(p.code()), p);
        }
        let err = MatmulPrecision::parse("low").unwrap_err().to_string();
        assert!(
            err.contains("set_float32_matmul_precision") && err.contains("\"low\""),
            "{err}"
        );
        assert_eq!(MatmulPrecision::default(), MatmulPrecision::Highest);
    }
}
