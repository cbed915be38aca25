//! `kernels/reduce/`: row reductions and softmax over strided views.

use crate::spec::{Access::*, KernelSpec};

/// Reduces rows of a permuted strided view (kept dims first, reduced dims
/// last), optionally split into chunks for a second pass. Override `OP`:
/// 0 sum, 1 max, 2 min, 3 argmax, 4 argmin, 5 sum of squared deviations from
/// a per-row mean read from `aux`.
/// Bindings: src, aux, out_val, out_idx. Immediates: rows, inner, chunks,
/// chunk_len, kept_rank, rank, offset, lanes, flags, divisor (f32 bits),
/// shape[6], strides[6].
pub static REDUCE_ROWS: KernelSpec = KernelSpec {
    file: "reduce/reduce.wgsl",
    entry: "reduce_rows",
    bindings: &[Read, Read, ReadWrite, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
};

/// Fused softmax / log-softmax along one axis (override `LOG` = 0 / 1).
/// Bindings: src, out. Immediates: rows, n, kept_rank, offset,
/// in_axis_stride, out_axis_stride, lanes, flags, shape[6], in_strides[6],
/// out_strides[6].
pub static SOFTMAX_ROWS: KernelSpec = KernelSpec {
    file: "reduce/softmax.wgsl",
    entry: "softmax_rows",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 104,
    uses_fault: false,
};

/// First pass of softmax over few long rows: (max, sum of exp) per chunk.
/// Bindings: src, unused alias of src, stats. Immediates: rows, n,
/// kept_rank, offset, in_axis_stride, out_axis_stride, lanes, flags,
/// chunks, chunk_len, shape[6], in_strides[6], out_strides[6].
pub static SOFTMAX_PARTIAL: KernelSpec = KernelSpec {
    file: "reduce/softmax_split.wgsl",
    entry: "softmax_partial",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 112,
    uses_fault: false,
};

/// Second pass: merge a row's chunk statistics and write one chunk.
/// Bindings: src, stats, out. Immediates as [`SOFTMAX_PARTIAL`].
pub static SOFTMAX_WRITE: KernelSpec = KernelSpec {
    file: "reduce/softmax_split.wgsl",
    entry: "softmax_write",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 112,
    uses_fault: false,
};

pub static ALL: &[&KernelSpec] = &[
    &REDUCE_ROWS,
    &SOFTMAX_ROWS,
    &SOFTMAX_PARTIAL,
    &SOFTMAX_WRITE,
];
