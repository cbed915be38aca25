//! Fused cross-entropy (log-softmax + NLL per sample) and its gradient.
//!
//! One dispatch each (`kernels/nn/cross_entropy*.wgsl`): every row of the
//! logits is read by a few threads that fold (max, sum of exp) together in
//! workgroup memory, so neither a log-softmax tensor nor a gather is ever
//! materialised. Targets are checked on the device: an out-of-range class
//! raises the device fault, reported by the next readback.

use wgrad_core::{DType, Result, checks};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{self, CheckParams, CrossEntropyParams, LossMeanParams};

/// Threads per workgroup of the cross-entropy kernels.
const WG: usize = 256;
/// The most logits the fused loss-and-mean pass reads in its one
/// workgroup (64 per thread); larger losses take the two passes (whose
/// many workgroups read them faster than one).
const FUSED_MEAN_MAX_LOGITS: usize = 64 * WG;

/// Validates logits `[N, C]` F32, target `[N]` I32 and the smoothing factor;
/// returns `(N, C)`.
fn check_inputs(
    op: &'static str,
    logits: &GpuTensor,
    target: &GpuTensor,
    label_smoothing: f32,
) -> Result<(usize, usize)> {
    logits.same_device(op, target)?;
    logits.expect_dtype(op, DType::F32)?;
    target.expect_dtype(op, DType::I32)?;
    checks::loss::cross_entropy(op, logits.shape(), target.shape(), label_smoothing)
}

/// Threads per row: enough to give each thread one class of a small row,
/// a full workgroup for rows of 256 classes or more.
fn lanes_for(classes: usize) -> usize {
    classes.max(1).next_power_of_two().min(WG)
}

/// The kernels' shared immediate block (see `CrossEntropyParams` in the WGSL).
fn immediates(
    op: &'static str,
    logits: &GpuTensor,
    target: &GpuTensor,
    grad: Option<&GpuTensor>,
    label_smoothing: f32,
    ignore_index: i32,
) -> Result<CrossEntropyParams> {
    let (n, c) = (logits.shape()[0], logits.shape()[1]);
    let u = |what, v| params::to_u32(op, what, v);
    let (g_offset, g_stride) = match grad {
        Some(g) => (
            u("offset", g.layout.offset())?,
            u("stride", g.strides()[0])?,
        ),
        None => (0, 0),
    };
    Ok(CrossEntropyParams {
        rows: u("row count", n)?,
        n: u("class count", c)?,
        x_offset: u("offset", logits.layout.offset())?,
        x_row_stride: u("stride", logits.strides()[0])?,
        x_col_stride: u("stride", logits.strides()[1])?,
        t_offset: u("offset", target.layout.offset())?,
        t_stride: u("stride", target.strides()[0])?,
        lanes: lanes_for(c) as u32,
        smoothing: label_smoothing.to_bits(),
        ignore_index: ignore_index as u32,
        g_offset,
        g_stride,
        d_offset: 0,
    })
}

