//! `kernels/nn/` kernel specs: fused neural-network ops.

use crate::spec::{Access::*, Elem, KernelSpec};

/// Per-sample cross-entropy of logits `[N, C]` against I32 targets `[N]`
/// (fused max, log-sum-exp and pick; one row per `lanes` threads).
/// Bindings: logits, target, out. Immediates: rows, n, x_offset,
/// x_row_stride, x_col_stride, t_offset, t_stride, lanes, smoothing (f32
/// bits), ignore_index (i32 bits), g_offset, g_stride (unused here).
/// Faults (code 5) on a target outside `0..C` that is not `ignore_index`.
pub static CROSS_ENTROPY: KernelSpec = KernelSpec {
    file: "nn/cross_entropy.wgsl",
    entry: "cross_entropy_rows",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 48,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// Gradient of [`CROSS_ENTROPY`] w.r.t. the logits, as a contiguous `[N, C]`.
/// Bindings: logits, target, grad, out. Immediates as [`CROSS_ENTROPY`]
/// (g_offset/g_stride address the upstream gradient `[N]`).
pub static CROSS_ENTROPY_BACKWARD: KernelSpec = KernelSpec {
    file: "nn/cross_entropy_backward.wgsl",
    entry: "cross_entropy_backward_rows",
    bindings: &[Read, Read, Read, ReadWrite],
    immediate_bytes: 48,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[&CROSS_ENTROPY, &CROSS_ENTROPY_BACKWARD];
