//! `kernels/elementwise/`: fills and broadcasting elementwise math.

use crate::spec::{Access::*, KernelSpec};

/// Fill a contiguous range with one 32-bit pattern. Immediates: numel, offset, bits, pad.
pub static FILL: KernelSpec = KernelSpec {
    file: "elementwise/fill.wgsl",
    entry: "fill",
    bindings: &[ReadWrite],
    immediate_bytes: 16,
    uses_fault: false,
};

/// Broadcasting f32 binary op; override `OP` = `BinaryOp::code()`.
/// Immediates: numel, rank, a_offset, b_offset, shape[6], a_strides[6], b_strides[6].
pub static BINARY: KernelSpec = KernelSpec {
    file: "elementwise/binary.wgsl",
    entry: "binary",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
};

pub static ALL: &[&KernelSpec] = &[&FILL, &BINARY];
