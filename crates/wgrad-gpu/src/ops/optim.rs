//! In-place optimizer updates: one fused dispatch per parameter
//! (`kernels/optim/`), the GPU side of `CpuTensor::sgd_step`/`adam_step`.
//!
//! Unlike every other GPU op these write into existing buffers: the
//! parameter and its optimizer state are updated where they live, so a
//! training step allocates nothing and every tensor sharing the parameter's
//! buffer sees the new values (as with PyTorch's in-place `param.add_`).

use wgrad_core::checks::optim::{
    AdagradCoefficients, AdamCoefficients, RmsPropCoefficients, SgdCoefficients,
};
use wgrad_core::{DType, Error, Result, checks};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{
    self, AdagradParams, AdamAmsgradParams, AdamParams, RmsPropParams, SgdMomentumParams, SgdParams,
};

pub(super) const MAXIMIZE: u32 = 1;
pub(super) const WEIGHT_DECAY: u32 = 2;
/// SGD: Nesterov momentum. Adam: decoupled (AdamW) weight decay.
pub(super) const NESTEROV_OR_DECOUPLED: u32 = 4;
/// SGD: the momentum buffer is new and becomes the gradient.
const FIRST: u32 = 8;
/// RMSprop: centered (a `grad_avg` state).
const CENTERED: u32 = 4;
/// RMSprop: momentum (a momentum buffer state).
const MOMENTUM: u32 = 8;

/// Checks one operand of an update: F32, the parameter's shape and device.
pub(super) fn check_operand(op: &'static str, param: &GpuTensor, t: &GpuTensor) -> Result<()> {
    param.same_device(op, t)?;
    t.expect_dtype(op, DType::F32)?;
    checks::optim::operand(op, param.shape(), t.shape())
}

/// Checks that a tensor the kernel writes is a dense row-major range of its
/// buffer (the kernel indexes it as `offset + i`).
pub(super) fn check_writable(op: &'static str, what: &str, t: &GpuTensor) -> Result<u32> {
    if !t.is_contiguous() {
        return Err(Error::invalid(
            op,
            format!(
                "{what} must be contiguous to be updated in place (shape {:?}, strides {:?})",
                t.shape(),
                t.strides()
            ),
        ));
    }
    params::to_u32(op, "offset", t.layout.offset())
}

/// The gradient as a dense range of a buffer that no written tensor uses:
/// a strided gradient is copied, and so is one aliasing a written buffer
/// (a buffer cannot be bound both read-only and read-write in one dispatch).
pub(super) fn dense_grad(
    op: &'static str,
    grad: &GpuTensor,
    written: &[&GpuTensor],
) -> Result<GpuTensor> {
    let g = grad.dense()?;
    if written.iter().any(|w| w.buffer.id() == g.buffer.id()) {
        let copy = g.empty_like_device(op, g.shape(), DType::F32)?;
        g.copy_into(&copy)?;
        return Ok(copy);
    }
    Ok(g)
}

/// Rejects written tensors that share a buffer (their updates would race).
pub(super) fn check_distinct(op: &'static str, written: &[&GpuTensor]) -> Result<()> {
    for (i, a) in written.iter().enumerate() {
        if written[i + 1..]
            .iter()
            .any(|b| b.buffer.id() == a.buffer.id())
        {
            return Err(Error::invalid(
                op,
                "the parameter and its optimizer state must not share a buffer",
            ));
        }
    }
    Ok(())
}

pub(super) fn flag(on: bool, bit: u32) -> u32 {
    if on { bit } else { 0 }
}

