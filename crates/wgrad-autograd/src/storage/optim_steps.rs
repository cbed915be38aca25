//! Optimizer steps on either device.
//!
//! The device dispatch of `optim`'s updates. A CPU step is pure: it returns
//! new tensors for the optimizer to swap in. A GPU step records one fused
//! dispatch that updates the parameter and its state in place (the caller
//! bumps the parameter's version), which is why such operands must be dense
//! ([`Storage::dense_for_in_place_step`]).

use wgrad_core::checks::optim::{AdagradCoefficients, RmsPropCoefficients};
use wgrad_core::{DType, Result};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::{Storage, mismatch};

/// What [`Storage::sgd_step`] did.
#[derive(Debug)]
pub(crate) enum SgdStepOutcome {
    /// CPU: nothing was written; the new parameter and, when momentum is on,
    /// the new momentum buffer are to be swapped in.
    Replaced {
        param: Storage,
        momentum_buffer: Option<Storage>,
    },
    /// GPU: the parameter and the momentum buffer were updated in place;
    /// `new_momentum_buffer` is the buffer a first momentum step created,
    /// which becomes the parameter's state.
    InPlace {
        new_momentum_buffer: Option<Storage>,
    },
}

/// What [`Storage::adam_step`] did.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // returned once per parameter and taken apart at once; boxing would allocate per step
pub(crate) enum AdamStepOutcome {
    /// CPU: nothing was written; the new parameter and moments are to be
    /// swapped in (`max_exp_avg_sq` when one was given).
    Replaced {
        param: Storage,
        exp_avg: Storage,
        exp_avg_sq: Storage,
        max_exp_avg_sq: Option<Storage>,
    },
    /// GPU: the parameter and every state buffer were updated in place.
    InPlace,
}

/// What [`Storage::rmsprop_step`] and [`Storage::adagrad_step`] did.
#[derive(Debug)]
pub(crate) enum StateStepOutcome {
    /// CPU: nothing was written; the new parameter and state tensors (in
    /// the order the state was given) are to be swapped in.
    Replaced { param: Storage, state: Vec<Storage> },
    /// GPU: the parameter and every state buffer were updated in place.
    InPlace,
}

/// What a step returns, as far as a 16-bit parameter's update needs it.
trait StepOutcome {
    /// The new parameter a CPU step returns (`None`: updated in place).
    fn replaced_param(&mut self) -> Option<&mut Storage>;
}

impl StepOutcome for SgdStepOutcome {
    fn replaced_param(&mut self) -> Option<&mut Storage> {
        match self {
            SgdStepOutcome::Replaced { param, .. } => Some(param),
            SgdStepOutcome::InPlace { .. } => None,
        }
    }
}

impl StepOutcome for AdamStepOutcome {
    fn replaced_param(&mut self) -> Option<&mut Storage> {
        match self {
            AdamStepOutcome::Replaced { param, .. } => Some(param),
            AdamStepOutcome::InPlace => None,
        }
    }
}

impl StepOutcome for StateStepOutcome {
    fn replaced_param(&mut self) -> Option<&mut Storage> {
        match self {
            StateStepOutcome::Replaced { param, .. } => Some(param),
            StateStepOutcome::InPlace => None,
        }
    }
}

/// The CPU tensor behind optimizer state `t` of CPU parameter `param`.
fn cpu_operand<'a>(op: &'static str, param: &Storage, t: &'a Storage) -> Result<&'a CpuTensor> {
    match t {
        Storage::Cpu(t) => Ok(t),
        other => Err(mismatch(op, param, other)),
    }
}

/// The GPU tensor behind optimizer state `t` of GPU parameter `param`.
fn gpu_operand<'a>(op: &'static str, param: &Storage, t: &'a Storage) -> Result<&'a GpuTensor> {
    match t {
        Storage::Gpu(t) => Ok(t),
        other => Err(mismatch(op, param, other)),
    }
}

