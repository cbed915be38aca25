//! Immediates of `kernels/movement/*.wgsl` and `kernels/random/random.wgsl`.

use wgrad_core::{Layout, MAX_RANK, Result};

use super::{Strided, immediates, padded, to_u32};

immediates! {
    /// `CopyParams` of `movement/copy.wgsl`.
    CopyParams {
        /// Elements to copy.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the source view.
        src_offset: u32,
        /// Offset of the contiguous destination.
        dst_offset: u32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the source view.
        strides: [u32; MAX_RANK],
    }
}

impl CopyParams {
    /// Copies the view `src` to a contiguous range starting at `dst_offset`.
    pub(crate) fn new(op: &'static str, src: &Layout, dst_offset: usize) -> Result<Self> {
        let s = Strided::new(op, src.shape(), [src])?;
        Ok(CopyParams {
            numel: s.numel,
            rank: s.rank,
            src_offset: s.offsets[0],
            dst_offset: to_u32(op, "offset", dst_offset)?,
            shape: s.shape,
            strides: s.strides[0],
        })
    }
}

immediates! {
    /// `CopyViewParams` of `movement/copy_view.wgsl`.
    CopyViewParams {
        /// Elements to copy.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the source view.
        src_offset: u32,
        /// Offset of the destination view.
        dst_offset: u32,
        /// The shape of both views.
        shape: [u32; MAX_RANK],
        /// Strides of the source view.
        src_strides: [u32; MAX_RANK],
        /// Strides of the destination view.
        dst_strides: [u32; MAX_RANK],
    }
}

impl CopyViewParams {
    /// Copies the view `src` into the view `dst`, both of `shape`.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        src: &Layout,
        dst: &Layout,
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [src, dst])?;
        Ok(CopyViewParams {
            numel: s.numel,
            rank: s.rank,
            src_offset: s.offsets[0],
            dst_offset: s.offsets[1],
            shape: s.shape,
            src_strides: s.strides[0],
            dst_strides: s.strides[1],
        })
    }
}

immediates! {
    /// `GatherParams` of `movement/gather.wgsl`.
    GatherParams {
        /// Elements of the output (= of the index).
        numel: u32,
        /// Dims of the source, index and output.
        rank: u32,
        /// Offset of the source.
        src_offset: u32,
        /// Offset of the index.
        idx_offset: u32,
        /// The gathered axis.
        axis: u32,
        /// The source's size on `axis`.
        axis_size: u32,
        /// Padding (0).
        _pad0: u32,
        /// Padding (0).
        _pad1: u32,
        /// Output (= index) shape.
        shape: [u32; MAX_RANK],
        /// Strides of the source.
        src_strides: [u32; MAX_RANK],
        /// Strides of the index.
        idx_strides: [u32; MAX_RANK],
    }
}

impl GatherParams {
    /// Gathers `src` along `axis` at `index` (same rank).
    pub(crate) fn new(op: &'static str, axis: usize, src: &Layout, index: &Layout) -> Result<Self> {
        Ok(GatherParams {
            numel: to_u32(op, "element count", index.numel())?,
            rank: src.rank() as u32,
            src_offset: to_u32(op, "offset", src.offset())?,
            idx_offset: to_u32(op, "offset", index.offset())?,
            axis: axis as u32,
            axis_size: to_u32(op, "dimension", src.shape()[axis])?,
            _pad0: 0,
            _pad1: 0,
            shape: padded(op, index.shape())?,
            src_strides: padded(op, src.strides())?,
            idx_strides: padded(op, index.strides())?,
        })
    }
}

immediates! {
    /// `IndexSelectParams` of `movement/index_select.wgsl`.
    IndexSelectParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of the source and output.
        rank: u32,
        /// Offset of the source.
        src_offset: u32,
        /// Offset of the 1-D index.
        idx_offset: u32,
        /// The selected axis.
        axis: u32,
        /// The source's size on `axis`.
        axis_size: u32,
        /// Stride of the 1-D index.
        idx_stride: u32,
        /// Padding (0).
        _pad: u32,
        /// Output shape (the source's, with `axis` resized to the index length).
        shape: [u32; MAX_RANK],
        /// Strides of the source.
        src_strides: [u32; MAX_RANK],
    }
}