impl GpuTensor {
    /// One `torch.optim.SGD` update of this parameter in place, with one
    /// fused dispatch (no readback). Semantics as `CpuTensor::sgd_step`.
    ///
    /// `momentum_buffer` must be given exactly when `momentum != 0`; it is
    /// updated in place, and when `init_buffer` is set (the first step) it is
    /// not read but set to the gradient, as PyTorch initialises it. The
    /// parameter and the buffer must be contiguous F32 tensors of the same
    /// shape on this device (offsets are fine); the gradient may be strided
    /// (it is then copied first).
    #[allow(clippy::too_many_arguments)] // torch.optim.SGD's hyper-parameters, one argument each like torch.optim._functional.sgd
    pub fn sgd_step_(
        &self,
        grad: &GpuTensor,
        momentum_buffer: Option<&GpuTensor>,
        init_buffer: bool,
        lr: f64,
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
        maximize: bool,
    ) -> Result<()> {
        const OP: &str = "sgd_step";
        check_operand(OP, self, self)?;
        check_operand(OP, self, grad)?;
        let param_offset = check_writable(OP, "the parameter", self)?;
        let numel = params::to_u32(OP, "element count", self.numel())?;
        let base_flags = flag(maximize, MAXIMIZE) | flag(weight_decay != 0.0, WEIGHT_DECAY);
        let k = SgdCoefficients::new(lr, momentum, dampening, weight_decay);
        match (momentum != 0.0, momentum_buffer) {
            (false, None) => {
                let g = dense_grad(OP, grad, &[self])?;
                let p = SgdParams {
                    numel,
                    flags: base_flags,
                    grad_offset: params::to_u32(OP, "offset", g.layout.offset())?,
                    param_offset,
                    neg_lr: k.neg_lr,
                    weight_decay: k.weight_decay,
                };
                if numel == 0 {
                    return Ok(());
                }
                self.kernels().dispatch_1d(
                    &families::optim::SGD,
                    &[],
                    &[&g.buffer, &self.buffer],
                    &p,
                    u64::from(numel),
                )
            }
            (true, Some(buf)) => {
                check_operand(OP, self, buf)?;
                let buf_offset = check_writable(OP, "the momentum buffer", buf)?;
                check_distinct(OP, &[self, buf])?;
                let g = dense_grad(OP, grad, &[self, buf])?;
                let flags =
                    base_flags | flag(nesterov, NESTEROV_OR_DECOUPLED) | flag(init_buffer, FIRST);
                let p = SgdMomentumParams {
                    numel,
                    flags,
                    grad_offset: params::to_u32(OP, "offset", g.layout.offset())?,
                    param_offset,
                    buf_offset,
                    neg_lr: k.neg_lr,
                    weight_decay: k.weight_decay,
                    momentum: k.momentum,
                    one_minus_dampening: k.one_minus_dampening,
                };
                if numel == 0 {
                    return Ok(());
                }
                self.kernels().dispatch_1d(
                    &families::optim::SGD_MOMENTUM,
                    &[],
                    &[&g.buffer, &self.buffer, &buf.buffer],
                    &p,
                    u64::from(numel),
                )
            }
            (true, None) => Err(Error::invalid(OP, "momentum != 0 needs a momentum buffer")),
            (false, Some(_)) => Err(Error::invalid(
                OP,
                "a momentum buffer was given but momentum is 0",
            )),
        }
    }

