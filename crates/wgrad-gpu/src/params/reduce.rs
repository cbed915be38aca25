//! Immediates of `kernels/reduce/*.wgsl`.

use wgrad_core::MAX_RANK;

use super::immediates;

immediates! {
    /// `ReduceParams` of `reduce/reduce.wgsl`.
    ReduceParams {
        /// Output rows (product of the kept dims).
        rows: u32,
        /// Elements per row (product of the reduced dims).
        inner: u32,
        /// Pieces each row is split into (1 = no split).
        chunks: u32,
        /// Elements per piece.
        chunk_len: u32,
        /// `shape[..kept_rank]` are kept dims, the rest reduced.
        kept_rank: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Element offset of the view.
        offset: u32,
        /// Threads per row: a power of two in 1..=256.
        lanes: u32,
        /// `FLAG_*` bits.
        flags: u32,
        /// With `FLAG_DIVIDE`, the result is `acc / divisor`.
        divisor: f32,
        /// Kept then reduced dims.
        shape: [u32; MAX_RANK],
        /// Their strides.
        strides: [u32; MAX_RANK],
    }
}

immediates! {
    /// `SoftmaxParams` of `reduce/softmax.wgsl`.
    SoftmaxParams {
        /// Rows (lanes along the axis).
        rows: u32,
        /// Length of the axis.
        n: u32,
        /// Dims of `shape` / `in_strides` / `out_strides`.
        kept_rank: u32,
        /// Element offset of the input view.
        offset: u32,
        /// Input stride along the axis.
        in_axis_stride: u32,
        /// Output stride along the axis.
        out_axis_stride: u32,
        /// Threads per row: a power of two in 1..=256.
        lanes: u32,
        /// Row-fast flag.
        flags: u32,
        /// The other (kept) dims.
        shape: [u32; MAX_RANK],
        /// Their input strides.
        in_strides: [u32; MAX_RANK],
        /// Their output strides.
        out_strides: [u32; MAX_RANK],
    }
}

immediates! {
    /// `SplitParams` of `reduce/softmax_split.wgsl`: [`SoftmaxParams`]
    /// with the rows cut into chunks.
    SoftmaxSplitParams {
        /// Rows (lanes along the axis).
        rows: u32,
        /// Length of the axis.
        n: u32,
        /// Dims of `shape` / `in_strides` / `out_strides`.
        kept_rank: u32,
        /// Element offset of the input view.
        offset: u32,
        /// Input stride along the axis.
        in_axis_stride: u32,
        /// Output stride along the axis.
        out_axis_stride: u32,
        /// Threads per (virtual) row: a power of two in 1..=256.
        lanes: u32,
        /// Row-fast flag.
        flags: u32,
        /// Chunks per row.
        chunks: u32,
        /// Elements per chunk.
        chunk_len: u32,
        /// The other (kept) dims.
        shape: [u32; MAX_RANK],
        /// Their input strides.
        in_strides: [u32; MAX_RANK],
        /// Their output strides.
        out_strides: [u32; MAX_RANK],
    }
}

impl SoftmaxParams {
    /// The split kernels' block: these fields plus `chunks` of `chunk_len`.
    pub(crate) fn split(self, chunks: u32, chunk_len: u32) -> SoftmaxSplitParams {
        SoftmaxSplitParams {
            rows: self.rows,
            n: self.n,
            kept_rank: self.kept_rank,
            offset: self.offset,
            in_axis_stride: self.in_axis_stride,
            out_axis_stride: self.out_axis_stride,
            lanes: self.lanes,
            flags: self.flags,
            chunks,
            chunk_len,
            shape: self.shape,
            in_strides: self.in_strides,
            out_strides: self.out_strides,
        }
    }
}

immediates! {
    /// `SumParams` of `reduce/sum_int.wgsl`.
    SumParams {
        /// Output rows.
        rows: u32,
        /// Elements per (contiguous) row.
        inner: u32,
        /// Element offset of the matrix.
        offset: u32,
        /// Unused (16-byte block).
        pad: u32,
    }
}
