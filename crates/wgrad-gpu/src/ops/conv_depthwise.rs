//! Depthwise convolutions (one input channel per group, `groups = C_in`, as
//! MobileNet's and ConvNeXt's): the forward, input gradient and weight
//! gradient by direct kernels (`kernels/conv/depthwise_*.wgsl`). The
//! implicit GEMM runs one product per group whose rows are that group's
//! output channels, so with one or a few of them a 64 x 64 tile leaves
//! 63/64 of its rows idle; these kernels do only the taps' work.
//!
//! | primitive | threads | sum |
//! |---|---|---|
//! | forward | a workgroup per 4-16 output rows of a plane, a thread per 4 (or 1) neighbouring outputs of every 64 | its outputs' windows' taps, row-major |
//! | input gradient | the same over input rows | its output channels' taps that reach each input |
//! | weight gradient | a workgroup per (output channel, chunk of output rows) | its pixels, 256 strided partial sums per tap, a fixed tree; the chunks added in order by `sum_splits` |
//!
//! Taken where a group has one input channel and at most
//! [`MAX_MULTIPLIER`] output channels (above that the GEMM's rows fill);
//! the weight gradient also needs at most [`MAX_TAPS`] taps (7 x 7).

use wgrad_core::checks::conv::Conv2dGeometry;
use wgrad_core::{DType, Result};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{self, DepthwiseParams, SumSplitsParams};

use super::conv::strided;

/// Most output channels per input channel on this path.
const MAX_MULTIPLIER: usize = 8;
/// Most taps of the weight-gradient kernel (its per-thread sums).
const MAX_TAPS: usize = 49;

/// Whether `g` runs on the depthwise kernels (forward and input gradient).
pub(super) fn depthwise(g: &Conv2dGeometry) -> bool {
    g.in_per_group() == 1 && g.out_per_group() <= MAX_MULTIPLIER && g.args.groups > 1
}

/// Whether the weight gradient of `g` does too.
pub(super) fn depthwise_weight_grad(g: &Conv2dGeometry) -> bool {
    depthwise(g) && g.kernel_hw[0] * g.kernel_hw[1] <= MAX_TAPS
}

/// Workgroups that keep a large GPU busy, which the weight gradient's
/// row chunks aim for.
const FILL_GROUPS: usize = 1024;
/// Output (input, for the input gradient) rows per workgroup: the kernels'
/// `ROWS` (`common/depthwise_params.wgsl`).
const ROWS: usize = 4;
/// Most taps the weight gradient sums per thread; larger kernels get a
/// workgroup per tap row (H100, batch 32, 256 channels 56 x 56: a 3 x 3
/// split that way took 394 us against 202 us whole).
const SPLIT_TAPS: usize = 9;

