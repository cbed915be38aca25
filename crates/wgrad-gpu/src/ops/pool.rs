//! 2-D pooling over NCHW f32 tensors (`max_pool2d`, `avg_pool2d`,
//! `adaptive_avg_pool2d`) and their gradients, one dispatch each
//! (`kernels/pool/*.wgsl`), with the semantics of the CPU reference and the
//! shared checks in `wgrad_core::checks::pool`.
//!
//! Forward kernels run one thread per output element and read the input
//! through its strides; backward kernels run one thread per input element
//! and gather the outputs whose window covers it, in row-major output order
//! (deterministic, no float atomics, the CPU's order of additions).

use wgrad_core::checks::pool::{self, Pool2dArgs, Pool2dGeometry};
use wgrad_core::{DType, Error, Layout, Result, shape};
use wgrad_kernels::{KernelSpec, families};

use crate::GpuTensor;
use crate::params::{self, Pool2dParams};

/// Divisor mode of the avg kernels: `(count_include_pad, divisor_override)`.
type AvgMode = (bool, Option<usize>);

/// A 4-D layout's offset and strides as the kernels read them.
fn strided(op: &'static str, layout: &Layout) -> Result<(u32, [u32; 4])> {
    let s = layout.strides();
    let mut out = [0u32; 4];
    for (o, &v) in out.iter_mut().zip(s) {
        *o = params::to_u32(op, "stride", v)?;
    }
    Ok((params::to_u32(op, "offset", layout.offset())?, out))
}

/// The immediates of one pooling dispatch over `threads` elements: `x` is
/// the strided operand read per window, `indices` the max backward's.
fn immediates(
    op: &'static str,
    g: &Pool2dGeometry,
    threads: usize,
    x: &Layout,
    indices: Option<&Layout>,
    avg: AvgMode,
) -> Result<Pool2dParams> {
    let a = &g.args;
    let u = |what, v| params::to_u32(op, what, v);
    // The kernels compute window bounds (and adaptive products) in 32 bits:
    // signed for `o*stride - pad + span`, unsigned for `(o+1)*size`.
    for axis in 0..2 {
        let (size, out) = (g.input_hw[axis], g.output_hw[axis]);
        let reach = out
            .checked_mul(a.stride[axis])
            .and_then(|v| v.checked_add(a.dilation[axis].checked_mul(a.kernel[axis])?))
            .and_then(|v| v.checked_add(size + a.padding[axis]));
        let adaptive = (size + 1).checked_mul(out + 1);
        if reach.is_none_or(|v| v > i32::MAX as usize)
            || adaptive.is_none_or(|v| v > u32::MAX as usize)
        {
            return Err(Error::invalid(
                op,
                format!(
                    "pooling {:?} to {:?} exceeds the GPU's 32-bit indexing",
                    g.input_shape(),
                    g.output_hw
                ),
            ));
        }
    }
    let (x_offset, x_strides) = strided(op, x)?;
    let (i_offset, i_strides) = match indices {
        Some(l) => strided(op, l)?,
        None => (0, [0; 4]),
    };
    Ok(Pool2dParams {
        numel: u("element count", threads)?,
        channels: u("channel count", g.channels)?,
        in_h: u("height", g.input_hw[0])?,
        in_w: u("width", g.input_hw[1])?,
        out_h: u("height", g.output_hw[0])?,
        out_w: u("width", g.output_hw[1])?,
        kernel_h: u("kernel size", a.kernel[0])?,
        kernel_w: u("kernel size", a.kernel[1])?,
        stride_h: u("stride", a.stride[0])?,
        stride_w: u("stride", a.stride[1])?,
        pad_h: u("padding", a.padding[0])?,
        pad_w: u("padding", a.padding[1])?,
        dilation_h: u("dilation", a.dilation[0])?,
        dilation_w: u("dilation", a.dilation[1])?,
        count_include_pad: u32::from(avg.0),
        divisor: u("divisor_override", avg.1.unwrap_or(0))?,
        x_offset,
        x_strides,
        i_offset,
        i_strides,
    })
}

