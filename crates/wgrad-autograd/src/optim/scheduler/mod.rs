//! Learning-rate schedulers with `torch.optim.lr_scheduler` semantics.
//!
//! As in PyTorch, a scheduler's constructor performs the initial step (so
//! e.g. [`LinearLR`] lowers the rate before the first optimizer step), each
//! [`LrScheduler::step`] advances one epoch using the *chainable* form
//! (the new rate is computed from the optimizer's current rate, so several
//! schedulers can act on one optimizer, see [`ChainedScheduler`]), and
//! [`SequentialLR`] switches between schedulers at milestones, restarting
//! each one from its closed form at epoch 0. Every scheduler acts on every
//! parameter group, from that group's own `base_lr` (its `initial_lr`,
//! recorded by the first scheduler built on the optimizer, as PyTorch's
//! `base_lrs`).
//!
//! Beyond those: [`MultiStepLR`], [`LambdaLR`], [`ConstantLR`],
//! [`PolynomialLR`], [`CosineAnnealingWarmRestarts`], [`OneCycleLR`] and
//! [`ReduceLROnPlateau`] (which steps on a metric, so it has its own `step`
//! instead of [`LrScheduler`]'s).
//!
//! Warm-up then cosine decay:
//!
//! ```
//! use wgrad_autograd::optim::*;
//! use wgrad_autograd::{Device, Tensor};
//! let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
//! let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
//! let warmup = LinearLR::new(&mut opt, 0.1, 1.0, 5)?;
//! let cosine = CosineAnnealingLR::new(&mut opt, 95, 0.0)?;
//! let mut sched = SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(cosine)], vec![5])?;
//! assert!((opt.lr() - 0.01).abs() < 1e-12);
//! for _ in 0..5 {
//!     sched.step(&mut opt);
//! }
//! assert!((opt.lr() - 0.1).abs() < 1e-12);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

use std::f64::consts::PI;

use wgrad_core::{Error, Result};

use super::Optimizer;

mod combine;
mod constant_polynomial;
mod extra;
mod one_cycle;
mod plateau;

pub use combine::{ChainedScheduler, SequentialLR};
pub use constant_polynomial::{ConstantLR, PolynomialLR};
pub use extra::{CosineAnnealingWarmRestarts, LambdaLR, LrLambda, MultiStepLR};
pub use one_cycle::{AnnealStrategy, OneCycleConfig, OneCycleLR};
pub use plateau::{PlateauMode, ReduceLROnPlateau, ReduceLROnPlateauConfig, ThresholdMode};

/// A learning-rate schedule driving an [`Optimizer`]'s rate.
pub trait LrScheduler {
    /// Advances one epoch and writes the new rate into `opt` (call it after
    /// `opt.step()`, as in PyTorch).
    fn step(&mut self, opt: &mut dyn Optimizer);
    /// The rate this scheduler set last (the first group's).
    fn get_last_lr(&self) -> f64;
    /// The rates this scheduler set last, one per parameter group
    /// (PyTorch's `get_last_lr()`).
    fn get_last_lrs(&self) -> Vec<f64>;
    /// The epoch counter (PyTorch's `last_epoch`: 0 after construction).
    fn last_epoch(&self) -> i64;
    /// Jumps to `epoch` and sets the closed-form rate there (PyTorch's
    /// `step(epoch)`; [`SequentialLR`] uses it with 0 at milestones).
    fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64);
    /// Takes back the epoch counted by the constructor's initial step
    /// (PyTorch's `SequentialLR.recursive_undo`); the rate is left alone.
    fn undo_initial_step(&mut self);
    /// Performs the constructor's initial step again (PyTorch's `_initial_step`).
    fn initial_step(&mut self, opt: &mut dyn Optimizer);
}

/// What every single scheduler tracks (PyTorch's `LRScheduler` fields).
#[derive(Clone, Debug)]
struct Core {
    /// Each group's base rate (PyTorch's `base_lrs`).
    base_lrs: Vec<f64>,
    last_epoch: i64,
    last_lrs: Vec<f64>,
}

/// Each group's `initial_lr`, or its current rate where none was recorded.
fn initial_or_current(opt: &dyn Optimizer) -> Vec<f64> {
    opt.group_lrs()
        .into_iter()
        .zip(opt.group_initial_lrs())
        .map(|(lr, initial)| initial.unwrap_or(lr))
        .collect()
}

impl Core {
    /// Records each group's `initial_lr` where no scheduler did yet
    /// (`group.setdefault("initial_lr", group["lr"])`) and uses them as bases.
    fn new(opt: &mut dyn Optimizer) -> Core {
        let base_lrs = initial_or_current(opt);
        if opt.group_initial_lrs().iter().any(Option::is_none) {
            opt.set_group_initial_lrs(&base_lrs);
        }
        Core {
            base_lrs,
            last_epoch: -1,
            last_lrs: opt.group_lrs(),
        }
    }