/// The immediates of `g` (strided fields, `total` and `chunk` left 0)
/// and its pipeline constants (kernel size, stride, dilation).
fn params(
    op: &'static str,
    g: &Conv2dGeometry,
) -> Result<(DepthwiseParams, [(&'static str, f64); 6])> {
    let u = |what: &str, v: usize| params::to_u32(op, what, v);
    let a = &g.args;
    // The kernels' signed window origins.
    for axis in 0..2 {
        let reach = (g.output_hw[axis] * a.stride[axis]).max(g.input_hw[axis] + a.padding[axis][0])
            + a.dilation[axis] * g.kernel_hw[axis];
        u("spatial extent", reach.saturating_mul(2))?;
    }
    u(
        "weight size",
        g.out_channels * g.kernel_hw[0] * g.kernel_hw[1],
    )?;
    let constants = [
        ("KH", f64::from(u("kernel size", g.kernel_hw[0])?)),
        ("KW", f64::from(u("kernel size", g.kernel_hw[1])?)),
        ("SH", f64::from(u("stride", a.stride[0])?)),
        ("SW", f64::from(u("stride", a.stride[1])?)),
        ("DH", f64::from(u("dilation", a.dilation[0])?)),
        ("DW", f64::from(u("dilation", a.dilation[1])?)),
    ];
    let imm = DepthwiseParams {
        batch: u("batch", g.batch)?,
        channels: u("channels", g.in_channels)?,
        mult: u("channels", g.out_per_group())?,
        in_h: u("input height", g.input_hw[0])?,
        in_w: u("input width", g.input_hw[1])?,
        out_h: u("output height", g.output_hw[0])?,
        out_w: u("output width", g.output_hw[1])?,
        pad_top: u("padding", a.padding[0][0])?,
        pad_left: u("padding", a.padding[1][0])?,
        total: 0,
        chunk: 0,
        x_offset: 0,
        dy_offset: 0,
        x_strides: [0; 4],
        dy_strides: [0; 4],
    };
    Ok((imm, constants))
}

/// The forward of `g` into `out` (contiguous, non-empty), plus `bias`
/// (dense `[C_out]`) and ReLU.
pub(super) fn forward(
    op: &'static str,
    g: &Conv2dGeometry,
    x: &GpuTensor,
    weight: &GpuTensor,
    bias: Option<&GpuTensor>,
    relu: bool,
    out: &GpuTensor,
) -> Result<()> {
    let weight = weight.contiguous()?;
    let (mut imm, shape) = params(op, g)?;
    params::to_u32(op, "output size", out.numel())?;
    // Neighbouring outputs per thread: 4 for kernels up to 3 wide (H100,
    // 256 channels 56 x 56 3 x 3: 234 -> 144 us), 1 past that (ConvNeXt's
    // 7 x 7: 277 us against 293 with 4).
    let out_per = if g.kernel_hw[1] <= 3 { 4 } else { 1 };
    let rows = 4 * out_per;
    let groups = g.batch * g.out_channels * g.output_hw[0].div_ceil(rows);
    imm.total = params::to_u32(op, "workgroups", groups)?;
    (imm.x_offset, imm.x_strides) = strided(op, x)?;
    let flag = |on: bool| if on { 1.0 } else { 0.0 };
    let mut constants = shape.to_vec();
    constants.extend([
        ("HAS_BIAS", flag(bias.is_some())),
        ("ACT_RELU", flag(relu)),
        ("OUT_PER", out_per as f64),
    ]);
    // Without a bias its binding takes the weight (never read).
    let bias_buffer = bias.map_or(&weight.buffer, |b| &b.buffer);
    x.kernels().dispatch_groups(
        &families::conv::DEPTHWISE_FORWARD,
        &constants,
        &[&x.buffer, &weight.buffer, &out.buffer, bias_buffer],
        &imm,
        groups as u64,
    )
}

/// The input gradient of `g` (contiguous `g.input_shape()`, non-empty).
pub(super) fn input_grad(
    op: &'static str,
    g: &Conv2dGeometry,
    grad_out: &GpuTensor,
    weight: &GpuTensor,
) -> Result<GpuTensor> {
    let dx = grad_out.empty_like_device(op, &g.input_shape(), DType::F32)?;
    let weight = weight.contiguous()?;
    let (mut imm, constants) = params(op, g)?;
    params::to_u32(op, "input size", dx.numel())?;
    let groups = g.batch * g.in_channels * g.input_hw[0].div_ceil(ROWS);
    imm.total = params::to_u32(op, "workgroups", groups)?;
    (imm.dy_offset, imm.dy_strides) = strided(op, grad_out)?;
    grad_out.kernels().dispatch_groups(
        &families::conv::DEPTHWISE_INPUT_GRAD,
        &constants,
        &[&grad_out.buffer, &weight.buffer, &dx.buffer],
        &imm,
        groups as u64,
    )?;
    Ok(dx)
}

/// The weight gradient of `g` (contiguous `g.weight_shape()`): one
/// workgroup per (output channel, chunk of output rows), enough chunks
/// to fill the GPU, then the chunks' partial sums added in order.
pub(super) fn weight_grad(
    op: &'static str,
    g: &Conv2dGeometry,
    input: &GpuTensor,
    grad_out: &GpuTensor,
) -> Result<GpuTensor> {
    let dw = input.empty_like_device(op, &g.weight_shape(), DType::F32)?;
    if dw.numel() == 0 {
        return Ok(dw);
    }
    let rows = g.batch * g.output_hw[0];
    // Chunks of whole rounds of ROWS output rows; one chunk of nothing for
    // no rows.
    let rounds = rows.div_ceil(ROWS).max(1);
    let wanted = FILL_GROUPS.div_ceil(g.out_channels).clamp(1, rounds);
    let chunk = rounds.div_ceil(wanted) * ROWS;
    let chunks = rows.div_ceil(chunk).max(1);
    let (mut imm, shape) = params(op, g)?;
    // One tap row per workgroup past 3 x 3 (H100, ConvNeXt's 7 x 7: all 49
    // sums in one thread took 1.52 ms for batch 32, 96 channels, 56 x 56).
    let split_rows = g.kernel_hw[0] * g.kernel_hw[1] > SPLIT_TAPS;
    let bands = if split_rows { g.kernel_hw[0] } else { 1 };
    let mut constants = shape.to_vec();
    constants.push(("SPLIT_ROWS", if split_rows { 1.0 } else { 0.0 }));
    imm.total = params::to_u32(op, "workgroups", g.out_channels * chunks * bands)?;
    imm.chunk = params::to_u32(op, "output rows", chunk)?;
    params::to_u32(op, "output size", rows * g.output_hw[1])?;
    params::to_u32(op, "partial sums size", chunks * dw.numel())?;
    (imm.x_offset, imm.x_strides) = strided(op, input)?;
    (imm.dy_offset, imm.dy_strides) = strided(op, grad_out)?;
    let target = if chunks > 1 {
        input.empty_like_device(op, &[chunks * dw.numel()], DType::F32)?
    } else {
        dw.clone()
    };
    input.kernels().dispatch_groups(
        &families::conv::DEPTHWISE_WEIGHT_GRAD,
        &constants,
        &[&input.buffer, &grad_out.buffer, &target.buffer],
        &imm,
        u64::from(imm.total),
    )?;
    if chunks > 1 {
        // No bias (HAS_BIAS off): its binding takes the partial sums.
        let sum = SumSplitsParams {
            numel: params::to_u32(op, "weight size", dw.numel())?,
            splits: params::to_u32(op, "split count", chunks)?,
            n: 1,
            bias_offset: 0,
            bias_stride: 0,
        };
        crate::ops::matmul::sum_splits::dispatch(input, &[], [&target, &dw, &target], &sum)?;
    }
    Ok(dw)
}
