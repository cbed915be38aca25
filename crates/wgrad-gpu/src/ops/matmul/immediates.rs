//! The immediate block of the matmul kernels (`common/matmul_params.wgsl`'s
//! `MatmulParams`): sizes, tiles, operand strides and the broadcast batch
//! dims, simplified and checked to fit the kernels' 32-bit arithmetic.

use wgrad_core::{Error, Layout, Result};

use super::KERNEL_BATCH_DIMS;
use crate::params::{self, MatmulParams};

/// The kernel's immediate block for `a` (`batch + [m, k]`) times `b`
/// (`batch + [k, n]`), both already expanded to the broadcast batch, with
/// output tiles of `tile_m x tile_n` and K cut into `splits` chunks of `k_chunk`.
#[allow(clippy::too_many_arguments)]
pub(super) fn immediates(
    op: &'static str,
    a: &Layout,
    b: &Layout,
    batch: &[usize],
    [m, n, k]: [usize; 3],
    (tile_m, tile_n): (usize, usize),
    k_chunk: usize,
    splits: usize,
) -> Result<MatmulParams> {
    // Every index the kernel forms stays below the operands' span ends and
    // the output's (or partial sums') element count; all must fit its 32-bit
    // arithmetic.
    params::to_u32(op, "operand extent", a.span_end())?;
    params::to_u32(op, "operand extent", b.span_end())?;
    let count: usize = batch.iter().product();
    params::to_u32(op, "output element count", splits * count * m * n)?;

    let dims = simplify_batch(
        batch,
        &a.strides()[..batch.len()],
        &b.strides()[..batch.len()],
    );
    let tiles_n = n.div_ceil(tile_n);
    let tiles_mn = tiles_n * m.div_ceil(tile_m);
    let groups = params::to_u32(op, "workgroup count", tiles_mn * count * splits)?;

    // Right-aligned: unused leading dims are size 1 with stride 0.
    let pad = KERNEL_BATCH_DIMS.checked_sub(dims.len()).ok_or_else(|| {
        Error::invalid(
            op,
            format!("{} batch dims exceed {KERNEL_BATCH_DIMS}", dims.len()),
        )
    })?;
    let mut batch = [1u32; KERNEL_BATCH_DIMS];
    let mut a_bstrides = [0u32; KERNEL_BATCH_DIMS];
    let mut b_bstrides = [0u32; KERNEL_BATCH_DIMS];
    for (i, &(size, sa, sb)) in dims.iter().enumerate() {
        let what = "batch size or stride";
        batch[pad + i] = params::to_u32(op, what, size)?;
        a_bstrides[pad + i] = params::to_u32(op, what, sa)?;
        b_bstrides[pad + i] = params::to_u32(op, what, sb)?;
    }
    let r = a.rank();
    Ok(MatmulParams {
        m: params::to_u32(op, "rows", m)?,
        n: params::to_u32(op, "columns", n)?,
        k: params::to_u32(op, "inner size", k)?,
        tiles_n: params::to_u32(op, "tile count", tiles_n)?,
        tiles_mn: params::to_u32(op, "tile count", tiles_mn)?,
        groups,
        a_offset: params::to_u32(op, "offset", a.offset())?,
        b_offset: params::to_u32(op, "offset", b.offset())?,
        a_rs: params::to_u32(op, "stride", a.strides()[r - 2])?,
        a_cs: params::to_u32(op, "stride", a.strides()[r - 1])?,
        b_rs: params::to_u32(op, "stride", b.strides()[r - 2])?,
        b_cs: params::to_u32(op, "stride", b.strides()[r - 1])?,
        batch,
        a_bstrides,
        b_bstrides,
        // Unsplit chunks are K itself (>= 1 here: K = 0 never dispatches).
        k_chunk: params::to_u32(op, "inner size", k_chunk.min(k))?,
        batches: params::to_u32(op, "batch count", count)?,
        bias_offset: 0,
        bias_stride: 0,
    })
}

/// Batch dims as `(size, a_stride, b_stride)`, row-major like the output,
/// with size-1 dims dropped and neighbours merged where both operands step
/// through them as one dim. The output is contiguous, so merging never
/// changes the order of the batch matrices. At most `KERNEL_BATCH_DIMS`.
fn simplify_batch(
    batch: &[usize],
    a_strides: &[usize],
    b_strides: &[usize],
) -> Vec<(usize, usize, usize)> {
    let mut dims: Vec<(usize, usize, usize)> = Vec::with_capacity(batch.len());
    for ((&size, &sa), &sb) in batch.iter().zip(a_strides).zip(b_strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(outer) if outer.1 == sa * size && outer.2 == sb * size => {
                *outer = (outer.0 * size, sa, sb);
            }
            _ => dims.push((size, sa, sb)),
        }
    }
    dims
}

#[cfg(test)]
mod tests {
    use super::simplify_batch;

    #[test]
    fn batch_dims_merge_when_both_operands_allow() {
        // Contiguous a, broadcast b: both merge (b's strides are all 0).
        assert_eq!(
            simplify_batch(&[2, 3, 4], &[12 * 5, 4 * 5, 5], &[0, 0, 0]),
            vec![(24, 5, 0)]
        );
        // Alternating broadcast cannot merge; size-1 dims vanish.
        assert_eq!(
            simplify_batch(&[2, 1, 3], &[6, 6, 0], &[0, 0, 4]),
            vec![(2, 6, 0), (3, 0, 4)]
        );
        assert!(simplify_batch(&[1, 1], &[0, 0], &[0, 0]).is_empty());
    }
}
