//! 2-D convolutions (NCHW, f32): the forward, input-gradient and
//! weight-gradient primitives of `wgrad_core::checks::conv`, as implicit
//! GEMMs (`kernels/conv/*.wgsl`) per channel group, register-tiled in
//! workgroup memory, the input patches gathered while the tiles load; no
//! im2col buffer. Activations (input, output gradient) are read through
//! their strides, so permuted or narrowed views are never copied; the
//! weight is made contiguous first (a copy only when it is a view).
//! Results are contiguous.
//!
//! | primitive | GEMM rows (M) | columns (N) | inner (K) | dispatches |
//! |---|---|---|---|---|
//! | forward | C_out/g | N * H_out * W_out | kH * kW * C_in/g | 1 |
//! | input gradient | C_in/g | N * H * W / (sh * sw) | (kH * kW / (sh * sw)) * C_out/g | sh * sw |
//! | weight gradient | C_out/g | C_in/g * kH * kW (+ 1 for the bias) | N * H_out * W_out | 1 or 2 |
//!
//! The forward and input gradient use 128 x 128 output tiles when there are
//! enough of them (`pick_tile`), else 64 x 64. The input gradient runs one
//! GEMM per stride phase (input pixels with the same `(h + pad) mod
//! stride`), each over the taps that reach that phase alone. The weight
//! gradient (with the bias gradient from the same pass) is in
//! `conv_weight_grad.rs`; the forward adds the bias in its store.

use wgrad_core::checks::conv::{self, Conv2dArgs, Conv2dGeometry};
use wgrad_core::{DType, Error, Result};
use wgrad_kernels::{KernelSpec, families};

use crate::GpuTensor;
use crate::params::{self, ConvInputGradParams, ConvParams};

use super::conv_depthwise;
use super::conv_phase::Phase;
use super::conv_winograd::Winograd;

/// K step of the 64 x 64 kernels (split chunks are multiples of it).
pub(super) const K_STEP: usize = 16;
/// Workgroup memory of the 128 x 128 kernels (2 operands x 2 buffers x 264 vec4).
const BIG_WORKGROUP_BYTES: u32 = 2 * 2 * 264 * 16;
/// Least workgroups of 128 x 128 tiles for the big forward kernel: fewer
/// leave SMs idle where 64 x 64 tiles would not. H200, batch 32 (`cargo test
/// -p wgrad-gpu --test it -- --ignored conv::bench_conv_throughput`): 196
/// tiles (128 ch 28x28) run at 22.9 TFLOP/s against 20.4 on 64 x 64 tiles,
/// 98 (256 ch 14x14) at 19.5 against 19.0, 52 (512 ch 7x7) at 10.0 against 14.9.
const BIG_FILL_FORWARD: usize = 96;
/// The same for the input gradient: 196 tiles (128 ch 28x28) run at 21.3
/// TFLOP/s against 19.9; 98 (256 ch 14x14) at 17.6 against 18.7.
const BIG_FILL_INPUT_GRAD: usize = 150;
/// Most input channels per group for the input gradient's 32 x 128 tiles.
const NARROW_ROWS: usize = 32;
/// Workgroups that keep a large GPU busy (e.g. 4 per SM on a 132-SM H200).
pub(super) const FILL_GROUPS: usize = 512;
/// Least K per split: shorter chunks spend more on the partial sums than
/// the extra parallelism gains.
pub(super) const MIN_SPLIT_K: usize = 256;
/// Most K splits of a weight gradient: its partial sums are added by one
/// thread per output, so past this the sum's serial chain costs more than
/// the splits gain (H100, MNIST conv1 [32, 9 + 1] over 86528 pixels: 338
/// splits 75 us, 256 splits 62 us).
pub(super) const MAX_SPLITS: usize = 256;

/// An override constant's value for a 0/1 flag.
fn flag(on: bool) -> f64 {
    if on { 1.0 } else { 0.0 }
}