impl GpuTensor {
    /// One pooling dispatch of `spec`, one thread per `p.numel` element.
    fn pool_dispatch(
        &self,
        spec: &'static KernelSpec,
        buffers: &[&wgrad_device::GpuBuffer],
        p: &Pool2dParams,
    ) -> Result<()> {
        self.kernels()
            .dispatch_1d(spec, &[], buffers, p, u64::from(p.numel))
    }

    /// Checks an output gradient (`self`) and makes the input gradient:
    /// `Ok(Err(zeros))` when there is nothing to gather.
    fn grad_input(
        &self,
        op: &'static str,
        g: &Pool2dGeometry,
    ) -> Result<std::result::Result<GpuTensor, GpuTensor>> {
        self.expect_dtype(op, DType::F32)?;
        pool::backward(op, g, self.shape())?;
        let input = g.input_shape();
        if shape::numel(&input) == 0 {
            return Ok(Err(self.empty_like_device(op, &input, DType::F32)?));
        }
        if self.numel() == 0 {
            return Ok(Err(GpuTensor::zeros(self.device(), &input, DType::F32)?));
        }
        Ok(Ok(self.empty_like_device(op, &input, DType::F32)?))
    }

    /// `torch.nn.functional.max_pool2d(self, ..., return_indices=True)` of
    /// an F32 `[N, C, H, W]` tensor (any strides): the window maxima
    /// `[N, C, Ho, Wo]` and, as I32, each one's flat index `h*W + w` in its
    /// input plane. The first of equal maxima wins; NaN wins over numbers
    /// (the last NaN of a window); padding is never chosen. Bit-identical
    /// to the CPU.
    pub fn max_pool2d(&self, args: &Pool2dArgs) -> Result<(GpuTensor, GpuTensor)> {
        const OP: &str = "max_pool2d";
        self.expect_dtype(OP, DType::F32)?;
        let g = pool::max_pool2d(OP, self.shape(), args)?;
        let out = g.output_shape();
        let values = self.empty_like_device(OP, &out, DType::F32)?;
        let indices = self.empty_like_device(OP, &out, DType::I32)?;
        let n = shape::numel(&out);
        if n > 0 {
            let p = immediates(OP, &g, n, &self.layout, None, (false, None))?;
            self.pool_dispatch(
                &families::pool::MAX_POOL2D,
                &[&self.buffer, &values.buffer, &indices.buffer],
                &p,
            )?;
        }
        Ok((values, indices))
    }

    /// Gradient of [`max_pool2d`](Self::max_pool2d) w.r.t. its input of
    /// shape `input_shape`, given `self` = the output gradient and the
    /// forward's I32 `indices` (both `[N, C, Ho, Wo]`, any strides): every
    /// input element sums the output gradients whose index points at it
    /// (windows may overlap). An index outside its output's window adds
    /// nothing. A contiguous `[N, C, H, W]`.
    pub fn max_pool2d_backward(
        &self,
        indices: &GpuTensor,
        input_shape: &[usize],
        args: &Pool2dArgs,
    ) -> Result<GpuTensor> {
        const OP: &str = "max_pool2d_backward";
        self.same_device(OP, indices)?;
        indices.expect_dtype(OP, DType::I32)?;
        let g = pool::max_pool2d(OP, input_shape, args)?;
        pool::backward(OP, &g, indices.shape())?;
        let out = match self.grad_input(OP, &g)? {
            Ok(out) => out,
            Err(done) => return Ok(done),
        };
        // Disjoint 2 x 2 windows tiling the input: one thread per output.
        let a = &g.args;
        let tiled = a.kernel == [2, 2]
            && a.stride == [2, 2]
            && a.padding == [0, 0]
            && a.dilation == [1, 1]
            && g.input_hw == [2 * g.output_hw[0], 2 * g.output_hw[1]];
        let (spec, threads) = if tiled {
            (&families::pool::MAX_POOL2D_BACKWARD_2X2, out.numel() / 4)
        } else {
            (&families::pool::MAX_POOL2D_BACKWARD, out.numel())
        };
        let p = immediates(
            OP,
            &g,
            threads,
            &self.layout,
            Some(&indices.layout),
            (false, None),
        )?;
        self.pool_dispatch(spec, &[&self.buffer, &indices.buffer, &out.buffer], &p)?;
        Ok(out)
    }