impl Storage {
    /// A step of a 16-bit (F16/BF16) parameter: `step` updates an F32 copy
    /// of it with the gradient in F32, and the result is rounded once into
    /// the parameter (on the GPU written back into its buffer, so the
    /// update stays in place). The optimizer state stays F32 (zeros from
    /// [`optimizer_zeros`](Self::optimizer_zeros)), where PyTorch keeps it
    /// in the parameter's dtype: the moments of a half parameter would
    /// otherwise underflow.
    fn step_in_f32<O: StepOutcome>(
        &self,
        grad: &Storage,
        step: impl FnOnce(&Storage, &Storage) -> Result<O>,
    ) -> Result<O> {
        let half = self.dtype();
        let wide = self.cast(DType::F32)?;
        let grad = if grad.dtype().is_half() {
            grad.cast(DType::F32)?
        } else {
            grad.clone()
        };
        let mut outcome = step(&wide, &grad)?;
        match (outcome.replaced_param(), self) {
            (Some(param), _) => *param = param.cast(half)?,
            (None, Storage::Gpu(p)) => {
                if let Storage::Gpu(w) = wide.cast(half)? {
                    p.write_view(&w)?;
                }
            }
            (None, Storage::Cpu(_)) => {}
        }
        Ok(outcome)
    }

    /// F32 zeros shaped like this parameter, on its device: fresh optimizer
    /// state (PyTorch's `zeros_like`).
    pub(crate) fn optimizer_zeros(&self) -> Result<Storage> {
        match self {
            Storage::Cpu(t) => Ok(Storage::Cpu(CpuTensor::zeros(t.shape(), DType::F32)?)),
            Storage::Gpu(t) => Ok(Storage::Gpu(GpuTensor::zeros(
                t.device(),
                t.shape(),
                DType::F32,
            )?)),
        }
    }

    /// For an optimizer step that writes this storage: `Some(dense copy)`
    /// when the step updates it in place (GPU) and it is not a dense range
    /// (a strided view), for the caller to swap into its tensor once, so that
    /// the tensor owns the buffer later steps update; `None` when it can be
    /// used as it is (CPU steps compute new tensors, so any layout will do).
    pub(crate) fn dense_for_in_place_step(&self) -> Result<Option<Storage>> {
        match self {
            Storage::Gpu(t) if !t.is_contiguous() => Ok(Some(Storage::Gpu(t.contiguous()?))),
            Storage::Cpu(_) | Storage::Gpu(_) => Ok(None),
        }
    }

    /// Checks that gradient `grad` is on the same backend as this parameter
    /// (CPU and GPU mixed is `DeviceMismatch` naming `op`; two GPUs are left
    /// to the step, whose kernel checks name them).
    pub(crate) fn check_step_backend(&self, op: &'static str, grad: &Storage) -> Result<()> {
        match (self, grad) {
            (Storage::Cpu(_), Storage::Cpu(_)) | (Storage::Gpu(_), Storage::Gpu(_)) => Ok(()),
            (p, g) => Err(mismatch(op, p, g)),
        }
    }

