//! PyTorch's promotion of boolean masks, which wgrad stores as U32 0/1
//! (what comparisons return): a mask meeting a number takes the number's
//! dtype, so `mask * x`, `x + mask` and `(pred == y).sum()` work as they do
//! on a `torch.bool` tensor.
//!
//! - mask (op) tensor: the mask is cast to the tensor's dtype (0/1 are
//!   exact in every dtype); two masks stay an error for arithmetic
//!   (PyTorch's bool-with-bool results are bools, which wgrad has no
//!   arithmetic for) and compare as I32.
//! - mask (op) scalar: computed in F32 (`mask * 0.5`, `mask * -1e9`).
//! - sum and cumsum of a mask count in I32 (PyTorch: int64).

use wgrad_core::{DType, Result};

use super::Storage;

fn is_mask(s: &Storage) -> bool {
    s.dtype() == DType::U32
}

/// The operands of a binary op with a mask cast to the other operand's
/// dtype, or `None` when neither or both are masks.
pub(super) fn unmasked_pair(a: &Storage, b: &Storage) -> Result<Option<(Storage, Storage)>> {
    Ok(match (is_mask(a), is_mask(b)) {
        (true, false) => Some((a.cast(b.dtype())?, b.clone())),
        (false, true) => Some((a.clone(), b.cast(a.dtype())?)),
        _ => None,
    })
}

/// The operands of a comparison with masks promoted: one mask takes the
/// other's dtype, two masks compare as I32.
pub(super) fn comparable_pair(a: &Storage, b: &Storage) -> Result<Option<(Storage, Storage)>> {
    if is_mask(a) && is_mask(b) {
        return Ok(Some((a.cast(DType::I32)?, b.cast(DType::I32)?)));
    }
    unmasked_pair(a, b)
}

/// `s` cast to `to` when it is a mask.
pub(super) fn unmasked(s: &Storage, to: DType) -> Result<Option<Storage>> {
    if is_mask(s) {
        return Ok(Some(s.cast(to)?));
    }
    Ok(None)
}