    fn apply(&mut self, opt: &mut dyn Optimizer, lrs: &[f64]) {
        opt.set_group_lrs(lrs);
        self.last_lrs = opt.group_lrs();
    }

    fn last_lr(&self) -> f64 {
        self.last_lrs.first().copied().unwrap_or(0.0)
    }
}

/// Implements [`LrScheduler`] for a type with a `core: Core` field and the
/// methods `chainable(&self, group, lr, base_lr, initial) -> f64` (PyTorch's
/// `get_lr` for one group at `core.last_epoch` given its current rate;
/// `initial` is PyTorch's `_is_initial`) and
/// `closed_form(&self, group, base_lr) -> f64`.
macro_rules! single_scheduler {
    ($t:ty) => {
        impl $t {
            /// Each group's new rate from `rule(group, lr, base_lr)`.
            fn each(
                &self,
                opt: &dyn Optimizer,
                rule: impl Fn(&Self, usize, f64, f64) -> f64,
            ) -> Vec<f64> {
                opt.group_lrs()
                    .into_iter()
                    .zip(&self.core.base_lrs)
                    .enumerate()
                    .map(|(g, (lr, &base))| rule(self, g, lr, base))
                    .collect()
            }
        }

        impl LrScheduler for $t {
            fn step(&mut self, opt: &mut dyn Optimizer) {
                self.core.last_epoch += 1;
                let lrs = self.each(opt, |s, g, lr, base| s.chainable(g, lr, base, false));
                self.core.apply(opt, &lrs);
            }
            fn get_last_lr(&self) -> f64 {
                self.core.last_lr()
            }
            fn get_last_lrs(&self) -> Vec<f64> {
                self.core.last_lrs.clone()
            }
            fn last_epoch(&self) -> i64 {
                self.core.last_epoch
            }
            fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
                self.core.last_epoch = epoch;
                let lrs = self.each(opt, |s, g, _, base| s.closed_form(g, base));
                self.core.apply(opt, &lrs);
            }
            fn undo_initial_step(&mut self) {
                self.core.last_epoch -= 1;
            }
            fn initial_step(&mut self, opt: &mut dyn Optimizer) {
                self.core.last_epoch += 1;
                let lrs = self.each(opt, |s, g, lr, base| s.chainable(g, lr, base, true));
                self.core.apply(opt, &lrs);
            }
        }
    };
}
use single_scheduler;

/// Builds a scheduler: the core, then the initial step.
fn construct<S: LrScheduler>(opt: &mut dyn Optimizer, make: impl FnOnce(Core) -> S) -> S {
    let mut s = make(Core::new(opt));
    s.initial_step(opt);
    s
}

/// `torch.optim.lr_scheduler.StepLR`: multiplies the rate by `gamma` every
/// `step_size` epochs (`lr = base_lr * gamma^(epoch / step_size)`).
///
/// ```
/// use wgrad_autograd::optim::{StepLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = StepLR::new(&mut opt, 2, 0.5)?;
/// let mut lrs = Vec::new();
/// for _ in 0..29 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.1, 0.05, 0.05, 0.025]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct StepLR {
    /// Epochs between decays (>= 1).
    pub step_size: usize,
    /// Decay factor (PyTorch's default is 0.1).
    pub gamma: f64,
    core: Core,
}

impl StepLR {
    /// Attaches to `opt` and performs the initial step. `step_size` must be >= 1.
    pub fn new(opt: &mut dyn Optimizer, step_size: usize, gamma: f64) -> Result<StepLR> {
        if step_size == 0 {
            return Err(Error::invalid("StepLR", "step_size must be at least 1"));
        }
        Ok(construct(opt, |core| StepLR {
            step_size,
            gamma,
            core,
        }))
    }

    fn chainable(&self, _group: usize, lr: f64, _base_lr: f64, _initial: bool) -> f64 {
        let e = self.core.last_epoch;
        if e == 0 || e.rem_euclid(self.step_size as i64) != 0 {
            lr
        } else {
            lr * self.gamma
        }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        let k = self.core.last_epoch.div_euclid(self.step_size as i64);
        base_lr * self.gamma.powf(k as f64)
    }
}
single_scheduler!(StepLR);

/// `torch.optim.lr_scheduler.ExponentialLR`: multiplies the rate by
/// `gamma` every epoch (`lr = base_lr * gamma^epoch`).
///
/// ```
/// use wgrad_autograd::optim::{ExponentialLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = ExponentialLR::new(&mut opt, 0.5)?;
/// let mut lrs = Vec::new();
/// for _ in 0..18 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.05, 0.025]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ExponentialLR {
    /// Decay factor per epoch.
    pub gamma: f64,
    core: Core,
}

impl ExponentialLR {
    /// Attaches to `opt` and performs the initial step.
    pub fn new(opt: &mut dyn Optimizer, gamma: f64) -> Result<ExponentialLR> {
        Ok(construct(opt, |core| ExponentialLR { gamma, core }))
    }

