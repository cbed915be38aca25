//! Matrix products with PyTorch `matmul` semantics.
//!
//! Each 2-D product goes through ndarray's `general_mat_mul`
//! (matrixmultiply's blocked, vectorised GEMM, with its AVX-512 kernel
//! enabled in Cargo.toml), which takes arbitrary strides, so transposed and
//! broadcast operands are never copied. Large products are split across
//! cores here (see [`gemm`]).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewD, ArrayViewMut2, Axis, Ix2};
use wgrad_core::checks::matmul::MatmulShape;
use wgrad_core::shape::check_rank;
use wgrad_core::{DType, Result, checks};

use crate::alloc::{self, During, checked_len, try_zeroed};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype, internal};

const OP: &str = "matmul";

impl CpuTensor {
    /// `torch.matmul`: 1-D operands are promoted to matrices (`[k]` ->
    /// `[1, k]` on the left, `[k, 1]` on the right) and the added dim is
    /// removed from the result; leading (batch) dims broadcast.
    pub fn matmul(&self, other: &CpuTensor) -> Result<Self> {
        self.matmul_named(other, OP)
    }

    /// `matmul` of `a` and `b` after swapping the last two dims of `a` (if
    /// `trans_a`) and/or `b` (if `trans_b`); the swap is a free view.
    /// Transposed operands need at least 2 dims.
    pub fn matmul_t(&self, other: &CpuTensor, trans_a: bool, trans_b: bool) -> Result<Self> {
        const OP_T: &str = "matmul_t";
        let a = self.with_layout(checks::matmul::operand_layout(OP_T, &self.layout, trans_a)?);
        let b = other.with_layout(checks::matmul::operand_layout(
            OP_T,
            &other.layout,
            trans_b,
        )?);
        a.matmul_named(&b, OP_T)
    }

    fn matmul_named(&self, other: &CpuTensor, op: &'static str) -> Result<Self> {
        expect_dtype(op, self, DType::F32)?;
        expect_dtype(op, other, DType::F32)?;
        let shapes = checks::matmul::matmul(op, self.shape(), other.shape())?;
        let a = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if other.rank() == 1 {
            other.unsqueeze(-1)?
        } else {
            other.clone()
        };
        check_rank(op, &shapes.out)?;
        let len = checked_len(op, &shapes.batched(shapes.m, shapes.n))?;
        let mut data = output(op, len, shapes.k)?;
        products(&a, &b, &shapes, &mut data, 0.0)?;
        CpuTensor::from_vec(data, &shapes.out)
    }

    /// `F.linear(x, weight, bias)`: `self` (`[..., in]`) times `weight^T`
    /// (`weight` `[out, in]`, read through swapped strides) plus `bias`
    /// (`[out]`, or one value) on every row; a 1-D `self` gives `[out]`.
    /// All F32; shapes as `wgrad_core::checks::matmul::linear`.
    ///
    /// The bias is copied into the output rows first and the GEMM
    /// accumulates onto them (beta = 1), so no second pass reads the
    /// output. matrixmultiply adds each K block's product to what the
    /// output holds: for K within one block (256 for f32) the result is
    /// the finished dot product plus the bias, rounded once, bit-identical
    /// to `matmul` then `add`; for longer K the bias joins the sum before
    /// the later blocks, so the two agree to f32 rounding, not bit for bit.
    pub fn linear(&self, weight: &CpuTensor, bias: Option<&CpuTensor>) -> Result<Self> {
        const OP: &str = "linear";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, weight, DType::F32)?;
        if let Some(b) = bias {
            expect_dtype(OP, b, DType::F32)?;
        }
        let shape =
            checks::matmul::linear(OP, self.shape(), weight.shape(), bias.map(|b| b.shape()))?;
        let a = self.with_layout(checks::matmul::linear_input(&self.layout)?);
        let b = weight.with_layout(weight.layout.transpose(-1, -2)?);
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        check_rank(OP, &shapes.out)?;
        let len = checked_len(OP, &shapes.out)?;
        let (mut data, beta) = match bias {
            Some(bias) => {
                // Every row is overwritten with the bias, over threads when large.
                let row = bias.expand(&[shape.n])?.to_vec_for::<f32>(OP)?;
                let mut data = alloc::for_overwrite::<f32>(len).during(OP)?;
                if !row.is_empty() {
                    parallel::for_each_row(&mut data, row.len(), len, |_, out_row| {
                        out_row.copy_from_slice(&row)
                    });
                }
                (data, 1.0)
            }
            None => (output(OP, len, shapes.k)?, 0.0),
        };
        products(&a, &b, &shapes, &mut data, beta)?;
        CpuTensor::from_vec(data, &shape.out)
    }
}

