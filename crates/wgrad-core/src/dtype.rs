//! Element types.

use std::fmt;

/// The element type of a tensor.
///
/// Every dtype today is 4 bytes wide, so data-movement kernels treat storage
/// as 32-bit words. `F16`/`BF16` will need their own movement kernels; the
/// matches on it are exhaustive on purpose, so adding one shows every place to update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float: the dtype of parameters, activations and gradients.
    F32,
    /// 32-bit unsigned integer: comparison masks (0 or 1).
    U32,
    /// 32-bit signed integer: indices and class labels.
    I32,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 | DType::I32 => 4,
        }
    }

    /// Lower-case name as PyTorch spells it (`float32`, `int32`, `uint32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::U32 => "uint32",
            DType::I32 => "int32",
        }
    }

    /// Whether the dtype is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rust element types that can live in a tensor.
pub trait Element: Copy + Send + Sync + 'static + fmt::Debug + PartialEq {
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
