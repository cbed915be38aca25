//! Dtype conversion (`kernels/elementwise/cast.wgsl`).

use wgrad_core::{DType, Error, Result};
use wgrad_kernels::families;

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::CastParams;

/// The dtype code `cast.wgsl`'s `FROM`/`TO` overrides use.
fn code(dtype: DType) -> Result<f64> {
    match dtype {
        DType::F32 => Ok(0.0),
        DType::I32 => Ok(1.0),
        DType::U32 => Ok(2.0),
        DType::F16 | DType::BF16 => Err(Error::invalid(
            "cast",
            format!("dtype {dtype} is not supported on the GPU yet"),
        )),
    }
}

impl GpuTensor {
    /// Converts to `dtype` with Rust `as` semantics, like the CPU backend:
    /// F32 -> I32/U32 truncates toward zero and saturates (NaN -> 0); U32
    /// mask -> F32 gives 0.0/1.0; I32 <-> U32 reinterpret two's complement.
    /// Casting to the same dtype returns a clone (a view of the same buffer).
    pub fn cast(&self, dtype: DType) -> Result<GpuTensor> {
        const OP: &str = "cast";
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let out = self.empty_like_device(OP, self.shape(), dtype)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(OP, self.shape(), &[&self.layout])?;
        let p = CastParams::new(OP, &shape, &views[0])?;
        self.kernels().dispatch_1d(
            &families::elementwise::CAST,
            &[("FROM", code(self.dtype)?), ("TO", code(dtype)?)],
            &[&self.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )?;
        Ok(out)
    }
}
