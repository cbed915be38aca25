//! wgrad and safetensors dtypes: which converts to which, and the
//! little-endian encoding both ways.

use safetensors::Dtype;
use wgrad_autograd::Tensor;
use wgrad_core::{DType, Result};

/// A tensor ready for the file: safetensors dtype, shape, little-endian bytes.
pub(crate) type Encoded = (Dtype, Vec<usize>, Vec<u8>);

/// The float file dtypes [`state_dict::load`](crate::state_dict::load)
/// converts into float parameters of another float dtype.
pub(crate) const FLOAT_FILE_DTYPES: [Dtype; 4] = [Dtype::F64, Dtype::F32, Dtype::F16, Dtype::BF16];

/// Whether a file tensor of dtype `from` loads into a `to` tensor: the same
/// dtype, or any float (F64, F32, F16, BF16) into a float parameter, as
/// PyTorch's `load_state_dict` copies it (`param.copy_(input)`: widening
/// exactly, narrowing to nearest even with overflow to infinity). I64
/// loads into I32 buffers (PyTorch's `num_batches_tracked`), range-checked
/// when decoded, and BOOL into U32 masks. Other integers and 8-bit floats
/// are refused, as are integers into floats: loading them into weights is
/// almost surely the wrong file.
pub(crate) fn converts(from: Dtype, to: DType) -> bool {
    dtype_of(from) == Some(to)
        || (to.is_float() && FLOAT_FILE_DTYPES.contains(&from))
        || (to == DType::I32 && from == Dtype::I64)
        || (to == DType::U32 && from == Dtype::BOOL)
}

/// The wgrad dtype a file tensor of `dtype` loads as in
/// [`state_dict::load_file`](crate::state_dict::load_file): its own, or
/// wgrad's stand-in for a PyTorch dtype it lacks (F64 as F32, I64 as I32,
/// BOOL as a U32 mask), as `docs/PYTORCH.md` maps them.
pub(crate) fn loaded_dtype(dtype: Dtype) -> Option<DType> {
    dtype_of(dtype).or(match dtype {
        Dtype::F64 => Some(DType::F32),
        Dtype::I64 => Some(DType::I32),
        Dtype::BOOL => Some(DType::U32),
        _ => None,
    })
}

/// How safetensors spells a wgrad dtype.
pub(crate) fn file_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::I32 => Dtype::I32,
        DType::U32 => Dtype::U32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
    }
}

/// The wgrad dtype of a safetensors dtype, if it has one.
pub(crate) fn dtype_of(dtype: Dtype) -> Option<DType> {
    match dtype {
        Dtype::F32 => Some(DType::F32),
        Dtype::I32 => Some(DType::I32),
        Dtype::U32 => Some(DType::U32),
        Dtype::F16 => Some(DType::F16),
        Dtype::BF16 => Some(DType::BF16),
        _ => None,
    }
}

/// The safetensors dtype, shape and little-endian bytes of `t` (read back
/// from the GPU when it lives there).
pub(crate) fn encode(t: &Tensor) -> Result<Encoded> {
    Ok(match t.dtype() {
        DType::F32 => (
            Dtype::F32,
            t.shape().to_vec(),
            le_bytes(t.to_vec::<f32>()?, f32::to_le_bytes),
        ),
        DType::I32 => (
            Dtype::I32,
            t.shape().to_vec(),
            le_bytes(t.to_vec::<i32>()?, i32::to_le_bytes),
        ),
        DType::U32 => (
            Dtype::U32,
            t.shape().to_vec(),
            le_bytes(t.to_vec::<u32>()?, u32::to_le_bytes),
        ),
        DType::F16 => (
            Dtype::F16,
            t.shape().to_vec(),
            le_bytes(t.to_vec::<half::f16>()?, half::f16::to_le_bytes),
        ),
        DType::BF16 => (
            Dtype::BF16,
            t.shape().to_vec(),
            le_bytes(t.to_vec::<half::bf16>()?, half::bf16::to_le_bytes),
        ),
    })
}

/// Encodes `N`-byte words little-endian (the safetensors byte order).
pub(crate) fn le_bytes<T: Copy, const N: usize>(
    values: Vec<T>,
    to_le: fn(T) -> [u8; N],
) -> Vec<u8> {
    values.into_iter().flat_map(to_le).collect()
}

/// Decodes little-endian `N`-byte words (the safetensors byte order,
/// whatever the host's). The caller's view guarantees a multiple of `N`
/// bytes.
pub(crate) fn le_words<T, const N: usize>(bytes: &[u8], from_le: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .filter_map(|c| <[u8; N]>::try_from(c).ok())
        .map(from_le)
        .collect()
}