/// The output tile edge (64 or 128) for `groups` GEMMs of `m x n`, or
/// `force` (0: by shape). The 128 x 128 kernels where the device has their
/// workgroup memory, their edge tiles waste at most 25% more than 64 x 64
/// tiles, and there are at least `fill` of them.
pub(super) fn pick_tile(
    op: &'static str,
    t: &GpuTensor,
    [groups, m, n]: [usize; 3],
    fill: usize,
    force: usize,
) -> Result<usize> {
    let big_ok = t.device().limits().max_compute_workgroup_storage_size >= BIG_WORKGROUP_BYTES;
    match force {
        0 => {
            let padded = |e: usize| m.next_multiple_of(e) * n.next_multiple_of(e);
            let tiles = groups * m.div_ceil(128) * n.div_ceil(128);
            let big = big_ok && 4 * padded(128) <= 5 * padded(64) && tiles >= fill;
            Ok(if big { 128 } else { 64 })
        }
        64 => Ok(64),
        128 if big_ok => Ok(128),
        _ => Err(Error::invalid(
            op,
            format!("tile must be 0 (auto), 64 or 128 (with the workgroup memory), got {force}"),
        )),
    }
}

/// Checks a caller-built geometry (the gradient primitives take one).
pub(super) fn check_geometry(op: &'static str, g: &Conv2dGeometry) -> Result<()> {
    let a = &g.args;
    if a.groups == 0
        || !g.in_channels.is_multiple_of(a.groups)
        || !g.out_channels.is_multiple_of(a.groups)
    {
        return Err(Error::invalid(
            op,
            format!(
                "groups ({}) must be positive and divide the input ({}) and output ({}) channels",
                a.groups, g.in_channels, g.out_channels
            ),
        ));
    }
    if a.stride.contains(&0) || a.dilation.contains(&0) || g.kernel_hw.contains(&0) {
        return Err(Error::invalid(
            op,
            format!(
                "stride {:?}, dilation {:?} and kernel size {:?} must be positive",
                a.stride, a.dilation, g.kernel_hw
            ),
        ));
    }
    Ok(())
}

/// Checks that `t` is an f32 tensor of `shape` on `like`'s device.
pub(super) fn check_operand(
    op: &'static str,
    like: &GpuTensor,
    t: &GpuTensor,
    what: &str,
    shape: [usize; 4],
) -> Result<()> {
    like.same_device(op, t)?;
    t.expect_dtype(op, DType::F32)?;
    if t.shape() != shape {
        return Err(Error::invalid(
            op,
            format!(
                "{what} has shape {:?}, the geometry expects {shape:?}",
                t.shape()
            ),
        ));
    }
    Ok(())
}

/// `t`'s offset and 4 strides as u32 (its extent checked too).
pub(super) fn strided(op: &'static str, t: &GpuTensor) -> Result<(u32, [u32; 4])> {
    params::to_u32(op, "operand extent", t.layout.span_end())?;
    let mut strides = [0u32; 4];
    for (s, &v) in strides.iter_mut().zip(t.layout.strides()) {
        *s = params::to_u32(op, "stride", v)?;
    }
    Ok((params::to_u32(op, "offset", t.layout.offset())?, strides))
}

