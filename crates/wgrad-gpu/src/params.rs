//! Packing per-dispatch parameters (`var<immediate>` blocks) for the kernels.

use wgrad_core::{Error, Layout, MAX_RANK, Result};

/// Converts a size or offset to the u32 the kernels index with.
pub(crate) fn to_u32(op: &'static str, what: &str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        Error::invalid(
            op,
            format!("{what} {value} exceeds the GPU's 32-bit indexing"),
        )
    })
}

/// Immediates for a kernel that walks `shape` in row-major order and reads
/// each operand through its own strides/offset: `[numel, rank, off_0..off_k,
/// shape[6], strides_0[6], .., strides_k[6]]`, padded so the header is
/// `2 + k` words followed by the arrays. The kernels declare the same layout.
pub(crate) fn strided(op: &'static str, shape: &[usize], operands: &[&Layout]) -> Result<Vec<u32>> {
    let rank = shape.len();
    if rank > MAX_RANK {
        return Err(Error::invalid(
            op,
            format!("rank {rank} exceeds {MAX_RANK}"),
        ));
    }
    let numel: usize = shape.iter().product();
    let mut words = vec![to_u32(op, "element count", numel)?, rank as u32];
    for l in operands {
        words.push(to_u32(op, "offset", l.offset())?);
    }
    words.extend(padded(op, shape)?);
    for l in operands {
        debug_assert_eq!(
            l.shape(),
            shape,
            "operand layouts must be broadcast to the output shape"
        );
        words.extend(padded(op, l.strides())?);
    }
    Ok(words)
}

fn padded(op: &'static str, values: &[usize]) -> Result<[u32; MAX_RANK]> {
    let mut out = [0u32; MAX_RANK];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = to_u32(op, "dimension or stride", v)?;
    }
    Ok(out)
}

/// Bytes of a word slice, as `KernelCache::dispatch` takes them.
pub(crate) fn bytes(words: &[u32]) -> &[u8] {
    bytemuck::cast_slice(words)
}
