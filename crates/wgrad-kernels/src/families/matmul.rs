//! `kernels/matmul/`: batched, strided matrix products.

use crate::spec::{Access::*, KernelSpec};

/// Register-tiled batched f32 GEMM `out[b] = A[b] @ B[b]` over strided
/// operands: 64 x 64 output tile per workgroup of 256 threads (4 x 4 per
/// thread), K in steps of 16 staged in workgroup memory. Output contiguous
/// `[batch, M, N]`; dispatch `groups` workgroups (folded 1-D grid).
/// Overrides `A_M_FAST` / `B_K_FAST` (0/1) pick the coalesced load order.
/// Immediates (24 words): m, n, k, tiles_n, tiles_mn, groups, a_offset,
/// b_offset, a_rs, a_cs, b_rs, b_cs, batch[4], a_bstrides[4], b_bstrides[4].
pub static MATMUL: KernelSpec = KernelSpec {
    file: "matmul/matmul.wgsl",
    entry: "matmul",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 96,
    uses_fault: false,
};

pub static ALL: &[&KernelSpec] = &[&MATMUL];