/// The immediates of one primitive of `g` with GEMM sizes `[m, n, k]`, K
/// cut into `splits` chunks of `k_chunk`; the strided operands' fields are
/// filled in by the caller.
pub(super) fn gemm_params(
    op: &'static str,
    g: &Conv2dGeometry,
    [m, n, k]: [usize; 3],
    k_chunk: usize,
    splits: usize,
    tile: usize,
) -> Result<ConvParams> {
    let a = &g.args;
    let u = |what: &str, v: usize| params::to_u32(op, what, v);
    // Every index the kernels form, including tile and K-step overruns and
    // the wrapped spatial coordinates, stays below these.
    u("GEMM size", m.next_multiple_of(tile))?;
    u("GEMM size", n.next_multiple_of(tile))?;
    u("GEMM size", k + 4 * K_STEP)?;
    for axis in 0..2 {
        let span = a.dilation[axis] * g.kernel_hw[axis];
        u(
            "spatial extent",
            (g.input_hw[axis] + a.padding[axis][0] + span)
                .max(g.output_hw[axis] * a.stride[axis] + span),
        )?;
    }
    let tiles_n = n.div_ceil(tile);
    let tiles_mn = tiles_n * m.div_ceil(tile);
    let groups = tiles_mn
        .checked_mul(a.groups * splits)
        .ok_or_else(|| Error::invalid(op, "workgroup count overflows"))?;
    Ok(ConvParams {
        in_h: u("input height", g.input_hw[0])?,
        in_w: u("input width", g.input_hw[1])?,
        out_h: u("output height", g.output_hw[0])?,
        out_w: u("output width", g.output_hw[1])?,
        cin_g: u("channels", g.in_per_group())?,
        cout_g: u("channels", g.out_per_group())?,
        kw: u("kernel size", g.kernel_hw[1])?,
        khkw: u("kernel size", g.kernel_hw[0] * g.kernel_hw[1])?,
        stride_h: u("stride", a.stride[0])?,
        stride_w: u("stride", a.stride[1])?,
        pad_top: u("padding", a.padding[0][0])?,
        pad_left: u("padding", a.padding[1][0])?,
        dil_h: u("dilation", a.dilation[0])?,
        dil_w: u("dilation", a.dilation[1])?,
        m: u("GEMM size", m)?,
        n: u("GEMM size", n)?,
        k: u("GEMM size", k)?,
        k_chunk: u("GEMM size", k_chunk.min(k))?,
        tiles_n: u("tile count", tiles_n)?,
        tiles_mn: u("tile count", tiles_mn)?,
        groups: u("workgroup count", groups)?,
        conv_groups: u("groups", a.groups)?,
        x_offset: 0,
        dy_offset: 0,
        x_strides: [0; 4],
        dy_strides: [0; 4],
    })
}

impl GpuTensor {
    /// `torch.nn.functional.conv2d(self, weight)` without bias: `self`
    /// `[N, C_in, H, W]`, `weight` `[C_out, C_in / groups, kH, kW]`, both
    /// f32; the result `[N, C_out, H_out, W_out]` (contiguous) with
    /// `out[n, o, y, x] = sum_{c, i, j} self[n, g*C_in/groups + c,
    /// y*sh - pad_top + i*dh, x*sw - pad_left + j*dw] * weight[o, c, i, j]`
    /// (g the group of `o`; out-of-range input positions read 0).
    pub fn conv2d(&self, weight: &GpuTensor, args: &Conv2dArgs) -> Result<GpuTensor> {
        self.conv2d_bias_tiled(weight, None, args, 0)
    }

    /// [`conv2d`](Self::conv2d) plus `bias` `[C_out]` (F32) on every output
    /// of its channel, added in the kernel's store (`F.conv2d`'s bias, with
    /// no pass of its own over the output).
    pub fn conv2d_with_bias(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        args: &Conv2dArgs,
    ) -> Result<GpuTensor> {
        self.conv2d_bias_tiled(weight, bias, args, 0)
    }

    /// [`conv2d`](Self::conv2d) with the output tile forced: 0 (by shape),
    /// 64 or 128, for tests and benchmarks.
    #[doc(hidden)]
    pub fn conv2d_tiled(
        &self,
        weight: &GpuTensor,
        args: &Conv2dArgs,
        tile: usize,
    ) -> Result<GpuTensor> {
        self.conv2d_bias_tiled(weight, None, args, tile)
    }

    /// [`conv2d_with_bias`](Self::conv2d_with_bias) with the output tile
    /// forced (see [`conv2d_tiled`](Self::conv2d_tiled)).
    #[doc(hidden)]
    pub fn conv2d_bias_tiled(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        args: &Conv2dArgs,
        tile: usize,
    ) -> Result<GpuTensor> {
        self.conv2d_core(weight, bias, false, args, tile)
    }