impl GpuTensor {
    /// Per-sample cross-entropy of logits `[N, C]` (F32, any strides)
    /// against class indices `target` `[N]` (I32), like
    /// `torch.nn.functional.cross_entropy(..., reduction='none')`:
    /// `loss_n = -(1 - ls) * logp[n, t_n] - ls / C * sum_c logp[n, c]`, and 0
    /// where `t_n == ignore_index`. A target outside `0..C` (other than
    /// `ignore_index`) sets the device fault; the next readback returns
    /// `IndexOutOfRange`.
    pub fn cross_entropy(
        &self,
        target: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<GpuTensor> {
        const OP: &str = "cross_entropy";
        let (n, c) = check_inputs(OP, self, target, label_smoothing)?;
        let out = self.empty_like_device(OP, &[n], DType::F32)?;
        if n == 0 {
            return Ok(out);
        }
        let p = immediates(OP, self, target, None, label_smoothing, ignore_index)?;
        let rows_per_group = WG / lanes_for(c);
        self.kernels().dispatch_groups(
            &families::nn::CROSS_ENTROPY,
            &[],
            &[&self.buffer, &target.buffer, &out.buffer],
            &p,
            n.div_ceil(rows_per_group) as u64,
        )?;
        Ok(out)
    }

    /// `F.cross_entropy(..., reduction='mean')`: the mean of
    /// [`cross_entropy`](Self::cross_entropy)'s losses over the samples not
    /// ignored, and their count, both 0-d F32, as
    /// [`cross_entropy_mean`](Self::cross_entropy_mean) gives them. One
    /// dispatch where the logits fit one workgroup's reading (at most 16384:
    /// the small classifiers, e.g. 1024 rows of 10 classes), else the two
    /// passes. The one
    /// pass also writes a 0-d 1.0, returned third: a seed for the loss's
    /// backward that costs no dispatch (`None` after two passes).
    pub fn cross_entropy_mean_loss(
        &self,
        target: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<(GpuTensor, GpuTensor, Option<GpuTensor>)> {
        let (mean, count, unit, _) =
            self.fused_cross_entropy_mean(target, label_smoothing, ignore_index, false)?;
        Ok((mean, count, unit))
    }

    /// [`cross_entropy_mean_loss`](Self::cross_entropy_mean_loss) and,
    /// where its one pass runs, also the logits' gradient `[N, C]` for the
    /// returned seed (what
    /// [`cross_entropy_mean_backward`](Self::cross_entropy_mean_backward)
    /// makes of a 1.0, bit for bit): a training step's loss and gradient in
    /// one dispatch (the gradient's rows in workgroups beside the loss's
    /// one), at the cost of writing the gradient whether or not a backward
    /// comes.
    #[allow(clippy::type_complexity)]
    pub fn cross_entropy_mean_loss_with_grad(
        &self,
        target: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<(GpuTensor, GpuTensor, Option<(GpuTensor, GpuTensor)>)> {
        let (mean, count, unit, grad) =
            self.fused_cross_entropy_mean(target, label_smoothing, ignore_index, true)?;
        Ok((mean, count, unit.zip(grad)))
    }

    #[allow(clippy::type_complexity)]
    fn fused_cross_entropy_mean(
        &self,
        target: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
        with_grad: bool,
    ) -> Result<(GpuTensor, GpuTensor, Option<GpuTensor>, Option<GpuTensor>)> {
        const OP: &str = "cross_entropy";
        let (n, c) = check_inputs(OP, self, target, label_smoothing)?;
        if n == 0 || n * c.max(1) > FUSED_MEAN_MAX_LOGITS {
            let (mean, count) = self
                .cross_entropy(target, label_smoothing, ignore_index)?
                .cross_entropy_mean(target, ignore_index)?;
            return Ok((mean, count, None, None));
        }
        let grad_len = if with_grad { n * c } else { 0 };
        let out = self.empty_like_device(OP, &[3 + grad_len], DType::F32)?;
        let mut p = immediates(OP, self, target, None, label_smoothing, ignore_index)?;
        // Fewer threads per row, so that the rows take few blocks of the
        // one workgroup (one thread per row past 256 rows).
        p.lanes = lanes_for(c).min(WG / n.next_power_of_two()).max(1) as u32;
        // Workgroup 0 makes the loss; with the gradient, the rest make it
        // as the backward kernel's workgroups would.
        let grad_groups = if with_grad {
            n.div_ceil(WG / lanes_for(c))
        } else {
            0
        };
        self.kernels().dispatch_groups(
            &families::nn::CROSS_ENTROPY,
            &[
                ("FUSED_MEAN", 1.0),
                ("WITH_GRAD", f64::from(u8::from(with_grad))),
            ],
            &[&self.buffer, &target.buffer, &out.buffer],
            &p,
            1 + grad_groups as u64,
        )?;
        let grad = if with_grad {
            Some(
                out.narrow(0, 3, grad_len)?
                    .reshape(&[n as isize, c as isize])?,
            )
        } else {
            None
        };
        Ok((
            out.narrow(0, 0, 1)?.reshape(&[])?,
            out.narrow(0, 1, 1)?.reshape(&[])?,
            Some(out.narrow(0, 2, 1)?.reshape(&[])?),
            grad,
        ))
    }

    /// Gradient of [`cross_entropy`](Self::cross_entropy) w.r.t. the logits
    /// given the per-sample upstream gradient `grad` `[N]` (F32):
    /// `dlogits[n, c] = grad_n * (softmax[n, c] - (1 - ls) * [c == t_n] - ls / C)`,
    /// all-zero rows for ignored samples; a contiguous `[N, C]`.
    pub fn cross_entropy_backward(
        &self,
        target: &GpuTensor,
        grad: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<GpuTensor> {
        self.cross_entropy_backward_divided(target, grad, None, label_smoothing, ignore_index)
    }

    /// The gradient of `cross_entropy(..).cross_entropy_mean(..)` (the
    /// 'mean' reduction) w.r.t. the logits: `grad` (0-d, the mean's
    /// upstream gradient) divided by `count` (0-d, the mean's count of
    /// samples not ignored) on every row, in the one pass of
    /// [`cross_entropy_backward`](Self::cross_entropy_backward) (no
    /// division of its own).
    pub fn cross_entropy_mean_backward(
        &self,
        target: &GpuTensor,
        grad: &GpuTensor,
        count: &GpuTensor,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<GpuTensor> {
        const OP: &str = "cross_entropy_backward";
        for scalar in [grad, count] {
            if scalar.numel() != 1 {
                return Err(wgrad_core::Error::invalid(
                    OP,
                    format!(
                        "the mean's gradient and count are 0-d, got shape {:?}",
                        scalar.shape()
                    ),
                ));
            }
            self.same_device(OP, scalar)?;
            scalar.expect_dtype(OP, DType::F32)?;
        }
        let n = self.shape().first().copied().unwrap_or(0);
        let rows = grad.reshape(&[1])?.expand(&[n])?;
        self.cross_entropy_backward_divided(
            target,
            &rows,
            Some(count),
            label_smoothing,
            ignore_index,
        )
    }

    fn cross_entropy_backward_divided(
        &self,
        target: &GpuTensor,
        grad: &GpuTensor,
        divisor: Option<&GpuTensor>,
        label_smoothing: f32,
        ignore_index: i32,
    ) -> Result<GpuTensor> {
        const OP: &str = "cross_entropy_backward";
        let (n, c) = check_inputs(OP, self, target, label_smoothing)?;
        self.same_device(OP, grad)?;
        grad.expect_dtype(OP, DType::F32)?;
        checks::loss::cross_entropy_grad(OP, n, grad.shape())?;
        let out = self.empty_like_device(OP, &[n, c], DType::F32)?;
        // With no classes there is no gradient to write; the forward pass
        // already reported any target that was not ignored.
        if n == 0 || c == 0 {
            return Ok(out);
        }
        let mut p = immediates(OP, self, target, Some(grad), label_smoothing, ignore_index)?;
        if let Some(d) = divisor {
            p.d_offset = params::to_u32(OP, "offset", d.layout.offset())?;
        }
        // Without a divisor its binding takes the gradient (never read).
        let divisor_buffer = divisor.map_or(&grad.buffer, |d| &d.buffer);
        let rows_per_group = WG / lanes_for(c);
        self.kernels().dispatch_groups(
            &families::nn::CROSS_ENTROPY_BACKWARD,
            &[("HAS_DIVISOR", if divisor.is_some() { 1.0 } else { 0.0 })],
            &[
                &self.buffer,
                &target.buffer,
                &grad.buffer,
                &out.buffer,
                divisor_buffer,
            ],
            &p,
            n.div_ceil(rows_per_group) as u64,
        )?;
        Ok(out)
    }

    /// The 'mean' reduction of per-sample losses `[N]` (this tensor, F32,
    /// e.g. [`cross_entropy`](Self::cross_entropy)'s) over the samples whose
    /// `target` `[N]` (I32) is not `ignore_index`, in one dispatch:
    /// `(mean, count)`, both 0-d F32, as
    /// `F.cross_entropy(..., reduction='mean')` divides (a NaN mean when
    /// every sample is ignored).
    pub fn cross_entropy_mean(
        &self,
        target: &GpuTensor,
        ignore_index: i32,
    ) -> Result<(GpuTensor, GpuTensor)> {
        const OP: &str = "cross_entropy_mean";
        self.same_device(OP, target)?;
        self.expect_dtype(OP, DType::F32)?;
        target.expect_dtype(OP, DType::I32)?;
        checks::loss::loss_mean(OP, self.shape(), target.shape())?;
        let losses = self.contiguous()?;
        let out = self.empty_like_device(OP, &[2], DType::F32)?;
        let u = |what, v| params::to_u32(OP, what, v);
        let p = LossMeanParams {
            rows: u("row count", losses.numel())?,
            l_offset: u("offset", losses.layout.offset())?,
            t_offset: u("offset", target.layout.offset())?,
            t_stride: u("stride", target.strides()[0])?,
            ignore_index: ignore_index as u32,
        };
        self.kernels().dispatch(
            &families::nn::CROSS_ENTROPY_MEAN,
            &[],
            &[&losses.buffer, &target.buffer, &out.buffer],
            &p,
            [1, 1, 1],
        )?;
        Ok((
            out.narrow(0, 0, 1)?.reshape(&[])?,
            out.narrow(0, 1, 1)?.reshape(&[])?,
        ))
    }

    /// Checks that every element is in [0, 1] (not NaN), as
    /// `binary_cross_entropy` requires of its input: an element outside
    /// raises a device fault, so the next readback returns PyTorch's error
    /// ("all elements of input should be between 0 and 1") with the
    /// element's index. Records one dispatch; reads nothing back.
    pub fn check_unit_interval(&self) -> Result<()> {
        const OP: &str = "binary_cross_entropy";
        self.expect_dtype(OP, DType::F32)?;
        let x = self.dense()?;
        if x.numel() == 0 {
            return Ok(());
        }
        let p = CheckParams {
            numel: params::to_u32(OP, "element count", x.numel())?,
            offset: params::to_u32(OP, "offset", x.layout.offset())?,
        };
        self.kernels().dispatch_1d(
            &families::nn::CHECK_UNIT_INTERVAL,
            &[],
            &[&x.buffer],
            &p,
            x.numel() as u64,
        )
    }
}