    /// One `torch.optim.SGD` update of this parameter with gradient `grad`
    /// (see [`SgdStepOutcome`] for what happens where). `momentum_buffer` is
    /// the existing buffer, given only when momentum is on; when momentum is
    /// on and there is none yet, this is the first step, which starts the
    /// buffer as the gradient. Operands on another backend are
    /// `DeviceMismatch` naming `op`.
    #[allow(clippy::too_many_arguments)] // torch.optim.SGD's hyper-parameters, one argument each as in the backends
    pub(crate) fn sgd_step(
        &self,
        op: &'static str,
        grad: &Storage,
        momentum_buffer: Option<&Storage>,
        lr: f64,
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
        maximize: bool,
    ) -> Result<SgdStepOutcome> {
        if self.dtype().is_half() {
            return self.step_in_f32(grad, |p, g| {
                p.sgd_step(
                    op,
                    g,
                    momentum_buffer,
                    lr,
                    momentum,
                    dampening,
                    weight_decay,
                    nesterov,
                    maximize,
                )
            });
        }
        match (self, grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let buf = momentum_buffer
                    .map(|b| cpu_operand(op, self, b))
                    .transpose()?;
                let (param, buf) = p.sgd_step(
                    g,
                    buf,
                    lr,
                    momentum,
                    dampening,
                    weight_decay,
                    nesterov,
                    maximize,
                )?;
                Ok(SgdStepOutcome::Replaced {
                    param: Storage::Cpu(param),
                    momentum_buffer: buf.map(Storage::Cpu),
                })
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                // A first momentum step starts from a new (zeroed) buffer
                // that the kernel sets to the gradient.
                let fresh = match momentum_buffer {
                    None if momentum != 0.0 => {
                        Some(GpuTensor::zeros(p.device(), p.shape(), DType::F32)?)
                    }
                    _ => None,
                };
                let buf = match momentum_buffer {
                    Some(b) => Some(gpu_operand(op, self, b)?),
                    None => fresh.as_ref(),
                };
                p.sgd_step_(
                    g,
                    buf,
                    fresh.is_some(),
                    lr,
                    momentum,
                    dampening,
                    weight_decay,
                    nesterov,
                    maximize,
                )?;
                Ok(SgdStepOutcome::InPlace {
                    new_momentum_buffer: fresh.map(Storage::Gpu),
                })
            }
            (p, g) => Err(mismatch(op, p, g)),
        }
    }

    /// One `torch.optim.Adam` (`decoupled`: AdamW) update of this parameter
    /// with gradient `grad` and state `exp_avg`, `exp_avg_sq` and, with
    /// amsgrad, `max_exp_avg_sq`; `step` counts this update (1 for the
    /// first). See [`AdamStepOutcome`] for what happens where. Operands on
    /// another backend are `DeviceMismatch` naming `op`.
    #[allow(clippy::too_many_arguments)] // torch.optim.Adam's hyper-parameters, one argument each as in the backends
    pub(crate) fn adam_step(
        &self,
        op: &'static str,
        grad: &Storage,
        exp_avg: &Storage,
        exp_avg_sq: &Storage,
        max_exp_avg_sq: Option<&Storage>,
        step: u64,
        lr: f64,
        betas: (f64, f64),
        eps: f64,
        weight_decay: f64,
        decoupled: bool,
        maximize: bool,
    ) -> Result<AdamStepOutcome> {
        if self.dtype().is_half() {
            return self.step_in_f32(grad, |p, g| {
                p.adam_step(
                    op,
                    g,
                    exp_avg,
                    exp_avg_sq,
                    max_exp_avg_sq,
                    step,
                    lr,
                    betas,
                    eps,
                    weight_decay,
                    decoupled,
                    maximize,
                )
            });
        }
        match (self, grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let m = cpu_operand(op, self, exp_avg)?;
                let v = cpu_operand(op, self, exp_avg_sq)?;
                let vmax = max_exp_avg_sq
                    .map(|t| cpu_operand(op, self, t))
                    .transpose()?;
                let (param, m, v, vmax) = p.adam_step(
                    g,
                    m,
                    v,
                    vmax,
                    step,
                    lr,
                    betas,
                    eps,
                    weight_decay,
                    decoupled,
                    maximize,
                )?;
                Ok(AdamStepOutcome::Replaced {
                    param: Storage::Cpu(param),
                    exp_avg: Storage::Cpu(m),
                    exp_avg_sq: Storage::Cpu(v),
                    max_exp_avg_sq: vmax.map(Storage::Cpu),
                })
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                let m = gpu_operand(op, self, exp_avg)?;
                let v = gpu_operand(op, self, exp_avg_sq)?;
                let vmax = max_exp_avg_sq
                    .map(|t| gpu_operand(op, self, t))
                    .transpose()?;
                p.adam_step_(
                    g,
                    m,
                    v,
                    vmax,
                    step,
                    lr,
                    betas,
                    eps,
                    weight_decay,
                    decoupled,
                    maximize,
                )?;
                Ok(AdamStepOutcome::InPlace)
            }
            (p, g) => Err(mismatch(op, p, g)),
        }
    }

    /// One `torch.optim.RMSprop` update of this parameter with gradient
    /// `grad` and state `square_avg`, `grad_avg` (given exactly when
    /// centered) and `momentum_buffer` (given exactly when momentum > 0).
    /// See [`StateStepOutcome`]; the CPU's new state comes back in that
    /// order. Operands on another backend are `DeviceMismatch` naming `op`.
    pub(crate) fn rmsprop_step(
        &self,
        op: &'static str,
        grad: &Storage,
        square_avg: &Storage,
        grad_avg: Option<&Storage>,
        momentum_buffer: Option<&Storage>,
        k: &RmsPropCoefficients,
    ) -> Result<StateStepOutcome> {
        if self.dtype().is_half() {
            return self.step_in_f32(grad, |p, g| {
                p.rmsprop_step(op, g, square_avg, grad_avg, momentum_buffer, k)
            });
        }
        match (self, grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let v = cpu_operand(op, self, square_avg)?;
                let ga = grad_avg.map(|t| cpu_operand(op, self, t)).transpose()?;
                let buf = momentum_buffer
                    .map(|t| cpu_operand(op, self, t))
                    .transpose()?;
                let (param, v, ga, buf) = p.rmsprop_step(g, v, ga, buf, k)?;
                let mut state = vec![Storage::Cpu(v)];
                state.extend(ga.map(Storage::Cpu));
                state.extend(buf.map(Storage::Cpu));
                Ok(StateStepOutcome::Replaced {
                    param: Storage::Cpu(param),
                    state,
                })
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                let v = gpu_operand(op, self, square_avg)?;
                let ga = grad_avg.map(|t| gpu_operand(op, self, t)).transpose()?;
                let buf = momentum_buffer
                    .map(|t| gpu_operand(op, self, t))
                    .transpose()?;
                p.rmsprop_step_(g, v, ga, buf, k)?;
                Ok(StateStepOutcome::InPlace)
            }
            (p, g) => Err(mismatch(op, p, g)),
        }
    }

    /// One `torch.optim.Adagrad` update of this parameter with gradient
    /// `grad` and state `sum`. See [`StateStepOutcome`]. Operands on another
    /// backend are `DeviceMismatch` naming `op`.
    pub(crate) fn adagrad_step(
        &self,
        op: &'static str,
        grad: &Storage,
        sum: &Storage,
        k: &AdagradCoefficients,
    ) -> Result<StateStepOutcome> {
        if self.dtype().is_half() {
            return self.step_in_f32(grad, |p, g| p.adagrad_step(op, g, sum, k));
        }
        match (self, grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let s = cpu_operand(op, self, sum)?;
                let (param, s) = p.adagrad_step(g, s, k)?;
                Ok(StateStepOutcome::Replaced {
                    param: Storage::Cpu(param),
                    state: vec![Storage::Cpu(s)],
                })
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                let s = gpu_operand(op, self, sum)?;
                p.adagrad_step_(g, s, k)?;
                Ok(StateStepOutcome::InPlace)
            }
            (p, g) => Err(mismatch(op, p, g)),
        }
    }

    /// F32 tensor shaped like this parameter, on its device, filled with
    /// `value` (Adagrad's `full_like(param, initial_accumulator_value)`).
    pub(crate) fn optimizer_full(&self, value: f64) -> Result<Storage> {
        match self {
            Storage::Cpu(t) => Ok(Storage::Cpu(CpuTensor::full(t.shape(), value, DType::F32)?)),
            Storage::Gpu(t) => Ok(Storage::Gpu(GpuTensor::full(
                t.device(),
                t.shape(),
                value,
                DType::F32,
            )?)),
        }
    }
}