    /// `relu(conv2d(self, weight) + bias)` in the convolution's own pass
    /// (the ReLU in the store after the bias), bit-identical to
    /// [`conv2d_with_bias`](Self::conv2d_with_bias) then `unary(Relu)`. A
    /// `Conv2d` followed by a `ReLU` in a `Sequential` runs as this.
    pub fn conv2d_relu(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        args: &Conv2dArgs,
    ) -> Result<GpuTensor> {
        self.conv2d_core(weight, bias, true, args, 0)
    }

    /// [`conv2d_relu`](Self::conv2d_relu) with the output tile forced.
    #[doc(hidden)]
    pub fn conv2d_relu_tiled(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        args: &Conv2dArgs,
        tile: usize,
    ) -> Result<GpuTensor> {
        self.conv2d_core(weight, bias, true, args, tile)
    }

    fn conv2d_core(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        relu: bool,
        args: &Conv2dArgs,
        tile: usize,
    ) -> Result<GpuTensor> {
        const OP: &str = "conv2d";
        self.same_device(OP, weight)?;
        self.expect_dtype(OP, DType::F32)?;
        weight.expect_dtype(OP, DType::F32)?;
        let g = conv::conv2d(OP, self.shape(), weight.shape(), args)?;
        let bias = match bias {
            Some(b) => {
                self.same_device(OP, b)?;
                b.expect_dtype(OP, DType::F32)?;
                conv::bias(OP, b.shape(), g.out_channels)?;
                // The kernel reads bias[channel]: dense from element 0.
                Some(if b.is_contiguous() && b.layout.offset() == 0 {
                    b.clone()
                } else {
                    let dense = b.empty_like_device(OP, b.shape(), DType::F32)?;
                    b.copy_into(&dense)?;
                    dense
                })
            }
            None => None,
        };
        let out = self.empty_like_device(OP, &g.output_shape(), DType::F32)?;
        let [kh, kw] = g.kernel_hw;
        let (m, n, k) = (
            g.out_per_group(),
            g.batch * g.output_hw[0] * g.output_hw[1],
            kh * kw * g.in_per_group(),
        );
        if out.numel() == 0 {
            return Ok(out);
        }
        if k == 0 {
            out.fill_words(0.0f32.to_bits())?;
            let out = match bias {
                Some(b) => out.binary(&b.reshape(&[1, -1, 1, 1])?, wgrad_core::BinaryOp::Add)?,
                None => out,
            };
            return if relu {
                out.unary(wgrad_core::UnaryOp::Relu)
            } else {
                Ok(out)
            };
        }
        if tile == 0 && conv_depthwise::depthwise(&g) {
            conv_depthwise::forward(OP, &g, self, weight, bias.as_ref(), relu, &out)?;
            return Ok(out);
        }
        if tile == 0
            && let Some(plan) = Winograd::forward(&g).filter(|w| w.pays(self))
        {
            return plan.run(OP, self, weight, bias.as_ref(), relu);
        }
        // [C_out, kh, kw, cin_g]: contiguous along K (channel fastest).
        let weight = weight.permute(&[0, 2, 3, 1])?.contiguous()?;
        params::to_u32(OP, "weight size", weight.numel())?;
        params::to_u32(OP, "output size", out.numel())?;
        let tile = pick_tile(OP, self, [g.args.groups, m, n], BIG_FILL_FORWARD, tile)?;
        let (spec, k_step) = if tile == 128 {
            (&families::conv::CONV2D_128, 8)
        } else {
            (&families::conv::CONV2D, K_STEP)
        };
        let mut imm = gemm_params(OP, &g, [m, n, k], k, 1, tile)?;
        (imm.x_offset, imm.x_strides) = strided(OP, self)?;
        let aligned = flag(g.in_per_group().is_multiple_of(k_step));
        let constants = [
            ("ALIGNED", aligned),
            ("HAS_BIAS", flag(bias.is_some())),
            ("ACT_RELU", flag(relu)),
        ];
        // Without a bias its binding takes the weight (never read).
        let bias_buffer = bias.as_ref().unwrap_or(&weight);
        self.kernels().dispatch_groups(
            spec,
            &constants,
            &[
                &self.buffer,
                &weight.buffer,
                &out.buffer,
                &bias_buffer.buffer,
            ],
            &imm,
            u64::from(imm.groups),
        )?;
        Ok(out)
    }

