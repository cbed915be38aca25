//! Optimizers, learning-rate schedulers and gradient clipping with
//! `torch.optim` semantics and defaults, on either device.
//!
//! ```
//! use wgrad_autograd::optim::{Adam, AdamConfig, CosineAnnealingLR, LrScheduler, Optimizer};
//! use wgrad_autograd::{Device, Tensor};
//! let device = Device::Cpu; // or Device::best()?
//! let w = Tensor::randn(&[3, 2], &device)?.with_requires_grad(true)?;
//! let start = w.square()?.sum_all()?.item()?;
//! let mut opt = Adam::new(vec![w.clone()], AdamConfig { lr: 1e-2, ..Default::default() })?;
//! let mut sched = CosineAnnealingLR::new(&mut opt, 100, 0.0)?;
//! for _ in 0..100 {
//!     opt.zero_grad();
//!     let loss = w.square()?.sum_all()?;
//!     loss.backward()?;
//!     opt.step()?;
//!     sched.step(&mut opt);
//! }
//! assert!(w.square()?.sum_all()?.item()? < start);
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! A GPU step records one fused update dispatch per parameter that writes
//! the parameter's buffer and its state in place and never reads back; a
//! CPU step computes new tensors and swaps them in with
//! [`Tensor::set_storage`]. [`NAdam`], [`RAdam`], [`Adamax`] and
//! [`Adadelta`] compose their step from tensor ops on either device
//! (PyTorch's single-tensor arithmetic, in its order) and swap the results
//! in the same way.
//!
//! Parameters come in [`ParamGroup`]s (PyTorch's `param_groups`), each with
//! its own hyper-parameters; `new` builds one group, `with_groups` several.
//! Schedulers drive every group's rate from that group's own base rate.
//!
//! [`GradScaler`] (`torch.amp.GradScaler`) scales the loss for
//! mixed-precision training and skips steps whose gradients overflowed,
//! with any optimizer.

mod adadelta;
mod adagrad;
mod adam;
mod adam_foreach;
mod adamax;
mod clip;
mod composed;
mod grad_scaler;
mod group;
mod nadam;
mod radam;
mod rmsprop;
mod scheduler;
mod sgd;

pub use adadelta::{Adadelta, AdadeltaConfig, AdadeltaState};
pub use adagrad::{Adagrad, AdagradConfig, AdagradState};
pub use adam::{Adam, AdamConfig, AdamState, AdamW, AdamWConfig};
pub use adamax::{Adamax, AdamaxConfig, AdamaxState};
pub use clip::{clip_grad_norm_, clip_grad_norm_with, clip_grad_value_};
pub use grad_scaler::{GradScaler, GradScalerConfig};
pub use group::{GroupConfig, ParamGroup};
pub use nadam::{NAdam, NAdamConfig, NAdamState};
pub use radam::{RAdam, RAdamConfig, RAdamState};
pub use rmsprop::{RmsProp, RmsPropConfig, RmsPropState};
pub use scheduler::{
    AnnealStrategy, ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
    ExponentialLR, LambdaLR, LinearLR, LinearWarmup, LrLambda, LrScheduler, MultiStepLR,
    OneCycleConfig, OneCycleLR, PlateauMode, PolynomialLR, ReduceLROnPlateau,
    ReduceLROnPlateauConfig, SequentialLR, StepLR, ThresholdMode,
};
pub use sgd::{Sgd, SgdConfig, SgdState};

use wgrad_core::{DType, Error, Result};

use crate::{Device, Storage, Tensor};

