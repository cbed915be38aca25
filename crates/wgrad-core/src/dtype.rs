//! Element types.

use std::fmt;

/// The element type of a tensor.
///
/// The 32-bit dtypes are stored one element per 4-byte word. `F16` and `BF16`
/// are stored two elements per word on the GPU (buffers are padded to whole
/// words); every op computes on them in f32 and rounds its result once, as
/// PyTorch's kernels do (`opmath_type`). The matches on it are exhaustive on
/// purpose, so adding one shows every place to update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float: the dtype of parameters, activations and gradients.
    F32,
    /// 32-bit unsigned integer: comparison masks (0 or 1).
    U32,
    /// 32-bit signed integer: indices and class labels.
    I32,
    /// 16-bit IEEE half (`torch.float16`): 5 exponent bits, largest finite 65504.
    F16,
    /// 16-bit brain float (`torch.bfloat16`): f32's exponent range, 8 mantissa bits.
    BF16,
}

impl DType {
    /// Every dtype, for tests that iterate them.
    pub const ALL: [DType; 5] = [DType::F32, DType::U32, DType::I32, DType::F16, DType::BF16];

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// Lower-case name as PyTorch spells it (`float32`, `int32`, `uint32`,
    /// `float16`, `bfloat16`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
        }
    }

    /// Whether the dtype is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }

    /// Whether the dtype is one of the 16-bit floats, which ops compute in
    /// f32 ([`DType::compute`]).
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// The dtype kernels compute this one in: F32 for the 16-bit floats
    /// (PyTorch's `opmath_type`), the dtype itself otherwise.
    pub fn compute(self) -> DType {
        if self.is_half() { DType::F32 } else { self }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rust element types that can live in a tensor: plain old data
/// (`bytemuck::Pod`), so any buffer of them may start zeroed.
pub trait Element: bytemuck::Pod + Send + Sync + fmt::Debug + PartialEq {
    /// The dtype tag matching `Self`.
    const DTYPE: DType;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_dtypes_compute_in_f32() {
        for d in DType::ALL {
            assert_eq!(d.compute() == DType::F32, d.is_float(), "{d}");
            assert_eq!(d.is_half(), d.size_in_bytes() == 2, "{d}");
        }
    }
}
