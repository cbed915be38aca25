//! Winograd F(2x2, 3x3) convolutions: the forward, input gradient and
//! weight gradient of a 3x3, stride-1, undilated, ungrouped `conv2d` with
//! many channels, each as 16 products (`[C_out, C_in] x [C_in, tiles]`, or
//! `[C_out, tiles] x [tiles, C_in]` for the weight gradient) instead of one
//! of 9 times the size (2.25x fewer multiply-adds), between transform
//! passes (`kernels/conv/winograd_*.wgsl`, whose headers give the algebra):
//!
//! | pass | reads | writes |
//! |---|---|---|
//! | weight transform | weight | U `[16, C_out, C_in]` |
//! | input transform | input (through its strides) | V `[16, C_in, tiles]` |
//! | product (`matmul`, f32 kernels) | U, V | M `[16, C_out, tiles]` |
//! | output transform (+ bias, ReLU) | M | output |
//! | weight gradient: output-gradient transform | grad_out (strided) | dM `[16, C_out, tiles]` |
//! | weight gradient: product | dM, V | dU `[16, C_out, C_in]` |
//! | weight gradient: back-transform | dU | weight gradient |
//!
//! Tiles are 2 x 2 output blocks, so V and M take 4x the input's and the
//! output's memory: the workspace is what the implicit GEMM avoids, and it
//! is bounded (`WORKSPACE_CAP_BYTES`, and one binding). F(2x2, 3x3) keeps
//! the direct sum's accuracy in f32 (its transforms only add, subtract and
//! halve); F(4x4, 3x3) would save more work but was about 20x less accurate
//! (max error 2e-5 against 9e-7 for 128 channels in a float64 check), so it
//! is not used. An infinite input can give NaN where the direct sum gives
//! inf (the transforms subtract neighbours), as cuDNN's Winograd does.
//!
//! The input gradient of such a conv is the same correlation of the output
//! gradient with the flipped, transposed weight and padding `2 - pad`, so
//! it takes this path too (the weight transform's `FLIP`).
//!
//! H100, batch 32 (`conv::bench_conv_throughput`, docs/BENCHMARKS.md): at
//! 128 channels 28x28 each pass takes 0.20-0.22 ms against 0.25-0.33 ms
//! implicit; below 64 channels the products' short inner size loses (the
//! MNIST net's 32 -> 64: 14.1 against 17.4 TFLOP/s forward), hence
//! `MIN_CHANNELS`.

use wgrad_core::checks::conv::{self, Conv2dArgs, Conv2dGeometry};
use wgrad_core::{DType, Error, Result};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{self, WinogradParams};

use super::conv::{check_geometry, check_operand, strided};

/// Least channels on both sides for the automatic choice: below it the
/// product's inner size (the input channels) is too short for the 16
/// products to beat the implicit GEMM's one.
const MIN_CHANNELS: usize = 64;
/// Most bytes of V and M together for the automatic choice.
const WORKSPACE_CAP_BYTES: u64 = 1 << 30;
/// Points of the F(2x2, 3x3) transform (4 x 4).
const POINTS: usize = 16;

/// Which product of the convolution a [`Winograd`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// `conv2d` itself.
    Forward,
    /// Its input gradient (the weight flipped and transposed).
    InputGrad,
}

/// One Winograd correlation: `src` `[batch, channels, in_h, in_w]` to
/// `[batch, out_channels, out_h, out_w]`, padded by `pad` above and left.
#[derive(Clone, Copy, Debug)]
pub(super) struct Winograd {
    pass: Pass,
    batch: usize,
    channels: usize,
    out_channels: usize,
    in_hw: [usize; 2],
    out_hw: [usize; 2],
    pad: [usize; 2],
}

/// Whether `g` is a 3x3, stride-1, undilated, ungrouped convolution.
fn winograd_shape(g: &Conv2dGeometry) -> bool {
    let a = &g.args;
    g.kernel_hw == [3, 3] && a.stride == [1, 1] && a.dilation == [1, 1] && a.groups == 1
}

