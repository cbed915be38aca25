//! `kernels/sort/` and `kernels/scan/`: stable bitonic sorts of rows (by
//! the keys of `wgrad_core::checks::sort::sort_key`), prefix sums and
//! products.
//! Every kernel reads and writes raw 32-bit words; the override `KIND`
//! (`KeyKind::code()`) says what they are.

use crate::spec::{Access::*, Elem, KernelSpec};

/// Longest row [`SORT_ROWS`] sorts in workgroup memory (the WGSL `SORT_TILE`).
pub const SORT_TILE: usize = 2048;

/// Elements one [`SCAN_BLOCKS`] workgroup scans (the WGSL `SCAN_BLOCK`).
pub const SCAN_BLOCK: usize = 1024;

const fn spec(
    file: &'static str,
    entry: &'static str,
    bindings: &'static [crate::spec::Access],
    immediate_bytes: u32,
) -> KernelSpec {
    KernelSpec {
        file,
        entry,
        bindings,
        immediate_bytes,
        uses_fault: false,
        elem: Elem::U32,
        selector: None,
    }
}

/// Rows of up to [`SORT_TILE`] elements in workgroup memory (one per
/// workgroup; `SORT_TILE / padded` when shorter): src -> values, I32 indices. Immediates: `SortParams` (32 bytes).
pub static SORT_ROWS: KernelSpec = spec(
    "sort/sort_rows.wgsl",
    "sort_rows",
    &[Read, ReadWrite, ReadWrite],
    32,
);

/// Longer rows, step 1: (key, index) pairs into the scratch buffer.
/// Bindings of every `sort_global` entry: src, pairs, values, indices.
pub static SORT_INIT: KernelSpec = spec(
    "sort/sort_global.wgsl",
    "sort_init",
    &[Read, ReadWrite, ReadWrite, ReadWrite],
    32,
);

/// Longer rows: the network's stages (or one stage's short steps) within
/// each tile of [`SORT_TILE`] pairs, in workgroup memory.
pub static SORT_TILES: KernelSpec = spec(
    "sort/sort_global.wgsl",
    "sort_tiles",
    &[Read, ReadWrite, ReadWrite, ReadWrite],
    32,
);

/// Longer rows: one step of distance `j >= SORT_TILE` of stage `k`.
pub static SORT_STEP: KernelSpec = spec(
    "sort/sort_global.wgsl",
    "sort_step",
    &[Read, ReadWrite, ReadWrite, ReadWrite],
    32,
);

/// Longer rows, last step: values and indices from the sorted pairs.
pub static SORT_WRITE: KernelSpec = spec(
    "sort/sort_global.wgsl",
    "sort_write",
    &[Read, ReadWrite, ReadWrite, ReadWrite],
    32,
);

/// Inclusive scan of [`SCAN_BLOCK`]-element blocks of each row, plus each
/// block's total. Immediates: `ScanParams` (24 bytes).
pub static SCAN_BLOCKS: KernelSpec = spec(
    "scan/scan.wgsl",
    "scan_blocks",
    &[Read, ReadWrite, ReadWrite],
    24,
);

/// Adds the scanned totals of earlier blocks to each element of a row.
pub static SCAN_CARRY: KernelSpec =
    spec("scan/scan_carry.wgsl", "scan_carry", &[ReadWrite, Read], 24);

/// The input gradient of cumprod, one thread per row (exact with zeros).
pub static CUMPROD_BACKWARD: KernelSpec = spec(
    "scan/cumprod_backward.wgsl",
    "cumprod_backward",
    &[Read, Read, ReadWrite],
    24,
);

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &SORT_ROWS,
    &SORT_INIT,
    &SORT_TILES,
    &SORT_STEP,
    &SORT_WRITE,
    &SCAN_BLOCKS,
    &SCAN_CARRY,
    &CUMPROD_BACKWARD,
];