/// The buffer of a `len`-element product over `k` terms with beta = 0:
/// the GEMM writes every element without reading it (matrixmultiply and
/// ndarray's fallback both initialise C when beta is zero), so a recycled
/// buffer needs no zero fill; an empty sum (K = 0) is the zeros it leaves.
fn output(op: &'static str, len: usize, k: usize) -> Result<Vec<f32>> {
    if k == 0 {
        try_zeroed(op, len)
    } else {
        alloc::for_overwrite(len).during(op)
    }
}

/// `c = a @ b + beta * c` for every matrix of the broadcast batch of
/// `shapes`, `c` being the contiguous `[batch.., m, n]` result in `data`
/// (`a`, `b` already promoted to matrices; beta 0 ignores what `data`
/// holds). With K = 0 the product is empty and `data` stays as it is.
fn products(
    a: &CpuTensor,
    b: &CpuTensor,
    shapes: &MatmulShape,
    data: &mut [f32],
    beta: f32,
) -> Result<()> {
    let (m, k, n) = (shapes.m, shapes.k, shapes.n);
    if k == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let a = a.expand(&shapes.batched(m, k))?;
    let b = b.expand(&shapes.batched(k, n))?;
    let (av, bv) = (a.as_f32()?, b.as_f32()?);
    for (i, c) in data.chunks_exact_mut(m * n).enumerate() {
        let coords = unravel(i, &shapes.batch);
        let a2 = matrix(&av, &coords)?;
        let b2 = matrix(&bv, &coords)?;
        let c = ArrayViewMut2::from_shape((m, n), c).map_err(internal)?;
        gemm(a2, b2, c, beta);
    }
    Ok(())
}

/// Products with fewer multiply-adds than this run on one thread: below
/// it, handing half to the other core costs more than it saves.
const PAR_MIN_FMAS: usize = 1 << 20;

/// The narrowest slice of rows or columns worth a thread of its own (a
/// multiple of matrixmultiply's 16-wide AVX-512 micro-tile).
const MIN_SPLIT: usize = 32;

/// `c = a @ b + beta * c` for one 2-D product. matrixmultiply takes any
/// strides (transposed operands are read in place) and vectorises with
/// AVX-512 or AVX2 as the CPU allows; large products are cut into one block
/// of rows or columns per thread (see [`gemm_parts`]).
fn gemm(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c: ArrayViewMut2<'_, f32>, beta: f32) {
    let (m, k) = a.dim();
    let n = b.dim().1;
    let parts = if m * n * k < PAR_MIN_FMAS {
        1
    } else {
        rayon::current_num_threads()
    };
    gemm_parts(a, b, c, parts, beta);
}

/// `c = a @ b + beta * c` in `parts` pieces run in parallel: the longer of `m` and `n`
/// is cut in two (at a multiple of 16, so both sides keep whole micro-tiles)
/// in proportion to the parts each side gets, recursively. Each piece is an
/// independent GEMM over disjoint output, so the result does not depend on
/// the split.
fn gemm_parts(
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    mut c: ArrayViewMut2<'_, f32>,
    parts: usize,
    beta: f32,
) {
    let (m, n) = (a.dim().0, b.dim().1);
    if parts < 2 || m.max(n) < 2 * MIN_SPLIT {
        general_mat_mul(1.0, &a, &b, beta, &mut c);
        return;
    }
    let left = parts / 2;
    let cut = |len: usize| ((len * left / parts).div_ceil(16) * 16).clamp(16, len - 16);
    // Rows of the output come from rows of `a`, columns from columns of `b`.
    let ((a0, b0, c0), (a1, b1, c1)) = if m >= n {
        let (a0, a1) = a.split_at(Axis(0), cut(m));
        let (c0, c1) = c.split_at(Axis(0), cut(m));
        ((a0, b, c0), (a1, b, c1))
    } else {
        let (b0, b1) = b.split_at(Axis(1), cut(n));
        let (c0, c1) = c.split_at(Axis(1), cut(n));
        ((a, b0, c0), (a, b1, c1))
    };
    rayon::join(
        || gemm_parts(a0, b0, c0, left, beta),
        || gemm_parts(a1, b1, c1, parts - left, beta),
    );
    parallel::keep_warm();
}

/// Row-major multi-index of flat position `i` within `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut coords = vec![0; shape.len()];
    for (c, &d) in coords.iter_mut().zip(shape).rev() {
        *c = i % d;
        i /= d;
    }
    coords
}

/// The 2-D matrix at batch position `coords` of a `batch + [r, c]` view.
fn matrix<'a>(view: &ArrayViewD<'a, f32>, coords: &[usize]) -> Result<ArrayView2<'a, f32>> {
    let mut v = view.clone();
    for &c in coords {
        v = v.index_axis_move(Axis(0), c);
    }
    v.into_dimensionality::<Ix2>().map_err(internal)
}