impl Winograd {
    /// The forward of `g`, if it has a Winograd shape.
    pub(super) fn forward(g: &Conv2dGeometry) -> Option<Self> {
        winograd_shape(g).then(|| Winograd {
            pass: Pass::Forward,
            batch: g.batch,
            channels: g.in_channels,
            out_channels: g.out_channels,
            in_hw: g.input_hw,
            out_hw: g.output_hw,
            pad: [g.args.padding[0][0], g.args.padding[1][0]],
        })
    }

    /// The input gradient of `g`, if it has a Winograd shape and at most 2
    /// rows and columns of padding above and left (the gradient's own
    /// padding, `2 - pad`, cannot be negative).
    pub(super) fn input_grad(g: &Conv2dGeometry) -> Option<Self> {
        let pad = [g.args.padding[0][0], g.args.padding[1][0]];
        (winograd_shape(g) && pad[0] <= 2 && pad[1] <= 2).then(|| Winograd {
            pass: Pass::InputGrad,
            batch: g.batch,
            channels: g.out_channels,
            out_channels: g.in_channels,
            in_hw: g.output_hw,
            out_hw: g.input_hw,
            pad: [2 - pad[0], 2 - pad[1]],
        })
    }

    fn tiles_hw(&self) -> [usize; 2] {
        self.out_hw.map(|e| e.div_ceil(2))
    }

    fn tiles(&self) -> usize {
        let [th, tw] = self.tiles_hw();
        self.batch * th * tw
    }

    /// Bytes of V and M.
    fn workspace_bytes(&self) -> u64 {
        let floats =
            POINTS as u64 * (self.channels + self.out_channels) as u64 * self.tiles() as u64;
        floats.saturating_mul(4)
    }

    /// Whether the automatic choice takes this path on `t`'s device: enough
    /// channels on both sides, and V and M within the cap and one binding
    /// each.
    pub(super) fn pays(&self, t: &GpuTensor) -> bool {
        let limits = t.device().limits();
        let binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let plane = |c: usize| (POINTS * c) as u64 * self.tiles() as u64 * 4;
        self.channels >= MIN_CHANNELS
            && self.out_channels >= MIN_CHANNELS
            && self.workspace_bytes() <= WORKSPACE_CAP_BYTES
            && plane(self.channels.max(self.out_channels)) <= binding
    }

    /// The immediates every pass shares (`total` left 0), `src` being the
    /// tensor the input transform reads.
    fn params(&self, op: &'static str, src: &GpuTensor) -> Result<WinogradParams> {
        let u = |what: &str, v: usize| params::to_u32(op, what, v);
        let [tiles_h, tiles_w] = self.tiles_hw();
        let tiles = self.tiles();
        u(
            "Winograd workspace",
            POINTS * self.channels.max(self.out_channels) * tiles,
        )?;
        u("weight size", POINTS * self.channels * self.out_channels)?;
        // The kernels' signed tile origins.
        for axis in 0..2 {
            let reach = self.in_hw[axis].max(2 * self.tiles_hw()[axis] + 4) + self.pad[axis];
            if i32::try_from(reach).is_err() {
                return Err(Error::invalid(
                    op,
                    format!("spatial extent {reach} exceeds the GPU's 32-bit indexing"),
                ));
            }
        }
        let (x_offset, x_strides) = strided(op, src)?;
        Ok(WinogradParams {
            channels: u("channels", self.channels)?,
            in_h: u("input height", self.in_hw[0])?,
            in_w: u("input width", self.in_hw[1])?,
            pad_top: u("padding", self.pad[0])?,
            pad_left: u("padding", self.pad[1])?,
            tiles_h: u("tile rows", tiles_h)?,
            tiles_w: u("tile columns", tiles_w)?,
            tiles: u("tiles", tiles)?,
            out_channels: u("channels", self.out_channels)?,
            out_h: u("output height", self.out_hw[0])?,
            out_w: u("output width", self.out_hw[1])?,
            total: 0,
            x_offset,
            x_strides,
        })
    }

    /// V `[16, channels, tiles]`: the input transform of `src`.
    fn transform_input(
        &self,
        op: &'static str,
        src: &GpuTensor,
        base: &WinogradParams,
    ) -> Result<GpuTensor> {
        let tiles = self.tiles();
        let v = src.empty_like_device(op, &[POINTS, self.channels, tiles], DType::F32)?;
        let threads = self.channels * tiles;
        src.kernels().dispatch_1d(
            &families::conv::WINOGRAD_INPUT,
            &[],
            &[&src.buffer, &v.buffer],
            &WinogradParams {
                total: params::to_u32(op, "Winograd workspace", threads)?,
                ..*base
            },
            threads as u64,
        )?;
        Ok(v)
    }

