//! `kernels/movement/`: copies, concatenation, indexing and ranges
//! (dtype-agnostic 32-bit words; `COPY_HALF_TO_VIEW` for the 16-bit floats).

use crate::spec::{Access::*, Elem, KernelSpec};

/// Strided view -> contiguous. Immediates: numel, rank, src_offset, dst_offset, shape\[6\], strides\[6\].
pub static COPY_STRIDED: KernelSpec = KernelSpec {
    file: "movement/copy.wgsl",
    entry: "copy_strided",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 64,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Strided view -> strided view (concat writes each input into its slice).
/// Immediates: numel, rank, src_offset, dst_offset, shape\[6\], src_strides\[6\], dst_strides\[6\].
pub static COPY_TO_VIEW: KernelSpec = KernelSpec {
    file: "movement/copy_view.wgsl",
    entry: "copy_to_view",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Strided view -> strided view of 16-bit elements (F16/BF16, two per
/// word; atomic half-word writes, so views that split words are safe).
/// Immediates: as [`COPY_TO_VIEW`].
pub static COPY_HALF_TO_VIEW: KernelSpec = KernelSpec {
    file: "movement/copy_half.wgsl",
    entry: "copy_half_to_view",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// `index_select` over a strided source and a strided 1-D I32 index; fault code 1.
/// Immediates: numel, rank, src_offset, idx_offset, axis, axis_size, idx_stride, pad,
/// out_shape\[6\], src_strides\[6\].
pub static INDEX_SELECT: KernelSpec = KernelSpec {
    file: "movement/index_select.wgsl",
    entry: "index_select",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 80,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `gather` (torch.gather) over a strided source and a strided I32 index; fault code 2.
/// Immediates: numel, rank, src_offset, idx_offset, axis, axis_size, pad, pad,
/// index_shape\[6\], src_strides\[6\], idx_strides\[6\].
pub static GATHER: KernelSpec = KernelSpec {
    file: "movement/gather.wgsl",
    entry: "gather",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 104,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `one_hot` of strided I32 labels; fault code 3.
/// Immediates: numel, rank, label_offset, classes, cols, one_bits, pad, pad,
/// label_shape\[6\], label_strides\[6\].
pub static ONE_HOT: KernelSpec = KernelSpec {
    file: "movement/one_hot.wgsl",
    entry: "one_hot",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 80,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `arange` with emulated f64 arithmetic; override `OUT_DTYPE` (0 f32, 1 i32, 2 u32).
/// Immediates: numel, start (lo, hi, exp, sign), step (lo, hi, exp, sign), pad.
pub static ARANGE: KernelSpec = KernelSpec {
    file: "movement/arange.wgsl",
    entry: "arange",
    bindings: &[ReadWrite],
    immediate_bytes: 40,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &COPY_STRIDED,
    &COPY_TO_VIEW,
    &COPY_HALF_TO_VIEW,
    &INDEX_SELECT,
    &GATHER,
    &ONE_HOT,
    &ARANGE,
];
