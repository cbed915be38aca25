//! Matrix products with PyTorch `matmul` semantics.
//!
//! One dispatch of the register-tiled kernel `kernels/matmul/matmul.wgsl`
//! per product. The kernel reads both operands through their row/column
//! strides and per-batch strides, so transposed (`matmul_t`), narrowed and
//! broadcast operands are never copied. The output is always contiguous.
//!
//! Batch dims: the broadcast batch dims are first simplified (size-1 dims
//! dropped, neighbours merged where both operands step through them as one),
//! then passed as up to 4 dims with per-operand strides (0 where broadcast).
//! With `MAX_RANK` = 6 an operand has at most 4 batch dims, so every product
//! fits the immediate block and no operand ever needs a contiguous copy.

use wgrad_core::{DType, Error, Layout, MAX_RANK, Result, shape};
use wgrad_kernels::families;

use crate::{GpuTensor, params};

/// Batch dims the kernel's immediate block carries.
const KERNEL_BATCH_DIMS: usize = 4;
// Every product's batch dims must fit the kernel (see the module docs).
const _: () = assert!(MAX_RANK - 2 <= KERNEL_BATCH_DIMS);

/// Output tile edge of the kernel (rows and columns per workgroup).
const TILE: usize = 64;

impl GpuTensor {
    /// `torch.matmul`: 1-D operands are promoted to matrices (`[k]` ->
    /// `[1, k]` on the left, `[k, 1]` on the right) and the added dim is
    /// removed from the result; leading (batch) dims broadcast. Both f32.
    pub fn matmul(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.matmul_named(other, "matmul")
    }

    /// `matmul` of `self` and `other` after swapping the last two dims of
    /// `self` (if `trans_a`) and/or `other` (if `trans_b`). The swap only
    /// changes strides; nothing is copied. Transposed operands need at least
    /// 2 dims.
    pub fn matmul_t(&self, other: &GpuTensor, trans_a: bool, trans_b: bool) -> Result<GpuTensor> {
        const OP: &str = "matmul_t";
        let swap = |t: &GpuTensor, on: bool| -> Result<GpuTensor> {
            if !on {
                return Ok(t.clone());
            }
            if t.rank() < 2 {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "cannot transpose an operand of shape {:?}: it needs at least 2 dims",
                        t.shape()
                    ),
                ));
            }
            t.transpose(-1, -2)
        };
        swap(self, trans_a)?.matmul_named(&swap(other, trans_b)?, OP)
    }

    fn matmul_named(&self, other: &GpuTensor, op: &'static str) -> Result<GpuTensor> {
        self.same_device(op, other)?;
        self.expect_dtype(op, DType::F32)?;
        other.expect_dtype(op, DType::F32)?;
        let mismatch = || Error::ShapeMismatch {
            op,
            lhs: self.shape().to_vec(),
            rhs: other.shape().to_vec(),
        };
        if self.rank() == 0 || other.rank() == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "both operands need at least 1 dim, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let a = if self.rank() == 1 {
            self.layout.unsqueeze(0)?
        } else {
            self.layout.clone()
        };
        let b = if other.rank() == 1 {
            other.layout.unsqueeze(-1)?
        } else {
            other.layout.clone()
        };
        let (ra, rb) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        if k != k2 {
            return Err(mismatch());
        }
        let batch = shape::broadcast_shapes(op, &a.shape()[..ra - 2], &b.shape()[..rb - 2])
            .map_err(|_| mismatch())?;
        let mut out_shape = batch.clone();
        if self.rank() > 1 {
            out_shape.push(m);
        }
        if other.rank() > 1 {
            out_shape.push(n);
        }
        let out = self.empty_like_device(op, &out_shape, DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        if k == 0 {
            // An empty sum: all zeros, and nothing of A or B to read.
            out.fill_words(0.0f32.to_bits())?;
            return Ok(out);
        }

        let with = |r: usize, c: usize| {
            let mut dims = batch.clone();
            dims.extend([r, c]);
            dims
        };
        let a = a.expand(&with(m, k))?;
        let b = b.expand(&with(k, n))?;
        let words = immediates(op, &a, &b, &batch, m, n, k)?;
        // Walk each staged slice along the operand's unit-stride index so
        // neighbouring threads read neighbouring addresses.
        let r = a.rank();
        let constants = [
            (
                "A_M_FAST",
                flag(a.strides()[r - 2] == 1 && a.strides()[r - 1] != 1),
            ),
            (
                "B_K_FAST",
                flag(b.strides()[r - 2] == 1 && b.strides()[r - 1] != 1),
            ),
        ];
        self.kernels().dispatch_groups(
            &families::matmul::MATMUL,
            &constants,
            &[&self.buffer, &other.buffer, &out.buffer],
            params::bytes(&words),
            u64::from(words[5]),
        )?;
        Ok(out)
    }
}

/// An override constant's value for a 0/1 flag.
fn flag(on: bool) -> f64 {
    if on { 1.0 } else { 0.0 }
}

/// The kernel's immediate block for `a` (`batch + [m, k]`) times `b`
/// (`batch + [k, n]`), both already expanded to the broadcast batch.
fn immediates(
    op: &'static str,
    a: &Layout,
    b: &Layout,
    batch: &[usize],
    m: usize,
    n: usize,
    k: usize,
) -> Result<Vec<u32>> {
    // Every index the kernel forms stays below the operands' span ends and
    // the output's element count; all must fit its 32-bit arithmetic.
    params::to_u32(op, "operand extent", a.span_end())?;
    params::to_u32(op, "operand extent", b.span_end())?;
    let count: usize = batch.iter().product();
    params::to_u32(op, "output element count", count * m * n)?;

    let dims = simplify_batch(
        batch,
        &a.strides()[..batch.len()],
        &b.strides()[..batch.len()],
    );
    let tiles_n = n.div_ceil(TILE);
    let tiles_mn = tiles_n * m.div_ceil(TILE);
    let groups = params::to_u32(op, "workgroup count", tiles_mn * count)?;

    let r = a.rank();
    let mut words = vec![
        params::to_u32(op, "rows", m)?,
        params::to_u32(op, "columns", n)?,
        params::to_u32(op, "inner size", k)?,
        params::to_u32(op, "tile count", tiles_n)?,
        params::to_u32(op, "tile count", tiles_mn)?,
        groups,
        params::to_u32(op, "offset", a.offset())?,
        params::to_u32(op, "offset", b.offset())?,
        params::to_u32(op, "stride", a.strides()[r - 2])?,
        params::to_u32(op, "stride", a.strides()[r - 1])?,
        params::to_u32(op, "stride", b.strides()[r - 2])?,
        params::to_u32(op, "stride", b.strides()[r - 1])?,
    ];
    // Right-aligned: unused leading dims are size 1 with stride 0.
    let pad = KERNEL_BATCH_DIMS - dims.len();
    let column = |pick: fn(&(usize, usize, usize)) -> usize, fill: usize| -> Result<Vec<u32>> {
        std::iter::repeat_n(fill, pad)
            .chain(dims.iter().map(pick))
            .map(|v| params::to_u32(op, "batch size or stride", v))
            .collect()
    };
    words.extend(column(|d| d.0, 1)?);
    words.extend(column(|d| d.1, 0)?);
    words.extend(column(|d| d.2, 0)?);
    Ok(words)
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