    /// The correlation of `src` with `weight` (`[C_out, C_in, 3, 3]` of the
    /// convolution, any layout) plus `bias` (dense `[out_channels]`) and
    /// ReLU in the output transform.
    pub(super) fn run(
        &self,
        op: &'static str,
        src: &GpuTensor,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        relu: bool,
    ) -> Result<GpuTensor> {
        let [out_h, out_w] = self.out_hw;
        let out = src.empty_like_device(
            op,
            &[self.batch, self.out_channels, out_h, out_w],
            DType::F32,
        )?;
        if out.numel() == 0 {
            return Ok(out);
        }
        params::to_u32(op, "output size", out.numel())?;
        let base = self.params(op, src)?;
        let kernels = src.kernels();
        let weight = weight.contiguous()?;
        let pair = self.channels * self.out_channels;
        let transformed_weight =
            src.empty_like_device(op, &[POINTS, self.out_channels, self.channels], DType::F32)?;
        let flip = if self.pass == Pass::InputGrad {
            1.0
        } else {
            0.0
        };
        kernels.dispatch_1d(
            &families::conv::WINOGRAD_WEIGHT,
            &[("FLIP", flip)],
            &[&weight.buffer, &transformed_weight.buffer],
            &WinogradParams {
                total: params::to_u32(op, "weight size", pair)?,
                ..base
            },
            pair as u64,
        )?;
        let transformed_input = self.transform_input(op, src, &base)?;
        let products = transformed_weight.matmul_t_f32_sums(&transformed_input, false, false)?;
        drop(transformed_input);
        let threads = self.out_channels * self.tiles();
        let has_bias = if bias.is_some() { 1.0 } else { 0.0 };
        let act = if relu { 1.0 } else { 0.0 };
        // Without a bias its binding takes U (never read).
        let bias_buffer = bias.map_or(&transformed_weight.buffer, |b| &b.buffer);
        kernels.dispatch_1d(
            &families::conv::WINOGRAD_OUTPUT,
            &[("HAS_BIAS", has_bias), ("ACT_RELU", act)],
            &[&products.buffer, &out.buffer, bias_buffer],
            &WinogradParams {
                total: params::to_u32(op, "output size", threads)?,
                ..base
            },
            threads as u64,
        )?;
        Ok(out)
    }

