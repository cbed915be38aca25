//! Dtype conversion (`kernels/elementwise/cast.wgsl`), and the contiguous
//! copy of a 16-bit float view (a conversion to its own dtype).

use wgrad_core::{DType, Error, Result};
use wgrad_kernels::families::elementwise::{
    CAST, CAST_HALF, ELEMENTS_PER_THREAD, HALF_WORDS_PER_THREAD,
};

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::CastParams;

/// The dtype code `cast.wgsl`'s `FROM`/`TO` overrides (and
/// `binary_half.wgsl`'s `*_KIND`) use.
pub(crate) fn code(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 0.0,
        DType::I32 => 1.0,
        DType::U32 => 2.0,
        DType::F16 => 3.0,
        DType::BF16 => 4.0,
    }
}

impl GpuTensor {
    /// Converts to `dtype` with Rust `as` semantics, like the CPU backend:
    /// F32 -> I32/U32 truncates toward zero and saturates (NaN -> 0); U32
    /// mask -> F32 gives 0.0/1.0; I32 <-> U32 reinterpret two's complement.
    /// F16/BF16 convert through f32 as the `half` crate does: widening is
    /// exact, narrowing rounds to nearest even (overflow to infinity,
    /// subnormals kept, NaN stays a quiet NaN), integers go through f32.
    /// Casting to the same dtype returns a clone (a view of the same buffer).
    pub fn cast(&self, dtype: DType) -> Result<GpuTensor> {
        const OP: &str = "cast";
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let out = self.empty_like_device(OP, self.shape(), dtype)?;
        self.cast_into(&out)?;
        Ok(out)
    }

    /// Records the conversion of this view into `out`: a fresh contiguous
    /// tensor of the same shape (any dtype, this one's included: then a
    /// bit-exact copy).
    pub(crate) fn cast_into(&self, out: &GpuTensor) -> Result<()> {
        const OP: &str = "cast";
        if out.shape() != self.shape() || !out.is_contiguous() || out.layout.offset() != 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "the output must be a contiguous {:?} from element 0",
                    self.shape()
                ),
            ));
        }
        if out.numel() == 0 {
            return Ok(());
        }
        let (shape, views) = coalesce(OP, self.shape(), &[&self.layout])?;
        let p = CastParams::new(OP, &shape, &views[0])?;
        let constants = [("FROM", code(self.dtype)), ("TO", code(out.dtype))];
        let buffers = [&self.buffer, &out.buffer];
        let numel = out.numel() as u64;
        if out.dtype.is_half() {
            // One thread writes whole words (pairs of elements), so no two
            // threads share a word of the output.
            let words = numel.div_ceil(2);
            let threads = words.div_ceil(HALF_WORDS_PER_THREAD);
            self.kernels()
                .dispatch_1d(&CAST_HALF, &constants, &buffers, &p, threads)
        } else {
            let threads = numel.div_ceil(ELEMENTS_PER_THREAD);
            self.kernels()
                .dispatch_1d(&CAST, &constants, &buffers, &p, threads)
        }
    }
}
