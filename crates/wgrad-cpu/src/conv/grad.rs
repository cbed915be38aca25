//! The two gradients of a convolution: the input gradient (col =
//! `W_g^T @ grad_out`, then col2im) and the weight gradient (`grad_out @
//! col^T` summed over bands and images).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, s};
use wgrad_core::checks::conv::Conv2dGeometry;
use wgrad_core::{DType, Result, checks};

use super::{Plan, cols, run_items, zeros};
use crate::alloc::{checked_len, try_vec, try_zeroed};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype, internal};

/// Pieces the input gradient is cut into at least (when the channels
/// allow), so that even one image keeps both cores busy.
const MIN_PIECES: usize = 8;

/// Most partial sums of the weight gradient (each the size of the weight).
const MAX_SLABS: usize = 8;

/// Floats all weight-gradient partial sums may take together (64 MiB).
const SLAB_BUDGET: usize = 1 << 24;

/// `grad_out` `[N, C_out, H_out, W_out]` viewed as the `og x ohw` matrix of
/// image `n`, group `g`.
fn out_matrix<'a>(p: &Plan, gy: &'a [f32], n: usize, g: usize) -> Result<ArrayView2<'a, f32>> {
    let len = p.og * p.ohw();
    ArrayView2::from_shape(
        (p.og, p.ohw()),
        &gy[(n * p.o + g * p.og) * p.ohw()..][..len],
    )
    .map_err(internal)
}