impl IndexSelectParams {
    /// Selects slices of `src` along `axis` at the 1-D `index`, giving `out_shape`.
    pub(crate) fn new(
        op: &'static str,
        axis: usize,
        src: &Layout,
        index: &Layout,
        out_shape: &[usize],
    ) -> Result<Self> {
        Ok(IndexSelectParams {
            numel: to_u32(op, "element count", out_shape.iter().product())?,
            rank: src.rank() as u32,
            src_offset: to_u32(op, "offset", src.offset())?,
            idx_offset: to_u32(op, "offset", index.offset())?,
            axis: axis as u32,
            axis_size: to_u32(op, "dimension", src.shape()[axis])?,
            idx_stride: to_u32(op, "stride", index.strides()[0])?,
            _pad: 0,
            shape: padded(op, out_shape)?,
            src_strides: padded(op, src.strides())?,
        })
    }
}

immediates! {
    /// `OneHotParams` of `movement/one_hot.wgsl`.
    OneHotParams {
        /// Threads: labels times `cols`.
        numel: u32,
        /// Dims of the labels.
        rank: u32,
        /// Offset of the labels.
        label_offset: u32,
        /// Number of classes.
        classes: u32,
        /// Threads per label (`max(classes, 1)`).
        cols: u32,
        /// Bits of 1 in the output dtype.
        one: u32,
        /// Padding (0).
        _pad0: u32,
        /// Padding (0).
        _pad1: u32,
        /// Label shape.
        shape: [u32; MAX_RANK],
        /// Label strides.
        strides: [u32; MAX_RANK],
    }
}

impl OneHotParams {
    /// One-hot of `labels` into `classes` classes, `threads` threads of
    /// `cols` per label, writing `one` (bits) at the label.
    pub(crate) fn new(
        op: &'static str,
        labels: &Layout,
        threads: usize,
        [classes, cols]: [usize; 2],
        one: u32,
    ) -> Result<Self> {
        Ok(OneHotParams {
            numel: to_u32(op, "element count", threads)?,
            rank: labels.rank() as u32,
            label_offset: to_u32(op, "offset", labels.offset())?,
            classes: to_u32(op, "class count", classes)?,
            cols: to_u32(op, "class count", cols)?,
            one,
            _pad0: 0,
            _pad1: 0,
            shape: padded(op, labels.shape())?,
            strides: padded(op, labels.strides())?,
        })
    }
}

immediates! {
    /// `ArangeParams` of `movement/arange.wgsl`: start and step as soft
    /// f64 (`±(hi * 2^32 + lo) * 2^exp`).
    ArangeParams {
        /// Elements to write.
        numel: u32,
        /// Low 32 bits of the start's mantissa.
        start_lo: u32,
        /// High bits of the start's mantissa.
        start_hi: u32,
        /// The start's exponent.
        start_exp: i32,
        /// The start's sign (1: negative).
        start_sign: u32,
        /// Low 32 bits of the step's mantissa.
        step_lo: u32,
        /// High bits of the step's mantissa.
        step_hi: u32,
        /// The step's exponent.
        step_exp: i32,
        /// The step's sign (1: negative).
        step_sign: u32,
        /// Padding (0).
        _pad: u32,
    }
}

immediates! {
    /// `RandomParams` of `random/random.wgsl`.
    RandomParams {
        /// Elements to write.
        numel: u32,
        /// First key of the seed.
        key0: u32,
        /// Second key of the seed.
        key1: u32,
        /// Bits of low / mean.
        a: u32,
        /// Bits of high / std.
        b: u32,
        /// Always 0 (the kernel XORs it in to block FMA contraction).
        zero: u32,
    }
}