    fn chainable(&self, _group: usize, lr: f64, _base_lr: f64, initial: bool) -> f64 {
        if initial { lr } else { lr * self.gamma }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        base_lr * self.gamma.powf(self.core.last_epoch as f64)
    }
}
single_scheduler!(ExponentialLR);

/// `torch.optim.lr_scheduler.CosineAnnealingLR`: anneals from `base_lr` to
/// `eta_min` over `t_max` epochs along half a cosine
/// (`lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2`),
/// computed recursively as PyTorch does; past `t_max` it rises again.
///
/// ```
/// use wgrad_autograd::optim::{CosineAnnealingLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = CosineAnnealingLR::new(&mut opt, 4, 0.0)?;
/// let mut lrs = Vec::new();
/// for _ in 0..54 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.085355339059327, 0.05, 0.014644660940673, 0.0]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CosineAnnealingLR {
    /// Half period in epochs (>= 1).
    pub t_max: usize,
    /// Lowest rate.
    pub eta_min: f64,
    core: Core,
}

impl CosineAnnealingLR {
    /// Attaches to `opt` and performs the initial step. `t_max` must be >= 1.
    pub fn new(opt: &mut dyn Optimizer, t_max: usize, eta_min: f64) -> Result<CosineAnnealingLR> {
        if t_max == 0 {
            return Err(Error::invalid(
                "CosineAnnealingLR",
                "t_max must be at least 1",
            ));
        }
        Ok(construct(opt, |core| CosineAnnealingLR {
            t_max,
            eta_min,
            core,
        }))
    }

    fn chainable(&self, _group: usize, lr: f64, base: f64, initial: bool) -> f64 {
        let (e, t, eta_min) = (self.core.last_epoch, self.t_max as i64, self.eta_min);
        let t_f = t as f64;
        if initial {
            lr
        } else if (e - 1 - t).rem_euclid(2 * t) == 0 {
            // At the bottom of the cosine the ratio form divides by zero;
            // PyTorch adds the first half-step of the rise instead.
            lr + (base - eta_min) * (1.0 - (PI / t_f).cos()) / 2.0
        } else {
            (1.0 + (PI * e as f64 / t_f).cos()) / (1.0 + (PI * (e - 1) as f64 / t_f).cos())
                * (lr - eta_min)
                + eta_min
        }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        let e = self.core.last_epoch as f64;
        self.eta_min + (base_lr - self.eta_min) * (1.0 + (PI * e / self.t_max as f64).cos()) / 2.0
    }
}
single_scheduler!(CosineAnnealingLR);

/// `torch.optim.lr_scheduler.LinearLR`: scales the rate by a factor moving
/// linearly from `start_factor` to `end_factor` over `total_iters` epochs,
/// then keeps it (`lr = base_lr * (start + (end - start) * min(epoch, total) / total)`).
/// With `end_factor = 1` this is the usual linear warm-up.
///
/// ```
/// use wgrad_autograd::optim::{LinearLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = LinearLR::new(&mut opt, 0.25, 1.0, 3)?;
/// let mut lrs = Vec::new();
/// for _ in 0..30 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.025, 0.05, 0.075, 0.1, 0.1]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LinearLR {
    /// Factor at epoch 0, in `(0, 1]` (PyTorch's default 1/3).
    pub start_factor: f64,
    /// Factor from `total_iters` on, in `[0, 1]` (default 1).
    pub end_factor: f64,
    /// Epochs of the ramp (>= 1; default 5).
    pub total_iters: usize,
    core: Core,
}

/// Linear warm-up: [`LinearLR`] under the name used in training recipes.
pub type LinearWarmup = LinearLR;

impl LinearLR {
    /// Attaches to `opt` and performs the initial step (which multiplies
    /// the rate by `start_factor`).
    pub fn new(
        opt: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<LinearLR> {
        if !(start_factor > 0.0 && start_factor <= 1.0) {
            return Err(Error::invalid(
                "LinearLR",
                format!("start_factor must be in (0, 1], got {start_factor}"),
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(Error::invalid(
                "LinearLR",
                format!("end_factor must be in [0, 1], got {end_factor}"),
            ));
        }
        Ok(construct(opt, |core| LinearLR {
            start_factor,
            end_factor,
            total_iters,
            core,
        }))
    }

    fn chainable(&self, _group: usize, lr: f64, _base_lr: f64, initial: bool) -> f64 {
        let e = self.core.last_epoch;
        let total = self.total_iters as i64;
        let (start, end) = (self.start_factor, self.end_factor);
        if e == 0 {
            lr * start
        } else if initial || e > total {
            lr
        } else {
            lr * (1.0 + (end - start) / (total as f64 * start + (e - 1) as f64 * (end - start)))
        }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        if self.total_iters == 0 {
            // PyTorch accepts 0: the start factor, kept for good.
            return base_lr * self.start_factor;
        }
        let total = self.total_iters as f64;
        let e = self.core.last_epoch.min(self.total_iters as i64) as f64;
        base_lr * (self.start_factor + (self.end_factor - self.start_factor) * e / total)
    }
}
single_scheduler!(LinearLR);
