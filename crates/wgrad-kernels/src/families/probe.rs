//! `kernels/probe/`: throughput probes for benchmarks (the GEMM cores'
//! ceilings); no op dispatches them.

use crate::spec::{Access::*, Elem, KernelSpec};

/// 64 f32 FMAs per iteration on registers alone.
/// Immediates: iters, seed (f32 bits, 0), stride, len (the staging probes').
pub static FMA_PEAK: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// gemm_128's inner step (workgroup-memory reads, barrier) without global loads.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_SHARED: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_shared",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] without the barrier.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_SHARED_NOBAR: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_shared_nobar",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] with operands read one k ahead.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_SHARED_AHEAD: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_shared_ahead",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] plus gemm_128's scalar staging from global memory.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_STAGE: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_stage",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_STAGE`] with vec4 global loads.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_STAGE4: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_stage4",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] with 16 k per barrier (33.8 KiB of workgroup memory).
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_K16: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_k16",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_K16`] in 32 KiB: unpadded rows, XOR-swizzled columns.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_K16_SWIZZLED: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_k16_swizzled",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] with one address per warp and load.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_SHARED_BCAST: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_shared_bcast",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`FMA_PEAK_SHARED`] with a barrier every 4 k.
/// Immediates: as [`FMA_PEAK`].
pub static FMA_PEAK_SHARED_K4: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "fma_peak_shared_k4",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// A 128 x 128-tile product read straight from global memory (no
/// workgroup memory, no barrier), one k per iteration. Immediates: as
/// [`FMA_PEAK`]; `stride` = M / 4 = N / 4, `len` = K.
pub static GEMM_L1: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1`] with four k per iteration, loads first.
pub static GEMM_L1_K4: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_k4",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1_K4`] with the next four k's loads ahead of this four's FMAs.
pub static GEMM_L1_AHEAD: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_ahead",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1_K4`] with A k-contiguous (`[M, K]` row-major at the start of
/// `src4`, B after it).
pub static GEMM_L1_NN: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_nn",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1_K4`] with two k per batch.
pub static GEMM_L1_K2: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_k2",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1_K4`] with eight k per batch.
pub static GEMM_L1_K8: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_k8",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`GEMM_L1_K4`] visiting tiles in groups of 8 tile-rows.
pub static GEMM_L1_K4G: KernelSpec = KernelSpec {
    file: "probe/fma_peak.wgsl",
    entry: "gemm_l1_k4g",
    bindings: &[ReadWrite, Read, Read],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every probe kernel.
pub static ALL: &[&KernelSpec] = &[
    &FMA_PEAK,
    &FMA_PEAK_SHARED,
    &FMA_PEAK_SHARED_NOBAR,
    &FMA_PEAK_SHARED_AHEAD,
    &FMA_PEAK_STAGE,
    &FMA_PEAK_STAGE4,
    &FMA_PEAK_K16,
    &FMA_PEAK_K16_SWIZZLED,
    &FMA_PEAK_SHARED_BCAST,
    &FMA_PEAK_SHARED_K4,
    &GEMM_L1,
    &GEMM_L1_K4,
    &GEMM_L1_AHEAD,
    &GEMM_L1_NN,
    &GEMM_L1_K2,
    &GEMM_L1_K8,
    &GEMM_L1_K4G,
];