impl CpuTensor {
    /// The gradient of a convolution's input given its output gradient
    /// `grad_out` (`geometry.output_shape()`) and `weight`
    /// (`geometry.weight_shape()`): the forward's adjoint, which is also
    /// `conv_transpose2d`. The result has `geometry.input_shape()`; the
    /// stored sizes are used as given (a transposed convolution's
    /// `output_padding` lives in `geometry.input_hw`).
    pub fn conv2d_input_grad(
        grad_out: &CpuTensor,
        weight: &CpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<CpuTensor> {
        const OP: &str = "conv2d_input_grad";
        expect_dtype(OP, grad_out, DType::F32)?;
        expect_dtype(OP, weight, DType::F32)?;
        let p = Plan::new(OP, geometry)?;
        checks::same_shape(OP, grad_out.shape(), &geometry.output_shape())?;
        checks::same_shape(OP, weight.shape(), &geometry.weight_shape())?;
        let shape = geometry.input_shape();
        if p.is_trivial() {
            return zeros(OP, &shape);
        }
        let gy = grad_out.dense::<f32>(OP)?;
        let w = weight.dense::<f32>(OP)?;
        let mut dx = try_zeroed::<f32>(OP, checked_len(OP, &shape)?)?;
        // Items: blocks of `cb` input channels of one image and group; each
        // owns its planes of `dx`, so col2im needs no synchronisation.
        let pieces = p.n * p.groups;
        let cb = if pieces >= MIN_PIECES {
            p.cg
        } else {
            p.cg.div_ceil(MIN_PIECES.div_ceil(pieces)).max(1)
        };
        let mut items = try_vec(OP, pieces * p.cg.div_ceil(cb))?;
        for (ng, planes) in dx.chunks_exact_mut(p.cg * p.hw()).enumerate() {
            for (b, block) in planes.chunks_mut(cb * p.hw()).enumerate() {
                items.push((ng / p.groups, ng % p.groups, b * cb, block));
            }
        }
        let taps = p.kh * p.kw;
        let pointwise = p.is_pointwise();
        let rows = if pointwise { p.oh } else { p.band(cb * taps) };
        let col_len = if pointwise {
            0
        } else {
            cb * taps * rows * p.ow
        };
        run_items(OP, items, col_len, p.fmas(), |(n, g, c0, dx), col| {
            let nc = dx.len() / p.hw();
            let wg = p.weight_matrix(&w, g)?;
            let wt = wg.slice(s![.., c0 * taps..(c0 + nc) * taps]);
            let wt = wt.t();
            let gyg = out_matrix(&p, &gy, n, g)?;
            if pointwise {
                let mut d = ArrayViewMut2::from_shape((nc, p.hw()), dx).map_err(internal)?;
                general_mat_mul(1.0, &wt, &gyg, 0.0, &mut d);
                return Ok(());
            }
            for y0 in (0..p.oh).step_by(rows) {
                let y1 = (y0 + rows).min(p.oh);
                let cols = (y1 - y0) * p.ow;
                let col = &mut col[..nc * taps * cols];
                let mut cm =
                    ArrayViewMut2::from_shape((nc * taps, cols), &mut *col).map_err(internal)?;
                let gband = gyg.slice(s![.., y0 * p.ow..y1 * p.ow]);
                general_mat_mul(1.0, &wt, &gband, 0.0, &mut cm);
                cols::col2im(&p, col, y0, y1, dx);
            }
            Ok(())
        })?;
        CpuTensor::from_vec(dx, &shape)
    }

    /// The gradient of a convolution's weight given its `input`
    /// (`geometry.input_shape()`) and output gradient `grad_out`
    /// (`geometry.output_shape()`); the result has
    /// `geometry.weight_shape()`.
    pub fn conv2d_weight_grad(
        input: &CpuTensor,
        grad_out: &CpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<CpuTensor> {
        const OP: &str = "conv2d_weight_grad";
        expect_dtype(OP, input, DType::F32)?;
        expect_dtype(OP, grad_out, DType::F32)?;
        let p = Plan::new(OP, geometry)?;
        checks::same_shape(OP, input.shape(), &geometry.input_shape())?;
        checks::same_shape(OP, grad_out.shape(), &geometry.output_shape())?;
        let shape = geometry.weight_shape();
        if p.is_trivial() {
            return zeros(OP, &shape);
        }
        let x = input.dense::<f32>(OP)?;
        let gy = grad_out.dense::<f32>(OP)?;
        let pointwise = p.is_pointwise();
        let rows = if pointwise { p.oh } else { p.band(p.k) };
        let bands = p.oh.div_ceil(rows);
        // Units (image, band) in order, cut into `slabs` consecutive runs,
        // each summed into its own partial weight gradient; the partials
        // are then added in order. The cut depends on the shapes only.
        let units = p.n * bands;
        let wlen = p.o * p.k;
        let slabs = if p.fmas() < parallel::PAR_MIN_WORK {
            1
        } else {
            units.min(MAX_SLABS).min((SLAB_BUDGET / wlen).max(1))
        };
        let mut partials = try_zeroed::<f32>(OP, slabs * wlen)?;
        let mut items = try_vec(OP, slabs)?;
        items.extend(partials.chunks_exact_mut(wlen).enumerate());
        let col_len = if pointwise { 0 } else { p.k * rows * p.ow };
        run_items(OP, items, col_len, p.fmas(), |(slab, dw), col| {
            for u in slab * units / slabs..(slab + 1) * units / slabs {
                let (n, y0) = (u / bands, (u % bands) * rows);
                let y1 = (y0 + rows).min(p.oh);
                let cols = (y1 - y0) * p.ow;
                for g in 0..p.groups {
                    let xg = &x[(n * p.c + g * p.cg) * p.hw()..][..p.cg * p.hw()];
                    let gyg = out_matrix(&p, &gy, n, g)?;
                    let gband = gyg.slice(s![.., y0 * p.ow..y1 * p.ow]);
                    let len = p.og * p.k;
                    let mut dwg = ArrayViewMut2::from_shape((p.og, p.k), &mut dw[g * len..][..len])
                        .map_err(internal)?;
                    if pointwise {
                        let xm = ArrayView2::from_shape((p.cg, p.hw()), xg).map_err(internal)?;
                        let xm = xm.slice(s![.., y0 * p.ow..y1 * p.ow]);
                        general_mat_mul(1.0, &gband, &xm.t(), 1.0, &mut dwg);
                    } else {
                        let col = &mut col[..p.k * cols];
                        cols::im2col(&p, xg, y0, y1, col);
                        let cm = ArrayView2::from_shape((p.k, cols), &*col).map_err(internal)?;
                        general_mat_mul(1.0, &gband, &cm.t(), 1.0, &mut dwg);
                    }
                }
            }
            Ok(())
        })?;
        let (first, rest) = partials.split_at_mut(wlen);
        for part in rest.chunks_exact(wlen) {
            for (a, &b) in first.iter_mut().zip(part) {
                *a += b;
            }
        }
        partials.truncate(wlen);
        CpuTensor::from_vec(partials, &shape)
    }
}
