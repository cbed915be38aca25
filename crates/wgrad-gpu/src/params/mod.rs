//! Per-dispatch parameters: one `#[repr(C)]` [`bytemuck::Pod`] struct per
//! WGSL `var<immediate>` struct, mirroring it field for field (same names,
//! same order, same types, hence the same size and offsets: every field is
//! a 4-byte scalar or an `array<u32, N>` of them, which WGSL packs exactly
//! as `repr(C)` does). `KernelCache::dispatch` takes the struct and checks
//! its size against the kernel's `immediate_bytes`; the tests below check
//! names, offsets and sizes against the kernels as naga reads them.
//!
//! Many kernels walk a shape in row-major order and read each operand
//! through its own strides and offset; [`Strided`] computes that part once
//! (with the 32-bit range checks) and the kernels' structs take their
//! fields from it in whatever order their WGSL declares them.

use wgrad_core::{Error, Layout, MAX_RANK, Result};

mod attention;
mod backward;
mod conv;
mod elementwise;
mod matmul;
mod movement;
mod nn;
mod optim;
mod pool;
mod probe;
mod reduce;
mod sort;
#[cfg(test)]
mod tests;

pub(crate) use attention::AttentionParams;
pub(crate) use backward::{ScatterAddParams, SoftmaxBackwardParams, UnaryBackwardParams};
pub(crate) use conv::{ConvInputGradParams, ConvParams, DepthwiseParams, WinogradParams};
pub(crate) use elementwise::{
    BinaryParams, CastParams, CompareParams, FillParams, ScalarParams, UnaryParams, WhereParams,
};
pub(crate) use matmul::{MatmulParams, SumSplitsParams};
pub(crate) use movement::{
    ArangeParams, CopyParams, CopyViewParams, GatherParams, IndexSelectParams, OneHotParams,
    RandomParams,
};
pub(crate) use nn::{CheckParams, CrossEntropyParams, LayerNormParams, LossMeanParams};
pub(crate) use optim::{
    AdagradParams, AdamAmsgradParams, AdamForeachParams, AdamForeachWideParams, AdamParams,
    RmsPropParams, SgdMomentumParams, SgdParams,
};
pub(crate) use pool::Pool2dParams;
pub(crate) use probe::ProbeParams;
pub(crate) use reduce::{ReduceParams, SoftmaxParams, SoftmaxSplitParams, SumParams};
pub(crate) use sort::{BernoulliParams, MultinomialParams, RandintParams, ScanParams, SortParams};

/// Declares one kernel's parameter struct: `#[repr(C)]`, `Pod`, fields in
/// the WGSL order with the WGSL names. Under `cfg(test)` it also gets
/// `FIELDS` (name, byte offset and Rust type of every field) for the
/// layout test.
macro_rules! immediates {
    (
        $(#[$doc:meta])*
        $name:ident {
            $($(#[$fdoc:meta])* $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        pub(crate) struct $name {
            $($(#[$fdoc])* pub(crate) $field: $ty,)*
        }

        #[cfg(test)]
        impl $name {
            /// Every field's name, byte offset and type, in declaration order.
            pub(crate) const FIELDS: &[(&str, usize, &str)] = &[$((
                stringify!($field),
                ::core::mem::offset_of!($name, $field),
                stringify!($ty),
            ),)*];
        }
    };
}
pub(crate) use immediates;

/// Largest size or offset the kernels take: 2^31 - 1, not u32::MAX, so
/// that their strided loops (`for (e = lid; e < n; e += step)`) can never
/// step past 2^32 and wrap around to a value still below `n` (an endless
/// loop: kernels are compiled without naga's loop bounding, see
/// wgrad_kernels' runtime_checks).
pub(crate) const MAX_INDEX: usize = i32::MAX as usize;

/// Converts a size or offset to the u32 the kernels index with.
pub(crate) fn to_u32(op: &'static str, what: &str, value: usize) -> Result<u32> {
    if value > MAX_INDEX {
        return Err(Error::invalid(
            op,
            format!("{what} {value} exceeds the GPU's 32-bit indexing (at most {MAX_INDEX})"),
        ));
    }
    Ok(value as u32)
}

/// `values` (dims or strides) as a zero-padded `array<u32, 6>`.
pub(crate) fn padded(op: &'static str, values: &[usize]) -> Result<[u32; MAX_RANK]> {
    if values.len() > MAX_RANK {
        return Err(Error::invalid(
            op,
            format!("rank {} exceeds {MAX_RANK}", values.len()),
        ));
    }
    let mut out = [0u32; MAX_RANK];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = to_u32(op, "dimension or stride", v)?;
    }
    Ok(out)
}

/// The strided walk shared by the elementwise and copy kernels: `shape`
/// (row-major, at most `MAX_RANK` dims) and, for each of `N` operands
/// broadcast to it, its element offset and strides. Not itself an
/// immediate block: each kernel's struct places these fields (named for
/// its operands) among its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<const N: usize> {
    /// Elements of `shape`.
    pub(crate) numel: u32,
    /// Dims of `shape`.
    pub(crate) rank: u32,
    /// Each operand's element offset.
    pub(crate) offsets: [u32; N],
    /// `shape`, zero-padded.
    pub(crate) shape: [u32; MAX_RANK],
    /// Each operand's strides, zero-padded.
    pub(crate) strides: [[u32; MAX_RANK]; N],
}

impl<const N: usize> Strided<N> {
    /// The walk over `shape` of `operands` (their layouts already broadcast
    /// to `shape`).
    pub(crate) fn new(op: &'static str, shape: &[usize], operands: [&Layout; N]) -> Result<Self> {
        let rank = shape.len();
        if rank > MAX_RANK {
            return Err(Error::invalid(
                op,
                format!("rank {rank} exceeds {MAX_RANK}"),
            ));
        }
        let numel: usize = shape.iter().product();
        let mut offsets = [0u32; N];
        let mut strides = [[0u32; MAX_RANK]; N];
        for ((o, s), l) in offsets.iter_mut().zip(&mut strides).zip(operands) {
            debug_assert_eq!(
                l.shape(),
                shape,
                "operand layouts must be broadcast to the output shape"
            );
            *o = to_u32(op, "offset", l.offset())?;
            *s = padded(op, l.strides())?;
        }
        Ok(Strided {
            numel: to_u32(op, "element count", numel)?,
            rank: rank as u32,
            offsets,
            shape: padded(op, shape)?,
            strides,
        })
    }
}