/// What every optimizer does (`torch.optim.Optimizer`).
///
/// The `group_*` methods see every parameter group; their defaults describe
/// an optimizer with a single group through the single-rate methods, so an
/// optimizer written outside this crate needs only those.
pub trait Optimizer {
    /// Applies one update to every parameter that has a gradient
    /// (parameters whose grad is `None` are skipped, as in PyTorch).
    fn step(&mut self) -> Result<()>;
    /// Drops every parameter's gradient (PyTorch's default `set_to_none=True`).
    fn zero_grad(&mut self);
    /// The current learning rate (the first group's).
    fn lr(&self) -> f64;
    /// Sets the learning rate of every group.
    fn set_lr(&mut self, lr: f64);
    /// The learning rate the first scheduler found (PyTorch's
    /// `group["initial_lr"]`, the first group's), shared by every scheduler
    /// of this optimizer.
    fn initial_lr(&self) -> Option<f64>;
    /// Records `initial_lr` for every group.
    fn set_initial_lr(&mut self, lr: f64);
    /// The parameters of every group, in order (the indices of the
    /// per-parameter state, as in PyTorch's `state_dict`).
    fn params(&self) -> &[Tensor];
    /// The number of parameter groups.
    fn num_param_groups(&self) -> usize {
        1
    }
    /// Each group's learning rate (`[g["lr"] for g in param_groups]`).
    fn group_lrs(&self) -> Vec<f64> {
        vec![self.lr()]
    }
    /// Sets each group's learning rate (schedulers do this between steps);
    /// `lrs[i]` goes to group `i`, extra values are ignored.
    fn set_group_lrs(&mut self, lrs: &[f64]) {
        if let Some(&lr) = lrs.first() {
            self.set_lr(lr);
        }
    }
    /// Each group's `initial_lr`.
    fn group_initial_lrs(&self) -> Vec<Option<f64>> {
        vec![self.initial_lr()]
    }
    /// Records each group's `initial_lr` (schedulers do this on construction).
    fn set_group_initial_lrs(&mut self, lrs: &[f64]) {
        if let Some(&lr) = lrs.first() {
            self.set_initial_lr(lr);
        }
    }
    /// Each group's momentum as `OneCycleLR` cycles it (SGD's and RMSprop's
    /// `momentum`, Adam's `beta1`); `None` when the optimizer has none.
    fn group_momentums(&self) -> Option<Vec<f64>> {
        None
    }
    /// Sets each group's momentum (see [`group_momentums`](Self::group_momentums)).
    fn set_group_momentums(&mut self, _momentums: &[f64]) {}
}

/// Validates the parameter list the way `torch.optim.Optimizer` does.
pub(crate) fn check_params(op: &'static str, params: &[Tensor]) -> Result<()> {
    if params.is_empty() {
        return Err(Error::invalid(op, "optimizer got an empty parameter list"));
    }
    let mut seen = std::collections::HashMap::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        if let Some(first) = seen.insert(p.id(), i) {
            // Stepping a tensor twice per step would apply its update twice.
            return Err(Error::invalid(
                op,
                format!(
                    "parameters {first} and {i} are the same tensor (shape {:?}); give each \
                     parameter once (tied weights: list the shared tensor once)",
                    p.shape()
                ),
            ));
        }
        if !p.is_leaf() {
            return Err(Error::invalid(
                op,
                format!("can't optimize a non-leaf tensor (parameter {i}); detach() it first"),
            ));
        }
        if !p.dtype().is_float() {
            return Err(Error::DTypeMismatch {
                op,
                expected: DType::F32,
                got: p.dtype(),
            });
        }
    }
    Ok(())
}

/// Rejects a hyper-parameter that is negative or NaN (`name` as torch spells it).
pub(crate) fn check_non_negative(op: &'static str, name: &str, value: f64) -> Result<()> {
    if value >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("Invalid {name}: {value}")))
    }
}

/// The error for an operand that lives on another device than the parameter.
pub(crate) fn device_mismatch(op: &'static str, param: &Storage, other: &Storage) -> Error {
    Error::DeviceMismatch {
        op,
        lhs: param.device().to_string(),
        rhs: other.device().to_string(),
    }
}

/// The storage of optimizer state `state` of a parameter whose storage is
/// `param`, ready for a step: on the parameter's device (else
/// `DeviceMismatch`), and dense when the step updates it in place (a strided
/// state, e.g. restored from a view, is replaced by a contiguous copy first).
pub(crate) fn state_operand(op: &'static str, param: &Storage, state: &Tensor) -> Result<Storage> {
    let storage = state.storage();
    if !param.device().same(&storage.device()) {
        return Err(device_mismatch(op, param, &storage));
    }
    match storage.dense_for_in_place_step()? {
        Some(dense) => {
            state.set_storage(dense.clone())?;
            Ok(dense)
        }
        None => Ok(storage),
    }
}

/// The storage of parameter `param` (currently `storage`), ready for a
/// step: when the step updates it in place and it is a strided view, it is
/// made contiguous first (once: the parameter then owns a dense buffer that
/// later steps update in place).
pub(crate) fn param_operand(param: &Tensor, storage: Storage) -> Result<Storage> {
    match storage.dense_for_in_place_step()? {
        Some(dense) => {
            param.set_storage(dense.clone())?;
            Ok(dense)
        }
        None => Ok(storage),
    }
}

/// A zero-filled f32 state tensor like `param` (PyTorch's `zeros_like`).
pub(crate) fn zeros_state(param: &Storage) -> Result<Tensor> {
    Ok(Tensor::from_storage_leaf(param.optimizer_zeros()?))
}

/// The device a parameter list lives on (the first parameter's).
pub(crate) fn first_device(params: &[Tensor]) -> Device {
    params.first().map_or(Device::Cpu, Tensor::device)
}