    /// The input gradient of [`conv2d`](Self::conv2d) (its adjoint in the
    /// input; `conv_transpose2d` is this op): `grad_out` of
    /// `geometry.output_shape()` and `weight` of `geometry.weight_shape()`
    /// give `geometry.input_shape()` (contiguous). Sizes come from the
    /// geometry as stored (a transposed convolution's may carry
    /// output_padding: input rows and columns no output reads get 0).
    /// One dispatch per stride phase (`stride_h * stride_w` of them), each
    /// summing only the taps that reach its pixels.
    pub fn conv2d_input_grad(
        grad_out: &GpuTensor,
        weight: &GpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<GpuTensor> {
        Self::conv2d_input_grad_tiled(grad_out, weight, geometry, 0)
    }

    /// [`conv2d_input_grad`](Self::conv2d_input_grad) with the output tile
    /// forced: 0 (by shape), 64, 128 or 32 (32 x 128 tiles), for tests and
    /// benchmarks.
    #[doc(hidden)]
    pub fn conv2d_input_grad_tiled(
        grad_out: &GpuTensor,
        weight: &GpuTensor,
        geometry: &Conv2dGeometry,
        tile: usize,
    ) -> Result<GpuTensor> {
        const OP: &str = "conv2d_input_grad";
        let g = geometry;
        check_geometry(OP, g)?;
        check_operand(OP, grad_out, grad_out, "grad_out", g.output_shape())?;
        check_operand(OP, grad_out, weight, "weight", g.weight_shape())?;
        let out = grad_out.empty_like_device(OP, &g.input_shape(), DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        if g.out_per_group() == 0 || grad_out.numel() == 0 {
            out.fill_words(0.0f32.to_bits())?;
            return Ok(out);
        }
        if tile == 0 && conv_depthwise::depthwise(g) {
            return conv_depthwise::input_grad(OP, g, grad_out, weight);
        }
        if tile == 0
            && let Some(plan) = Winograd::input_grad(g).filter(|w| w.pays(grad_out))
        {
            return plan.run(OP, grad_out, weight, None, false);
        }
        // [groups, cin_g, kh, kw, cout_g]: contiguous along K within a tap.
        let [kh, kw] = g.kernel_hw;
        let split = [g.args.groups, g.out_per_group(), g.in_per_group(), kh, kw];
        let weight = weight
            .contiguous()?
            .reshape(&split.map(|d| d as isize))?
            .permute(&[0, 2, 3, 4, 1])?
            .contiguous()?;
        params::to_u32(OP, "weight size", weight.numel())?;
        params::to_u32(OP, "output size", out.numel())?;
        let (cin_g, cout_g) = (g.in_per_group(), g.out_per_group());
        // Range checks of the full-size GEMM cover every phase's.
        let full = gemm_params(
            OP,
            g,
            [
                cin_g,
                g.batch * g.input_hw[0] * g.input_hw[1],
                kh * kw * cout_g,
            ],
            0,
            1,
            128,
        )?;
        if kh.max(kw) >= 1 << 16 {
            return Err(Error::invalid(
                OP,
                format!("kernel size {:?} exceeds 65535", g.kernel_hw),
            ));
        }
        let (dy_offset, dy_strides) = strided(OP, grad_out)?;
        let a = &g.args;
        let pixels = g.batch * g.input_hw[0] * g.input_hw[1] / (a.stride[0] * a.stride[1]);
        // At most 32 input channels per group: 32 x 128 tiles, whose rows a
        // 64 x 64 tile would leave half empty (H100, the tutorial CNN's
        // conv2, 32 channels: docs/BENCHMARKS.md, 2026-11-27).
        let narrow = (tile == 0 && cin_g <= NARROW_ROWS) || tile == NARROW_ROWS;
        let tile = if narrow {
            NARROW_ROWS
        } else {
            pick_tile(
                OP,
                grad_out,
                [a.groups, cin_g, pixels],
                BIG_FILL_INPUT_GRAD,
                tile,
            )?
        };
        let (spec, k_step, [tile_m, tile_n]) = match tile {
            128 => (&families::conv::CONV2D_INPUT_GRAD_128, 8, [128, 128]),
            NARROW_ROWS => (&families::conv::CONV2D_INPUT_GRAD_32, K_STEP, [32, 128]),
            _ => (&families::conv::CONV2D_INPUT_GRAD, K_STEP, [64, 64]),
        };
        let aligned = flag(cout_g.is_multiple_of(k_step));
        // The kernel's signed row / column arithmetic.
        for axis in 0..2 {
            let span = g.input_hw[axis] + a.padding[axis][0] + a.dilation[axis] * g.kernel_hw[axis];
            if i32::try_from(span.max(g.output_hw[axis])).is_err() {
                return Err(Error::invalid(
                    OP,
                    format!("spatial extent {span} exceeds the GPU's 32-bit indexing"),
                ));
            }
        }
        for ph in 0..a.stride[0] {
            let hp = Phase::new(
                g.input_hw[0],
                a.padding[0][0],
                a.stride[0],
                kh,
                a.dilation[0],
                ph,
            );
            for pw in 0..a.stride[1] {
                let wp = Phase::new(
                    g.input_hw[1],
                    a.padding[1][0],
                    a.stride[1],
                    kw,
                    a.dilation[1],
                    pw,
                );
                let (rows, cols) = (hp.count, wp.count);
                if rows == 0 || cols == 0 {
                    continue;
                }
                let n = g.batch * rows * cols;
                let k = hp.taps * wp.taps * cout_g;
                let tiles_n = n.div_ceil(tile_n);
                let tiles_mn = tiles_n * cin_g.div_ceil(tile_m);
                let u = |what: &str, v: usize| params::to_u32(OP, what, v);
                let imm = ConvInputGradParams {
                    in_h: full.in_h,
                    in_w: full.in_w,
                    out_h: full.out_h,
                    out_w: full.out_w,
                    cin_g: full.cin_g,
                    cout_g: full.cout_g,
                    kw: full.kw,
                    khkw: full.khkw,
                    stride_h: full.stride_h,
                    stride_w: full.stride_w,
                    base_h: hp.base,
                    base_w: wp.base,
                    step_h: u("stride", hp.row_step)?,
                    step_w: u("stride", wp.row_step)?,
                    n: u("GEMM size", n)?,
                    k: u("GEMM size", k)?,
                    tiles_n: u("tile count", tiles_n)?,
                    tiles_mn: u("tile count", tiles_mn)?,
                    groups: u("workgroup count", tiles_mn * a.groups)?,
                    conv_groups: full.conv_groups,
                    dy_offset,
                    h0: u("phase start", hp.first)?,
                    w0: u("phase start", wp.first)?,
                    rows: u("phase rows", rows)?,
                    cols: u("phase columns", cols)?,
                    tap0: u("tap", hp.tap0 | wp.tap0 << 16)?,
                    tap_step: u("tap", hp.tap_step | wp.tap_step << 16)?,
                    n_tj: u("tap", wp.taps)?,
                    dy_strides,
                };
                let constants = [("ALIGNED", aligned)];
                dispatch(
                    (spec, &constants),
                    [grad_out, &weight, &out],
                    &imm,
                    imm.groups,
                )?;
            }
        }
        Ok(out)
    }
}

/// Records one conv kernel over `buffers` (2 inputs, then the output) on
/// `groups` workgroups.
pub(super) fn dispatch<P: bytemuck::Pod>(
    (spec, constants): (&'static KernelSpec, &[(&'static str, f64)]),
    buffers: [&GpuTensor; 3],
    imm: &P,
    groups: u32,
) -> Result<()> {
    let [a, b, c] = buffers.map(|t| &t.buffer);
    buffers[0]
        .kernels()
        .dispatch_groups(spec, constants, &[a, b, c], imm, u64::from(groups))
}
