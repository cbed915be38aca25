//! Immediates of `kernels/elementwise/*.wgsl`.

use wgrad_core::{Layout, MAX_RANK, Result};

use super::{Strided, immediates, to_u32};

immediates! {
    /// `FillParams` of `elementwise/fill.wgsl`.
    FillParams {
        /// Elements to write.
        numel: u32,
        /// Element offset of the first one.
        offset: u32,
        /// The bit pattern written to each.
        bits: u32,
        /// Padding (0).
        _pad: u32,
    }
}

impl FillParams {
    /// Fills `numel` elements from `offset` with `bits`.
    pub(crate) fn new(op: &'static str, numel: usize, offset: usize, bits: u32) -> Result<Self> {
        Ok(FillParams {
            numel: to_u32(op, "element count", numel)?,
            offset: to_u32(op, "offset", offset)?,
            bits,
            _pad: 0,
        })
    }
}

immediates! {
    /// `BinaryParams` of `elementwise/binary.wgsl`.
    BinaryParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of `a`.
        a_offset: u32,
        /// Offset of `b`.
        b_offset: u32,
        /// The output shape.
        shape: [u32; MAX_RANK],
        /// Strides of `a` (broadcast to `shape`).
        a_strides: [u32; MAX_RANK],
        /// Strides of `b` (broadcast to `shape`).
        b_strides: [u32; MAX_RANK],
    }
}

impl BinaryParams {
    /// `a (op) b` over `shape`.
    pub(crate) fn new(op: &'static str, shape: &[usize], a: &Layout, b: &Layout) -> Result<Self> {
        let s = Strided::new(op, shape, [a, b])?;
        Ok(BinaryParams {
            numel: s.numel,
            rank: s.rank,
            a_offset: s.offsets[0],
            b_offset: s.offsets[1],
            shape: s.shape,
            a_strides: s.strides[0],
            b_strides: s.strides[1],
        })
    }
}

immediates! {
    /// `CastParams` of `elementwise/cast.wgsl`.
    CastParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the input.
        offset: u32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the input.
        strides: [u32; MAX_RANK],
    }
}

impl CastParams {
    /// Converts `x` (viewed with `shape`).
    pub(crate) fn new(op: &'static str, shape: &[usize], x: &Layout) -> Result<Self> {
        let s = Strided::new(op, shape, [x])?;
        Ok(CastParams {
            numel: s.numel,
            rank: s.rank,
            offset: s.offsets[0],
            shape: s.shape,
            strides: s.strides[0],
        })
    }
}

immediates! {
    /// `CompareParams` of `elementwise/compare.wgsl`.
    CompareParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of `a`.
        a_offset: u32,
        /// Offset of `b`.
        b_offset: u32,
        /// The right-hand side in scalar mode (else unused, 0).
        scalar: f32,
        /// The output shape.
        shape: [u32; MAX_RANK],
        /// Strides of `a`.
        a_strides: [u32; MAX_RANK],
        /// Strides of `b`.
        b_strides: [u32; MAX_RANK],
    }
}

impl CompareParams {
    /// Compares `a` with `b`, or with `scalar` when one is given.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        a: &Layout,
        b: &Layout,
        scalar: Option<f32>,
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [a, b])?;
        Ok(CompareParams {
            numel: s.numel,
            rank: s.rank,
            a_offset: s.offsets[0],
            b_offset: s.offsets[1],
            scalar: scalar.unwrap_or(0.0),
            shape: s.shape,
            a_strides: s.strides[0],
            b_strides: s.strides[1],
        })
    }
}

immediates! {
    /// `ScalarParams` of `elementwise/scalar.wgsl`.
    ScalarParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the tensor operand.
        offset: u32,
        /// The scalar operand.
        scalar: f32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the tensor operand.
        strides: [u32; MAX_RANK],
    }
}

impl ScalarParams {
    /// `x (op) scalar` (or the reverse) over `shape`.
    pub(crate) fn new(op: &'static str, shape: &[usize], x: &Layout, scalar: f32) -> Result<Self> {
        let s = Strided::new(op, shape, [x])?;
        Ok(ScalarParams {
            numel: s.numel,
            rank: s.rank,
            offset: s.offsets[0],
            scalar,
            shape: s.shape,
            strides: s.strides[0],
        })
    }
}

immediates! {
    /// `UnaryParams` of `elementwise/unary.wgsl`.
    UnaryParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the input.
        offset: u32,
        /// The op's first parameter (`UnaryOp::params`).
        p0: f32,
        /// The op's second parameter.
        p1: f32,
        /// The shape.
        shape: [u32; MAX_RANK],
        /// Strides of the input.
        strides: [u32; MAX_RANK],
    }
}

impl UnaryParams {
    /// An op with parameters `[p0, p1]` applied to `x` over `shape`.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        x: &Layout,
        [p0, p1]: [f32; 2],
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [x])?;
        Ok(UnaryParams {
            numel: s.numel,
            rank: s.rank,
            offset: s.offsets[0],
            p0,
            p1,
            shape: s.shape,
            strides: s.strides[0],
        })
    }
}

immediates! {
    /// `WhereParams` of `elementwise/where.wgsl`.
    WhereParams {
        /// Elements of the output.
        numel: u32,
        /// Dims of `shape`.
        rank: u32,
        /// Offset of the mask.
        m_offset: u32,
        /// Offset of `a`.
        a_offset: u32,
        /// Offset of `b`.
        b_offset: u32,
        /// The output shape.
        shape: [u32; MAX_RANK],
        /// Strides of the mask.
        m_strides: [u32; MAX_RANK],
        /// Strides of `a`.
        a_strides: [u32; MAX_RANK],
        /// Strides of `b`.
        b_strides: [u32; MAX_RANK],
    }
}

impl WhereParams {
    /// `mask ? a : b` over `shape`.
    pub(crate) fn new(
        op: &'static str,
        shape: &[usize],
        [mask, a, b]: [&Layout; 3],
    ) -> Result<Self> {
        let s = Strided::new(op, shape, [mask, a, b])?;
        Ok(WhereParams {
            numel: s.numel,
            rank: s.rank,
            m_offset: s.offsets[0],
            a_offset: s.offsets[1],
            b_offset: s.offsets[2],
            shape: s.shape,
            m_strides: s.strides[0],
            a_strides: s.strides[1],
            b_strides: s.strides[2],
        })
    }
}
