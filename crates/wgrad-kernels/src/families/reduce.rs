//! `kernels/reduce/`: row reductions and softmax over strided views.

use crate::spec::{Access::*, Elem, KernelSpec, Selector};

/// The fold [`REDUCE_ROWS`] applies: its `code()` is reduce.wgsl's
/// override `OP`, and the WGSL constants `REDUCE_SUM`, ... are generated
/// from [`Fold::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fold {
    /// Sum of the row.
    Sum,
    /// Largest element (NaN propagates).
    Max,
    /// Smallest element (NaN propagates).
    Min,
    /// Index of the first largest element (NaN counts as largest).
    ArgMax,
    /// Index of the first smallest element (NaN counts as smallest).
    ArgMin,
    /// Sum of `(x - mean[row])^2` with the means in `aux`.
    SqDev,
    /// Product of the row (`torch.prod`).
    Prod,
}

impl Fold {
    /// Every fold, in `code()` order.
    pub const ALL: [Fold; 7] = [
        Fold::Sum,
        Fold::Max,
        Fold::Min,
        Fold::ArgMax,
        Fold::ArgMin,
        Fold::SqDev,
        Fold::Prod,
    ];

    /// Selector value passed as reduce.wgsl's `OP`.
    pub const fn code(self) -> u32 {
        match self {
            Fold::Sum => 0,
            Fold::Max => 1,
            Fold::Min => 2,
            Fold::ArgMax => 3,
            Fold::ArgMin => 4,
            Fold::SqDev => 5,
            Fold::Prod => 6,
        }
    }

    /// The fold's name, as its generated WGSL constant spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Fold::Sum => "sum",
            Fold::Max => "max",
            Fold::Min => "min",
            Fold::ArgMax => "argmax",
            Fold::ArgMin => "argmin",
            Fold::SqDev => "sqdev",
            Fold::Prod => "prod",
        }
    }

    /// Whether the fold yields an index (argmax / argmin).
    pub fn is_arg(self) -> bool {
        matches!(self, Fold::ArgMax | Fold::ArgMin)
    }

    /// The fold that combines this fold's partial results.
    pub fn of_partials(self) -> Fold {
        match self {
            Fold::SqDev => Fold::Sum,
            other => other,
        }
    }
}

/// Reduces rows of a permuted strided view (kept dims first, reduced dims
/// last), optionally split into chunks for a second pass. Override `OP` =
/// [`Fold::code()`].
/// Bindings: src, aux, out_val, out_idx. Immediates: rows, inner, chunks,
/// chunk_len, kept_rank, rank, offset, lanes, flags, divisor (f32 bits),
/// shape\[6\], strides\[6\].
pub static REDUCE_ROWS: KernelSpec = KernelSpec {
    file: "reduce/reduce.wgsl",
    entry: "reduce_rows",
    bindings: &[Read, Read, ReadWrite, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Reduce),
};

/// Fused softmax / log-softmax along one axis (override `LOG` = 0 / 1).
/// Bindings: src, out. Immediates: rows, n, kept_rank, offset,
/// in_axis_stride, out_axis_stride, lanes, flags, shape\[6\], in_strides\[6\],
/// out_strides\[6\].
pub static SOFTMAX_ROWS: KernelSpec = KernelSpec {
    file: "reduce/softmax.wgsl",
    entry: "softmax_rows",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 104,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// First pass of softmax over few long rows: (max, sum of exp) per chunk.
/// Bindings: src, unused alias of src, stats. Immediates: rows, n,
/// kept_rank, offset, in_axis_stride, out_axis_stride, lanes, flags,
/// chunks, chunk_len, shape\[6\], in_strides\[6\], out_strides\[6\].
pub static SOFTMAX_PARTIAL: KernelSpec = KernelSpec {
    file: "reduce/softmax_split.wgsl",
    entry: "softmax_partial",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Second pass: merge a row's chunk statistics and write one chunk.
/// Bindings: src, stats, out. Immediates as [`SOFTMAX_PARTIAL`].
pub static SOFTMAX_WRITE: KernelSpec = KernelSpec {
    file: "reduce/softmax_split.wgsl",
    entry: "softmax_write",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 112,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Row sums (override `PRODUCT = 1`: row products) of a contiguous
/// `[rows, inner]` I32 matrix (wrapping), one workgroup per row
/// (`dispatch_groups(rows)`). Bindings: src, out. Immediates: rows, inner,
/// offset, pad.
pub static SUM_ROWS_I32: KernelSpec = KernelSpec {
    file: "reduce/sum_int.wgsl",
    entry: "sum_rows_int",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::I32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &REDUCE_ROWS,
    &SUM_ROWS_I32,
    &SOFTMAX_ROWS,
    &SOFTMAX_PARTIAL,
    &SOFTMAX_WRITE,
];
