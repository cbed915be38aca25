//! Elementwise unary math (`kernels/elementwise/unary.wgsl`), and the dim
//! coalescing the other elementwise ops share.

use wgrad_core::{DType, Layout, Result, UnaryOp};
use wgrad_kernels::{KernelSpec, families};

use crate::GpuTensor;
use crate::ops::cast::code;
use crate::params::UnaryParams;

/// Merges dims so that elementwise kernels walk as few dims as possible.
///
/// `layouts` are the operands' views, all already broadcast to `shape`.
/// Size-1 dims are dropped, and a dim is folded into the one before it when
/// every operand steps over it contiguously (`stride[d-1] == stride[d] *
/// shape[d]`). A fully contiguous operand set becomes rank 1 (rank 0 for one
/// element), which the kernels index without any integer division; the
/// row-major element order is unchanged, so the contiguous output is too.
pub(crate) fn coalesce(
    op: &'static str,
    shape: &[usize],
    layouts: &[&Layout],
) -> Result<(Vec<usize>, Vec<Layout>)> {
    let mut dims: Vec<(usize, Vec<usize>)> = Vec::with_capacity(shape.len());
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let strides: Vec<usize> = layouts.iter().map(|l| l.strides()[d]).collect();
        if let Some((prev_size, prev_strides)) = dims.last_mut()
            && prev_strides
                .iter()
                .zip(&strides)
                .all(|(&outer, &inner)| outer == inner * size)
        {
            *prev_size *= size;
            *prev_strides = strides;
            continue;
        }
        dims.push((size, strides));
    }
    let merged: Vec<usize> = dims.iter().map(|(size, _)| *size).collect();
    let views = layouts
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let strides = dims.iter().map(|(_, s)| s[k]).collect();
            Layout::from_parts(op, merged.clone(), strides, l.offset())
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((merged, views))
}

/// The kernel and thread count of an elementwise op over coalesced views
/// (see [`coalesce`]) of `numel` outputs: `dense` (a `*_VEC4` kernel, four
/// elements per 16-byte access) when every view is a dense run of the same
/// elements as the output, starting at a multiple of 4 elements, and
/// `numel` is a multiple of 4; else `strided`, whose threads take
/// `strided_per_thread` elements each.
pub(crate) fn dense_or_strided(
    dense: &'static KernelSpec,
    (strided, strided_per_thread): (&'static KernelSpec, u64),
    shape: &[usize],
    views: &[Layout],
) -> (&'static KernelSpec, u64) {
    let numel: usize = shape.iter().product();
    let in_fours = matches!(shape, [_])
        && numel.is_multiple_of(4)
        && views
            .iter()
            .all(|v| v.strides() == [1] && v.offset().is_multiple_of(4));
    if in_fours {
        (
            dense,
            (numel as u64 / 4).div_ceil(families::elementwise::VEC4_PER_THREAD),
        )
    } else {
        (strided, (numel as u64).div_ceil(strided_per_thread))
    }
}

impl GpuTensor {
    /// Applies `op` to every element; F32 only. Reads strided views in
    /// place (no copy); the result is contiguous.
    pub fn unary(&self, op: UnaryOp) -> Result<GpuTensor> {
        let name = op.name();
        if self.dtype().is_half() {
            return self.unary_half(op);
        }
        self.expect_dtype(name, DType::F32)?;
        let out = self.empty_like_device(name, self.shape(), DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, self.shape(), &[&self.layout])?;
        let p = UnaryParams::new(name, &shape, &views[0], op.params())?;
        let (spec, threads) = dense_or_strided(
            &families::elementwise::UNARY_VEC4,
            (
                &families::elementwise::UNARY,
                families::elementwise::ELEMENTS_PER_THREAD,
            ),
            &shape,
            &views,
        );
        self.kernels().dispatch_1d(
            spec,
            &[("OP", f64::from(op.code()))],
            &[&self.buffer, &out.buffer],
            &p,
            threads,
        )?;
        Ok(out)
    }

    /// [`unary`](Self::unary) of an F16/BF16 tensor in one pass: the
    /// numbers of widening to F32, `unary` and rounding back (PyTorch's
    /// arithmetic for these dtypes); the output keeps the input's dtype.
    fn unary_half(&self, op: UnaryOp) -> Result<GpuTensor> {
        let name = op.name();
        let out = self.empty_like_device(name, self.shape(), self.dtype())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, self.shape(), &[&self.layout])?;
        let p = UnaryParams::new(name, &shape, &views[0], op.params())?;
        let words = (out.numel() as u64).div_ceil(2);
        self.kernels().dispatch_1d(
            &families::elementwise::UNARY_HALF,
            &[("OP", f64::from(op.code())), ("KIND", code(self.dtype()))],
            &[&self.buffer, &out.buffer],
            &p,
            words.div_ceil(families::elementwise::HALF_WORDS_PER_THREAD),
        )?;
        Ok(out)
    }

    wgrad_core::unary_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_operands_coalesce_to_rank_one() {
        let l = Layout::contiguous(&[2, 3, 4]);
        let (shape, views) = coalesce("t", &[2, 3, 4], &[&l]).unwrap();
        assert_eq!(shape, vec![24]);
        assert_eq!(views[0].strides(), &[1]);
    }

    #[test]
    fn broadcast_and_transposed_dims_stay_apart() {
        let a = Layout::contiguous(&[3, 1]).expand(&[2, 3, 4]).unwrap();
        let b = Layout::contiguous(&[2, 3, 4]);
        let (shape, views) = coalesce("t", &[2, 3, 4], &[&a, &b]).unwrap();
        // a walks (0, 1, 0): only the size-1-free dims with matching steps merge.
        assert_eq!(shape, vec![2, 3, 4]);
        assert_eq!(views[0].strides(), &[0, 1, 0]);
        let t = Layout::contiguous(&[4, 3]).transpose(0, 1).unwrap();
        let (shape, _) = coalesce("t", &[3, 4], &[&t]).unwrap();
        assert_eq!(shape, vec![3, 4]);
    }

    #[test]
    fn size_one_dims_drop_out() {
        let l = Layout::contiguous(&[1, 5, 1]);
        let (shape, views) = coalesce("t", &[1, 5, 1], &[&l]).unwrap();
        assert_eq!(shape, vec![5]);
        assert_eq!(views[0].strides(), &[1]);
        let one = Layout::contiguous(&[1, 1]);
        let (shape, _) = coalesce("t", &[1, 1], &[&one]).unwrap();
        assert!(shape.is_empty());
    }
}