    /// `torch.nn.functional.avg_pool2d(self, ...)` of an F32 `[N, C, H, W]`
    /// tensor (any strides; `args.dilation` must be 1): each window's
    /// row-major sum divided by `divisor_override`, else by the window's
    /// size cut to the padded input (`count_include_pad`) or to the input.
    pub fn avg_pool2d(
        &self,
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<GpuTensor> {
        const OP: &str = "avg_pool2d";
        self.expect_dtype(OP, DType::F32)?;
        let g = pool::avg_pool2d(OP, self.shape(), args, divisor_override)?;
        let out = self.empty_like_device(OP, &g.output_shape(), DType::F32)?;
        if out.numel() > 0 {
            let mode = (count_include_pad, divisor_override);
            let p = immediates(OP, &g, out.numel(), &self.layout, None, mode)?;
            self.pool_dispatch(
                &families::pool::AVG_POOL2D,
                &[&self.buffer, &out.buffer],
                &p,
            )?;
        }
        Ok(out)
    }

    /// Gradient of [`avg_pool2d`](Self::avg_pool2d) w.r.t. its input of
    /// shape `input_shape`, given `self` = the output gradient (any
    /// strides): every input element sums `grad_out / divisor` over the
    /// windows that hold it. A contiguous `[N, C, H, W]`.
    pub fn avg_pool2d_backward(
        &self,
        input_shape: &[usize],
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<GpuTensor> {
        const OP: &str = "avg_pool2d_backward";
        let g = pool::avg_pool2d(OP, input_shape, args, divisor_override)?;
        let out = match self.grad_input(OP, &g)? {
            Ok(out) => out,
            Err(done) => return Ok(done),
        };
        let mode = (count_include_pad, divisor_override);
        let p = immediates(OP, &g, out.numel(), &self.layout, None, mode)?;
        self.pool_dispatch(
            &families::pool::AVG_POOL2D_BACKWARD,
            &[&self.buffer, &out.buffer],
            &p,
        )?;
        Ok(out)
    }

    /// `torch.nn.functional.adaptive_avg_pool2d(self, output_hw)` of an F32
    /// `[N, C, H, W]` tensor (any strides): output `(oh, ow)` averages the
    /// window `[floor(oh*H/Ho), ceil((oh+1)*H/Ho))` x (likewise `w`) as
    /// `sum / kh / kw`.
    pub fn adaptive_avg_pool2d(&self, output_hw: [usize; 2]) -> Result<GpuTensor> {
        const OP: &str = "adaptive_avg_pool2d";
        self.expect_dtype(OP, DType::F32)?;
        let g = pool::adaptive_avg_pool2d(OP, self.shape(), output_hw)?;
        let out = self.empty_like_device(OP, &g.output_shape(), DType::F32)?;
        if out.numel() > 0 {
            let p = immediates(OP, &g, out.numel(), &self.layout, None, (false, None))?;
            self.pool_dispatch(
                &families::pool::ADAPTIVE_AVG_POOL2D,
                &[&self.buffer, &out.buffer],
                &p,
            )?;
        }
        Ok(out)
    }

    /// Gradient of [`adaptive_avg_pool2d`](Self::adaptive_avg_pool2d)
    /// w.r.t. its input of shape `input_shape`, given `self` = the output
    /// gradient `[N, C, Ho, Wo]` (any strides): every input element sums
    /// `grad_out / kh / kw` over the windows that hold it. A contiguous
    /// `[N, C, H, W]`.
    pub fn adaptive_avg_pool2d_backward(&self, input_shape: &[usize]) -> Result<GpuTensor> {
        const OP: &str = "adaptive_avg_pool2d_backward";
        let out_hw = match *self.shape() {
            [_, _, oh, ow] => [oh, ow],
            _ => [0, 0],
        };
        let g = pool::adaptive_avg_pool2d(OP, input_shape, out_hw)?;
        let out = match self.grad_input(OP, &g)? {
            Ok(out) => out,
            Err(done) => return Ok(done),
        };
        let p = immediates(OP, &g, out.numel(), &self.layout, None, (false, None))?;
        self.pool_dispatch(
            &families::pool::ADAPTIVE_AVG_POOL2D_BACKWARD,
            &[&self.buffer, &out.buffer],
            &p,
        )?;
        Ok(out)
    }
}
