//! The weight gradient of `conv2d` (`kernels/conv/conv2d_weight_grad*.wgsl`),
//! and with it, from the same pass, the bias gradient: the gathered input
//! gets a virtual column of ones (the kernels' `ONES_COLUMN`), so that
//! column of the product sums `grad_out` over the batch and every pixel,
//! which is what the bias gradient is. K (every output pixel of the batch)
//! is long and the output small, so K is split over enough workgroups to
//! fill the GPU, each split writing its own partial result, and
//! `matmul/sum_splits.wgsl` adds them in order: deterministic, no atomics.

use wgrad_core::checks::conv::Conv2dGeometry;
use wgrad_core::{DType, Result};
use wgrad_kernels::families;

use super::conv::{
    FILL_GROUPS, K_STEP, MAX_SPLITS, MIN_SPLIT_K, check_geometry, check_operand, dispatch,
    gemm_params, pick_tile, strided,
};
use super::conv_depthwise;
use super::conv_winograd::Winograd;
use crate::GpuTensor;
use crate::params::{self, SumSplitsParams};

const WEIGHT_GRAD: &str = "conv2d_weight_grad";

impl GpuTensor {
    /// The weight gradient of [`conv2d`](Self::conv2d): `input` of
    /// `geometry.input_shape()` and `grad_out` of `geometry.output_shape()`
    /// give `geometry.weight_shape()` (contiguous), summed over the batch
    /// and every output pixel (split over workgroups, then added in a fixed
    /// order: deterministic).
    pub fn conv2d_weight_grad(
        input: &GpuTensor,
        grad_out: &GpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<GpuTensor> {
        if let Some(weight) = special_weight_grad(input, grad_out, geometry)? {
            return Ok(weight);
        }
        Self::conv2d_weight_grad_variant(input, grad_out, geometry, 0, 0)
    }

    /// [`conv2d_weight_grad`](Self::conv2d_weight_grad) and the bias
    /// gradient (`grad_out` summed over batch and pixels, `[C_out]`). Where
    /// the ones column fits the last column tile, or the tile column it
    /// adds is cheap, both come from one pass (two dense views of one
    /// buffer); otherwise a sum over `grad_out` gives the bias gradient.
    pub fn conv2d_weight_and_bias_grad(
        input: &GpuTensor,
        grad_out: &GpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<(GpuTensor, GpuTensor)> {
        // As matmul's row sums: the tile column the ones would add (at most
        // 128 wide) against a pass over grad_out.
        const PASS_MACS: usize = 1 << 26;
        let g = geometry;
        if let Some(weight) = special_weight_grad(input, grad_out, g)? {
            return Ok((weight, grad_out.sum(&[0, 2, 3], false)?));
        }
        let taps = g.in_per_group() * g.kernel_hw[0] * g.kernel_hw[1];
        let pixels = g.batch * g.output_hw[0] * g.output_hw[1];
        let column_macs = g.out_channels.saturating_mul(pixels).saturating_mul(128);
        if taps.is_multiple_of(64) && column_macs > PASS_MACS {
            let weight = Self::conv2d_weight_grad(input, grad_out, geometry)?;
            return Ok((weight, grad_out.sum(&[0, 2, 3], false)?));
        }
        Self::conv2d_weight_and_bias_grad_variant(input, grad_out, geometry, 0, 0)
    }

    /// [`conv2d_weight_grad`](Self::conv2d_weight_grad) with the number of
    /// K splits (0: chosen by shape; capped so that every split has at
    /// least one K step) and the output tile (0: by shape, 64 or 128)
    /// forced, for tests and benchmarks.
    #[doc(hidden)]
    pub fn conv2d_weight_grad_variant(
        input: &GpuTensor,
        grad_out: &GpuTensor,
        geometry: &Conv2dGeometry,
        splits: usize,
        tile: usize,
    ) -> Result<GpuTensor> {
        let (flat, _) = weight_grad(input, grad_out, geometry, splits, tile, false)?;
        Ok(flat)
    }

    /// [`conv2d_weight_and_bias_grad`](Self::conv2d_weight_and_bias_grad)
    /// with the split count and tile forced, as
    /// [`conv2d_weight_grad_variant`](Self::conv2d_weight_grad_variant).
    #[doc(hidden)]
    pub fn conv2d_weight_and_bias_grad_variant(
        input: &GpuTensor,
        grad_out: &GpuTensor,
        geometry: &Conv2dGeometry,
        splits: usize,
        tile: usize,
    ) -> Result<(GpuTensor, GpuTensor)> {
        match weight_grad(input, grad_out, geometry, splits, tile, true)? {
            (weight, Some(bias)) => Ok((weight, bias)),
            (_, None) => Err(wgrad_core::Error::Device(
                "conv2d_weight_grad: the bias gradient view went missing".into(),
            )),
        }
    }
}

/// The weight gradient of `g` by a specialised path where one applies
/// (depthwise, `conv_depthwise.rs`) or pays (Winograd, `conv_winograd.rs`),
/// after the checks every path makes; `None` for the implicit GEMM.
fn special_weight_grad(
    input: &GpuTensor,
    grad_out: &GpuTensor,
    g: &Conv2dGeometry,
) -> Result<Option<GpuTensor>> {
    check_geometry(WEIGHT_GRAD, g)?;
    check_operand(WEIGHT_GRAD, input, input, "input", g.input_shape())?;
    check_operand(WEIGHT_GRAD, input, grad_out, "grad_out", g.output_shape())?;
    if conv_depthwise::depthwise_weight_grad(g) {
        return conv_depthwise::weight_grad(WEIGHT_GRAD, g, input, grad_out).map(Some);
    }
    match Winograd::forward(g).filter(|w| w.pays(input)) {
        Some(plan) => plan.weight_grad(WEIGHT_GRAD, input, grad_out).map(Some),
        None => Ok(None),
    }
}

/// The weight gradient and, with `with_bias`, the bias gradient (a view
/// after it in the same buffer; `Some` exactly when `with_bias`).
fn weight_grad(
    input: &GpuTensor,
    grad_out: &GpuTensor,
    geometry: &Conv2dGeometry,
    splits: usize,
    tile: usize,
    with_bias: bool,
) -> Result<(GpuTensor, Option<GpuTensor>)> {
    const OP: &str = WEIGHT_GRAD;
    let g = geometry;
    check_geometry(OP, g)?;
    check_operand(OP, input, input, "input", g.input_shape())?;
    check_operand(OP, input, grad_out, "grad_out", g.output_shape())?;
    let weight_shape = g.weight_shape();
    let weight_numel: usize = weight_shape.iter().product();
    let c_out = g.out_channels;
    let [kh, kw] = g.kernel_hw;
    // The kernels see one more column (the ones) with the bias.
    let (m, n, k) = (
        g.out_per_group(),
        g.in_per_group() * kh * kw + usize::from(with_bias),
        g.batch * g.output_hw[0] * g.output_hw[1],
    );
    let numel = weight_numel + if with_bias { c_out } else { 0 };
    let out = input.empty_like_device(OP, &[numel], DType::F32)?;
    // The weight gradient's and the bias gradient's views of `out`.
    let views = |out: &GpuTensor| -> Result<(GpuTensor, Option<GpuTensor>)> {
        let dims: Vec<isize> = weight_shape.iter().map(|&d| d as isize).collect();
        let weight = out.narrow(0, 0, weight_numel)?.reshape(&dims)?;
        let bias = if with_bias {
            Some(out.narrow(0, weight_numel, c_out)?)
        } else {
            None
        };
        Ok((weight, bias))
    };
    if numel == 0 {
        return views(&out);
    }
    if k == 0 || m == 0 {
        out.fill_words(0.0f32.to_bits())?;
        return views(&out);
    }
    let limits = input.device().limits();
    let max_floats = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
        / 4;
    let max_splits = usize::try_from(max_floats / numel as u64).unwrap_or(usize::MAX);
    // K splits make up for few tiles: no least tile count.
    let tile = pick_tile(OP, input, [g.args.groups, m, n], 0, tile)?;
    let (spec, fill) = if tile == 128 {
        (&families::conv::CONV2D_WEIGHT_GRAD_128, FILL_GROUPS / 2)
    } else {
        (&families::conv::CONV2D_WEIGHT_GRAD, FILL_GROUPS)
    };
    let tiles = g.args.groups * m.div_ceil(tile) * n.div_ceil(tile);
    let splits = if splits != 0 {
        splits
    } else if tiles < fill {
        fill.div_ceil(tiles)
            .min(k / MIN_SPLIT_K)
            .min(MAX_SPLITS)
            .min(max_splits)
            .max(1)
    } else {
        1
    };
    let k_chunk = k.div_ceil(splits).next_multiple_of(K_STEP);
    // Recount: rounding the chunk up may leave fewer (never empty) splits.
    let splits = k.div_ceil(k_chunk);
    params::to_u32(OP, "partial sums size", splits * numel)?;
    let mut imm = gemm_params(OP, g, [m, n, k], k_chunk, splits, tile)?;
    (imm.x_offset, imm.x_strides) = strided(OP, input)?;
    (imm.dy_offset, imm.dy_strides) = strided(OP, grad_out)?;
    let part = if splits > 1 {
        Some(input.empty_like_device(OP, &[splits * numel], DType::F32)?)
    } else {
        None
    };
    let target = part.as_ref().unwrap_or(&out);
    let constants = [("ONES_COLUMN", if with_bias { 1.0 } else { 0.0 })];
    dispatch(
        (spec, &constants),
        [input, grad_out, target],
        &imm,
        imm.groups,
    )?;
    if let Some(part) = part {
        // No bias (HAS_BIAS off): its binding takes the partial sums.
        let sum = SumSplitsParams {
            numel: params::to_u32(OP, "output size", numel)?,
            splits: params::to_u32(OP, "split count", splits)?,
            n: 1,
            bias_offset: 0,
            bias_stride: 0,
        };
        crate::ops::matmul::sum_splits::dispatch(input, &[], [&part, &out, &part], &sum)?;
    }
    views(&out)
}