    /// One `torch.optim.Adam` update (or `AdamW` with
    /// `decoupled_weight_decay`) of this parameter in place at step `step`
    /// (1-based), with one fused dispatch (no readback): the parameter,
    /// `exp_avg`, `exp_avg_sq` and, with amsgrad, `max_exp_avg_sq` are
    /// updated in place. Semantics as `CpuTensor::adam_step`; bias
    /// corrections are computed here in f64 and passed as immediates.
    ///
    /// The parameter and state must be contiguous F32 tensors of the same
    /// shape on this device, in distinct buffers; the gradient may be strided.
    #[allow(clippy::too_many_arguments)] // torch.optim.Adam's hyper-parameters, one argument each like torch.optim._functional.adam
    pub fn adam_step_(
        &self,
        grad: &GpuTensor,
        exp_avg: &GpuTensor,
        exp_avg_sq: &GpuTensor,
        max_exp_avg_sq: Option<&GpuTensor>,
        step: u64,
        lr: f64,
        betas: (f64, f64),
        eps: f64,
        weight_decay: f64,
        decoupled_weight_decay: bool,
        maximize: bool,
    ) -> Result<()> {
        const OP: &str = "adam_step";
        let k = AdamCoefficients::new(OP, step, lr, betas, eps, weight_decay)?;
        let mut written: Vec<&GpuTensor> = vec![self, exp_avg, exp_avg_sq];
        written.extend(max_exp_avg_sq);
        check_operand(OP, self, grad)?;
        let mut offsets = Vec::with_capacity(written.len());
        for (t, what) in
            written
                .iter()
                .zip(["the parameter", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"])
        {
            check_operand(OP, self, t)?;
            offsets.push(check_writable(OP, what, t)?);
        }
        check_distinct(OP, &written)?;
        let g = dense_grad(OP, grad, &written)?;
        let numel = params::to_u32(OP, "element count", self.numel())?;

        let flags = flag(maximize, MAXIMIZE)
            | flag(weight_decay != 0.0, WEIGHT_DECAY)
            | flag(decoupled_weight_decay, NESTEROV_OR_DECOUPLED);
        let grad_offset = params::to_u32(OP, "offset", g.layout.offset())?;
        if numel == 0 {
            return Ok(());
        }
        let mut buffers = vec![&g.buffer];
        buffers.extend(written.iter().map(|t| &t.buffer));
        let threads = u64::from(numel);
        let (param_offset, m_offset, v_offset, vmax_offset) = match offsets[..] {
            [p, m, v] => (p, m, v, None),
            [p, m, v, vmax] => (p, m, v, Some(vmax)),
            _ => return Err(Error::invalid(OP, "the optimizer state is 2 or 3 tensors")),
        };
        let p = AdamParams {
            numel,
            flags,
            grad_offset,
            param_offset,
            m_offset,
            v_offset,
            one_minus_beta1: k.one_minus_beta1,
            beta2: k.beta2,
            one_minus_beta2: k.one_minus_beta2,
            eps: k.eps,
            weight_decay: k.weight_decay,
            decay: k.decay,
            neg_step_size: k.neg_step_size,
            bias_correction2_sqrt: k.bias_correction2_sqrt,
        };
        match vmax_offset {
            None => self
                .kernels()
                .dispatch_1d(&families::optim::ADAM, &[], &buffers, &p, threads),
            Some(vmax) => {
                let p: AdamAmsgradParams = p.amsgrad(vmax);
                let spec = &families::optim::ADAM_AMSGRAD;
                self.kernels().dispatch_1d(spec, &[], &buffers, &p, threads)
            }
        }
    }

    /// One `torch.optim.RMSprop` update of this parameter in place, with one
    /// fused dispatch (no readback): the parameter, `square_avg` and, when
    /// given, `grad_avg` (centered) and `momentum_buffer` (momentum > 0) are
    /// updated in place. Semantics as `CpuTensor::rmsprop_step`.
    ///
    /// The parameter and state must be contiguous F32 tensors of the same
    /// shape on this device, in distinct buffers; the gradient may be strided.
    pub fn rmsprop_step_(
        &self,
        grad: &GpuTensor,
        square_avg: &GpuTensor,
        grad_avg: Option<&GpuTensor>,
        momentum_buffer: Option<&GpuTensor>,
        k: &RmsPropCoefficients,
    ) -> Result<()> {
        const OP: &str = "rmsprop_step";
        check_operand(OP, self, grad)?;
        let mut written: Vec<&GpuTensor> = vec![self, square_avg];
        written.extend(grad_avg);
        written.extend(momentum_buffer);
        let names = ["the parameter", "square_avg"]
            .into_iter()
            .chain(grad_avg.map(|_| "grad_avg"))
            .chain(momentum_buffer.map(|_| "momentum_buffer"));
        let mut offsets = Vec::with_capacity(written.len());
        for (t, what) in written.iter().zip(names) {
            check_operand(OP, self, t)?;
            offsets.push(check_writable(OP, what, t)?);
        }
        check_distinct(OP, &written)?;
        let g = dense_grad(OP, grad, &written)?;
        let numel = params::to_u32(OP, "element count", self.numel())?;
        let (centered, momentum) = (grad_avg.is_some(), momentum_buffer.is_some());
        let ga_offset = if centered { offsets[2] } else { 0 };
        let buf_offset = if momentum {
            offsets[offsets.len() - 1]
        } else {
            0
        };
        let p = RmsPropParams {
            numel,
            flags: flag(k.maximize, MAXIMIZE)
                | flag(k.weight_decay != 0.0, WEIGHT_DECAY)
                | flag(centered, CENTERED)
                | flag(momentum, MOMENTUM),
            grad_offset: params::to_u32(OP, "offset", g.layout.offset())?,
            param_offset: offsets[0],
            v_offset: offsets[1],
            ga_offset,
            buf_offset,
            alpha: k.alpha,
            one_minus_alpha: k.one_minus_alpha,
            eps: k.eps,
            weight_decay: k.weight_decay,
            momentum: k.momentum,
            neg_lr: k.neg_lr,
        };
        if numel == 0 {
            return Ok(());
        }
        let spec = match written.len() {
            2 => &families::optim::RMSPROP,
            3 => &families::optim::RMSPROP_AUX,
            _ => &families::optim::RMSPROP_FULL,
        };
        let mut buffers = vec![&g.buffer];
        buffers.extend(written.iter().map(|t| &t.buffer));
        self.kernels()
            .dispatch_1d(spec, &[], &buffers, &p, u64::from(numel))
    }

    /// One `torch.optim.Adagrad` update of this parameter and its `sum`
    /// state in place, with one fused dispatch (no readback). Semantics as
    /// `CpuTensor::adagrad_step`; operands as for [`rmsprop_step_`](Self::rmsprop_step_).
    pub fn adagrad_step_(
        &self,
        grad: &GpuTensor,
        sum: &GpuTensor,
        k: &AdagradCoefficients,
    ) -> Result<()> {
        const OP: &str = "adagrad_step";
        check_operand(OP, self, grad)?;
        check_operand(OP, self, sum)?;
        let param_offset = check_writable(OP, "the parameter", self)?;
        let sum_offset = check_writable(OP, "sum", sum)?;
        check_distinct(OP, &[self, sum])?;
        let g = dense_grad(OP, grad, &[self, sum])?;
        let numel = params::to_u32(OP, "element count", self.numel())?;
        let p = AdagradParams {
            numel,
            flags: flag(k.maximize, MAXIMIZE) | flag(k.weight_decay != 0.0, WEIGHT_DECAY),
            grad_offset: params::to_u32(OP, "offset", g.layout.offset())?,
            param_offset,
            sum_offset,
            eps: k.eps,
            weight_decay: k.weight_decay,
            neg_clr: k.neg_clr,
        };
        if numel == 0 {
            return Ok(());
        }
        self.kernels().dispatch_1d(
            &families::optim::ADAGRAD,
            &[],
            &[&g.buffer, &self.buffer, &sum.buffer],
            &p,
            u64::from(numel),
        )
    }
}
