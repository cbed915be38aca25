//! `kernels/movement/`: copies, concatenation, indexing (dtype-agnostic 32-bit words).

use crate::spec::{Access::*, KernelSpec};

/// Strided view -> contiguous. Immediates: numel, rank, src_offset, dst_offset, shape[6], strides[6].
pub static COPY_STRIDED: KernelSpec = KernelSpec {
    file: "movement/copy.wgsl",
    entry: "copy_strided",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 64,
    uses_fault: false,
};

pub static ALL: &[&KernelSpec] = &[&COPY_STRIDED];
