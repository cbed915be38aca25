//! `kernels/matmul/`: batched, strided matrix products.

use crate::spec::{Access::*, Elem, KernelSpec};

/// Register-tiled batched f32 GEMM `out[b] = A[b] @ B[b]` over strided
/// operands: 64 x 64 output tile per workgroup of 256 threads (4 x 4 per
/// thread), K in steps of 16 double-buffered in 17 KiB of workgroup memory,
/// loops unrolled by hand. Output contiguous `[splits, batch, M, N]` (split
/// `s` sums `k` in `[s * k_chunk, (s + 1) * k_chunk)`; unsplit when
/// `k_chunk >= K`); dispatch `groups` workgroups (folded 1-D grid).
/// Overrides `A_M_FAST` / `B_K_FAST` (0/1) pick the coalesced load order;
/// `HAS_BIAS` = 1 adds `bias[bias_offset + n * bias_stride]` to every
/// output column `n` in the store (`linear`; never with split K).
/// Bindings: a (read), b (read), out (read_write), bias (read; any buffer
/// when `HAS_BIAS` = 0).
/// Immediates (28 words): m, n, k, tiles_n, tiles_mn, groups, a_offset,
/// b_offset, a_rs, a_cs, b_rs, b_cs, batch\[4\], a_bstrides\[4\],
/// b_bstrides\[4\], k_chunk, batches, bias_offset, bias_stride.
pub static MATMUL_64: KernelSpec = KernelSpec {
    file: "matmul/matmul_64.wgsl",
    entry: "matmul_64",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Variant of [`MATMUL_64`] with the same tile, bindings, immediates and
/// overrides on 128 threads (4 x 8 outputs each, K in steps of 8,
/// double-buffered in 8.5 KiB of workgroup memory): a third fewer
/// workgroup-memory reads per multiply-add.
pub static MATMUL_64_LEAN: KernelSpec = KernelSpec {
    file: "matmul/matmul_64_lean.wgsl",
    entry: "matmul_64_lean",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Small-tile variant of [`MATMUL_64`] with the same bindings, immediates
/// (tile counts per 32) and overrides, for products of few tiles: 32 x 32
/// output tile per workgroup of 256 threads in 4 groups that each sum a
/// quarter of every 32-wide K step, 18 KiB of workgroup memory.
pub static MATMUL_32: KernelSpec = KernelSpec {
    file: "matmul/matmul_32.wgsl",
    entry: "matmul_32",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// 128 x 64-tile (rows x columns) variant of [`MATMUL_64`] with the same
/// bindings, immediates (tile counts per 128 rows and 64 columns) and
/// overrides: 8 x 4 outputs per thread, K in steps of 8 double-buffered in
/// 12.5 KiB of workgroup memory.
pub static MATMUL_128X64: KernelSpec = KernelSpec {
    file: "matmul/matmul_128x64.wgsl",
    entry: "matmul_128x64",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Large-tile variant of [`MATMUL_64`] with the same bindings, immediates
/// (tile counts per 128) and overrides: 128 x 128 output tile per workgroup
/// of 256 threads (8 x 8 per thread), K in steps of 8, double-buffered in
/// 16.5 KiB of workgroup memory.
pub static MATMUL_128: KernelSpec = KernelSpec {
    file: "matmul/matmul_128.wgsl",
    entry: "matmul_128",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Tensor-core variant of [`MATMUL_64`] for f32 tensors under
/// `set_float32_matmul_precision("medium")`, with the same bindings,
/// immediates (tile counts per 128 rows and 256 columns) and overrides:
/// operands rounded to f16 in workgroup memory, multiplied as
/// `coop_mat16x16` tiles with f32 accumulators. 128 x 256 output tile per
/// workgroup of 8 subgroups of 32 lanes (64 x 64 each), K in steps of 32;
/// 34.5 KiB of workgroup memory. Needs the device's cooperative-matrix,
/// f16 and subgroup features (`GpuDevice::has_f16_tensor_cores`).
pub static MATMUL_COOP: KernelSpec = KernelSpec {
    file: "matmul/matmul_coop.wgsl",
    entry: "matmul_coop",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Variant of [`MATMUL_64`] for products with a short output side (at
/// most 16 rows or columns: classifier heads, their weight gradients, row
/// sums alone), with the same bindings, immediates and overrides except
/// the load-order ones: each workgroup takes `WIDE_LANES` (4, 8 or 16)
/// indices of the long side and the whole short side, its 256 threads
/// share K and add their sums in a tree in 16 KiB of workgroup memory. One
/// dispatch, never split. Overrides `SHORT_M` (0: N is short; 1: M is) and
/// `WIDE_FAST` (1: the long side's index is unit-stride in its operand;
/// 0: K is). Tile counts per `WIDE_LANES` long-side indices.
pub static MATMUL_SKINNY: KernelSpec = KernelSpec {
    file: "matmul/matmul_skinny.wgsl",
    entry: "matmul_skinny",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Variant of [`MATMUL_64`] for products over a short K (at most 16 by
/// the plan): 32 x 128 output tiles, each thread's 4 x 4 outputs computed
/// straight from the operands, no workgroup memory. Same bindings,
/// immediates (tile counts per 32 rows and 128 columns) and overrides
/// except the load-order ones; never split.
pub static MATMUL_THIN: KernelSpec = KernelSpec {
    file: "matmul/matmul_thin.wgsl",
    entry: "matmul_thin",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Second pass of a split-K product: `out[i] = sum_s part[s * numel + i]`,
/// plus the bias of column `i % n` once after the sum where `HAS_BIAS` = 1
/// (`linear`). Bindings: part (read), out (read_write), bias (read; any
/// buffer without `HAS_BIAS`). Immediates (5 words): numel, splits, n,
/// bias_offset, bias_stride. 1-D folded grid over `numel`.
pub static SUM_SPLITS: KernelSpec = KernelSpec {
    file: "matmul/sum_splits.wgsl",
    entry: "sum_splits",
    bindings: &[Read, ReadWrite, Read],
    immediate_bytes: 20,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`SUM_SPLITS`] for few outputs over many splits: one workgroup per
/// output, its threads over the splits, then a tree. Same bindings,
/// immediates and overrides; dispatch `numel` workgroups.
pub static SUM_SPLITS_TREE: KernelSpec = KernelSpec {
    file: "matmul/sum_splits.wgsl",
    entry: "sum_splits_tree",
    bindings: &[Read, ReadWrite, Read],
    immediate_bytes: 20,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &MATMUL_32,
    &MATMUL_64,
    &MATMUL_64_LEAN,
    &MATMUL_128X64,
    &MATMUL_128,
    &MATMUL_COOP,
    &MATMUL_SKINNY,
    &MATMUL_THIN,
    &SUM_SPLITS,
    &SUM_SPLITS_TREE,
];
