//! Immediates of `kernels/backward/*.wgsl`.

use wgrad_core::{Layout, MAX_RANK, Result};

use super::{Strided, immediates, to_u32};

immediates! {
    /// `Params` of `backward/unary_backward.wgsl`.
    UnaryBackwardParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the upstream gradient.
        g_offset: u32,
        /// Offset of the op's input.
        x_offset: u32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the upstream gradient.
        g_strides: [u32; MAX_RANK],
        /// Strides of the op's input.
        x_strides: [u32; MAX_RANK],
        /// The op's first parameter (`UnaryOp::params`).
        a0: f32,
        /// The op's second parameter.
        a1: f32,
    }
}

impl UnaryBackwardParams {
    /// The gradient `g * op'(x)` over `shape` for an op with parameters `[a0, a1]`.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        g: &Layout,
        x: &Layout,
        [a0, a1]: [f32; 2],
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [g, x])?;
        Ok(UnaryBackwardParams {
            numel: s.numel,
            rank: s.rank,
            g_offset: s.offsets[0],
            x_offset: s.offsets[1],
            shape: s.shape,
            g_strides: s.strides[0],
            x_strides: s.strides[1],
            a0,
            a1,
        })
    }
}

immediates! {
    /// `Params` of `backward/softmax_backward.wgsl`.
    SoftmaxBackwardParams {
        /// Rows (lanes along the axis).
        rows: u32,
        /// Length of the axis.
        len: u32,
        /// Dims of `shape`.
        rank: u32,
        /// The softmax axis.
        axis: u32,
        /// Offset of the upstream gradient.
        g_offset: u32,
        /// Offset of the softmax output.
        y_offset: u32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the upstream gradient.
        g_strides: [u32; MAX_RANK],
        /// Strides of the softmax output.
        y_strides: [u32; MAX_RANK],
    }
}

impl SoftmaxBackwardParams {
    /// The backward of a softmax along `axis` of `g` and `y` (both of `shape`).
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        axis: usize,
        g: &Layout,
        y: &Layout,
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [g, y])?;
        let len = shape[axis];
        let rows = shape
            .iter()
            .product::<usize>()
            .checked_div(len)
            .unwrap_or(0);
        Ok(SoftmaxBackwardParams {
            rows: to_u32(op, "row count", rows)?,
            len: to_u32(op, "row length", len)?,
            rank: s.rank,
            axis: axis as u32,
            g_offset: s.offsets[0],
            y_offset: s.offsets[1],
            shape: s.shape,
            g_strides: s.strides[0],
            y_strides: s.strides[1],
        })
    }
}

immediates! {
    /// `Params` of `backward/scatter_add.wgsl`.
    ScatterAddParams {
        /// Elements of the iteration shape.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the source.
        src_offset: u32,
        /// Offset of the index.
        idx_offset: u32,
        /// Offset of the output.
        out_offset: u32,
        /// The iteration shape.
        shape: [u32; MAX_RANK],
        /// Strides of the source.
        src_strides: [u32; MAX_RANK],
        /// Strides of the index.
        idx_strides: [u32; MAX_RANK],
        /// Strides of the output.
        out_strides: [u32; MAX_RANK],
        /// The scattered axis.
        axis: u32,
        /// The output's size on `axis`.
        size: u32,
    }
}

impl ScatterAddParams {
    /// Scatters `src` through `idx` into `out` along `axis` (whose size in
    /// the output is `size`), all three viewed with `shape`.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        [src, idx, out]: [&Layout; 3],
        axis: usize,
        size: usize,
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [src, idx, out])?;
        Ok(ScatterAddParams {
            numel: s.numel,
            rank: s.rank,
            src_offset: s.offsets[0],
            idx_offset: s.offsets[1],
            out_offset: s.offsets[2],
            shape: s.shape,
            src_strides: s.strides[0],
            idx_strides: s.strides[1],
            out_strides: s.strides[2],
            axis: axis as u32,
            size: to_u32(op, "dimension", size)?,
        })
    }
}