    /// The weight gradient of the forward `self`: `[C_out, C_in, 3, 3]`
    /// (contiguous) from `input` and `grad_out` (any layouts), as
    /// `dW = G^T (sum over tiles of (A dY A^T) * V) G`: the output-gradient
    /// and input transforms, 16 products `[C_out, tiles] x [tiles, C_in]`
    /// (K split over the GPU by `matmul`), and the back-transform.
    pub(super) fn weight_grad(
        &self,
        op: &'static str,
        input: &GpuTensor,
        grad_out: &GpuTensor,
    ) -> Result<GpuTensor> {
        debug_assert_eq!(self.pass, Pass::Forward);
        let (o, c) = (self.out_channels, self.channels);
        let out = input.empty_like_device(op, &[o, c, 3, 3], DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        if self.tiles() == 0 {
            out.fill_words(0.0f32.to_bits())?;
            return Ok(out);
        }
        params::to_u32(op, "weight size", out.numel())?;
        let base = self.params(op, input)?;
        let kernels = input.kernels();
        let transformed_input = self.transform_input(op, input, &base)?;
        let tiles = self.tiles();
        let grad_m = input.empty_like_device(op, &[POINTS, o, tiles], DType::F32)?;
        let (dy_offset, dy_strides) = strided(op, grad_out)?;
        let threads = o * tiles;
        kernels.dispatch_1d(
            &families::conv::WINOGRAD_GRAD_OUTPUT,
            &[],
            &[&grad_out.buffer, &grad_m.buffer],
            &WinogradParams {
                channels: base.out_channels,
                in_h: base.out_h,
                in_w: base.out_w,
                x_offset: dy_offset,
                x_strides: dy_strides,
                total: params::to_u32(op, "Winograd workspace", threads)?,
                ..base
            },
            threads as u64,
        )?;
        let grad_u = grad_m.matmul_t_f32_sums(&transformed_input, false, true)?;
        drop((grad_m, transformed_input));
        let pair = o * c;
        kernels.dispatch_1d(
            &families::conv::WINOGRAD_WEIGHT_GRAD,
            &[],
            &[&grad_u.buffer, &out.buffer],
            &WinogradParams {
                total: params::to_u32(op, "weight size", pair)?,
                ..base
            },
            pair as u64,
        )?;
        Ok(out)
    }
}

impl GpuTensor {
    /// [`conv2d_relu`](Self::conv2d_relu) (without the ReLU if `relu` is
    /// false) forced onto the Winograd path whatever the channel counts, for
    /// tests and benchmarks; an error naming the shape where it does not
    /// apply (not 3x3, stride 1, dilation 1, groups 1).
    #[doc(hidden)]
    pub fn conv2d_winograd(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        relu: bool,
        args: &Conv2dArgs,
    ) -> Result<GpuTensor> {
        const OP: &str = "conv2d_winograd";
        self.same_device(OP, weight)?;
        self.expect_dtype(OP, DType::F32)?;
        weight.expect_dtype(OP, DType::F32)?;
        let g = conv::conv2d(OP, self.shape(), weight.shape(), args)?;
        let plan = Winograd::forward(&g).ok_or_else(|| not_winograd(OP, &g))?;
        let bias = match bias {
            Some(b) => {
                self.same_device(OP, b)?;
                b.expect_dtype(OP, DType::F32)?;
                conv::bias(OP, b.shape(), g.out_channels)?;
                Some(b.contiguous()?)
            }
            None => None,
        };
        plan.run(OP, self, weight, bias.as_ref(), relu)
    }

    /// [`conv2d_input_grad`](Self::conv2d_input_grad) forced onto the
    /// Winograd path (see [`conv2d_winograd`](Self::conv2d_winograd); also
    /// an error for more than 2 rows or columns of padding above or left).
    #[doc(hidden)]
    pub fn conv2d_input_grad_winograd(
        grad_out: &GpuTensor,
        weight: &GpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<GpuTensor> {
        const OP: &str = "conv2d_input_grad_winograd";
        check_geometry(OP, geometry)?;
        check_operand(OP, grad_out, grad_out, "grad_out", geometry.output_shape())?;
        check_operand(OP, grad_out, weight, "weight", geometry.weight_shape())?;
        let plan = Winograd::input_grad(geometry).ok_or_else(|| not_winograd(OP, geometry))?;
        plan.run(OP, grad_out, weight, None, false)
    }
}

impl GpuTensor {
    /// [`conv2d_weight_grad`](Self::conv2d_weight_grad) forced onto the
    /// Winograd path (see [`conv2d_winograd`](Self::conv2d_winograd)).
    #[doc(hidden)]
    pub fn conv2d_weight_grad_winograd(
        input: &GpuTensor,
        grad_out: &GpuTensor,
        geometry: &Conv2dGeometry,
    ) -> Result<GpuTensor> {
        const OP: &str = "conv2d_weight_grad_winograd";
        check_geometry(OP, geometry)?;
        check_operand(OP, input, input, "input", geometry.input_shape())?;
        check_operand(OP, input, grad_out, "grad_out", geometry.output_shape())?;
        let plan = Winograd::forward(geometry).ok_or_else(|| not_winograd(OP, geometry))?;
        plan.weight_grad(OP, input, grad_out)
    }
}

fn not_winograd(op: &'static str, g: &Conv2dGeometry) -> Error {
    let a = &g.args;
    Error::invalid(
        op,
        format!(
            "the Winograd path takes 3x3 kernels with stride 1, dilation 1 and groups 1 (its \
             input gradient also at most 2 rows and columns of padding before the input); got \
             kernel {:?}, stride {:?}, dilation {:?}, groups {}, padding {:?}",
            g.kernel_hw, a.stride, a.dilation, a.groups, a.padding
        ),
    )
}
