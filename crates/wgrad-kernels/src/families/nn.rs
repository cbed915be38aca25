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
    immediate_bytes: 52,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// Gradient of [`CROSS_ENTROPY`] w.r.t. the logits, as a contiguous `[N, C]`.
/// Bindings: logits, target, grad, out, divisor (override `HAS_DIVISOR` = 1:
/// grad is divided by `divisor[d_offset]`, the 'mean' reduction's count).
/// Immediates as [`CROSS_ENTROPY`] (g_offset/g_stride address the upstream
/// gradient `[N]`).
pub static CROSS_ENTROPY_BACKWARD: KernelSpec = KernelSpec {
    file: "nn/cross_entropy_backward.wgsl",
    entry: "cross_entropy_backward_rows",
    bindings: &[Read, Read, Read, ReadWrite, Read],
    immediate_bytes: 52,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// The 'mean' reduction of [`CROSS_ENTROPY`]'s per-sample losses: their sum
/// over the samples not ignored, divided by that count, by one workgroup.
/// Bindings: losses, target (i32), out (`[mean, count]`). Immediates: rows,
/// l_offset, t_offset, t_stride, ignore_index (i32 bits).
pub static CROSS_ENTROPY_MEAN: KernelSpec = KernelSpec {
    file: "nn/cross_entropy_mean.wgsl",
    entry: "cross_entropy_mean",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 20,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// binary_cross_entropy's input check: an element outside [0, 1] (or NaN)
/// raises fault code 11. Bindings: x (dense from `offset`).
/// Immediates: numel, offset.
pub static CHECK_UNIT_INTERVAL: KernelSpec = KernelSpec {
    file: "nn/check_unit_interval.wgsl",
    entry: "check_unit_interval",
    bindings: &[Read],
    immediate_bytes: 8,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `layer_norm` forward over contiguous `[rows, cols]`: the output and
/// each row's mean and rstd. Bindings: x, weight, bias (x where absent),
/// y, mean, rstd. Immediates (8 words): rows, cols, eps (f32 bits), lanes,
/// flags (1 weight, 2 bias), row_block, col_blocks, pad. `256 / lanes` rows
/// per workgroup.
pub static LAYER_NORM: KernelSpec = KernelSpec {
    file: "nn/layer_norm.wgsl",
    entry: "layer_norm_rows",
    bindings: &[Read, Read, Read, ReadWrite, ReadWrite, ReadWrite],
    immediate_bytes: 32,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Input gradient of [`LAYER_NORM`] from the saved mean and rstd.
/// Bindings: x, weight (x where absent), mean, rstd, dy, dx. Immediates as
/// [`LAYER_NORM`].
pub static LAYER_NORM_BACKWARD: KernelSpec = KernelSpec {
    file: "nn/layer_norm_backward.wgsl",
    entry: "layer_norm_backward_rows",
    bindings: &[Read, Read, Read, Read, Read, ReadWrite],
    immediate_bytes: 32,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Per-row-block partial sums of [`LAYER_NORM`]'s weight and bias
/// gradients, `[row_blocks, cols]` each. Bindings: x, mean, rstd, dy,
/// weight partials, bias partials. Immediates as [`LAYER_NORM`]
/// (row_block, col_blocks set); `col_blocks * row_blocks` workgroups.
pub static LAYER_NORM_PARAM_GRADS: KernelSpec = KernelSpec {
    file: "nn/layer_norm_param_grads.wgsl",
    entry: "layer_norm_param_grads",
    bindings: &[Read, Read, Read, Read, ReadWrite, ReadWrite],
    immediate_bytes: 32,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &CROSS_ENTROPY,
    &CROSS_ENTROPY_BACKWARD,
    &CROSS_ENTROPY_MEAN,
    &CHECK_UNIT_INTERVAL,
    &LAYER_NORM,
    &LAYER_NORM_BACKWARD,
    &LAYER_NORM_PARAM_GRADS,
];
