//! Learning-rate schedulers with `torch.optim.lr_scheduler` semantics.
//!
//! As in PyTorch, a scheduler's constructor performs the initial step (so
//! e.g. [`LinearLR`] lowers the rate before the first optimizer step), each
//! [`LrScheduler::step`] advances one epoch using the *chainable* form
//! (the new rate is computed from the optimizer's current rate, so several
//! schedulers can act on one optimizer, see [`ChainedScheduler`]), and
//! [`SequentialLR`] switches between schedulers at milestones, restarting
//! each one from its closed form at epoch 0. `base_lr` is the optimizer's
//! `initial_lr`, recorded by the first scheduler built on it.
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

/// A learning-rate schedule driving an [`Optimizer`]'s rate.
pub trait LrScheduler {
    /// Advances one epoch and writes the new rate into `opt` (call it after
    /// `opt.step()`, as in PyTorch).
    fn step(&mut self, opt: &mut dyn Optimizer);
    /// The rate this scheduler set last.
    fn get_last_lr(&self) -> f64;
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
    base_lr: f64,
    last_epoch: i64,
    last_lr: f64,
}

impl Core {
    /// Records the optimizer's `initial_lr` if no scheduler did yet
    /// (`group.setdefault("initial_lr", group["lr"])`) and uses it as base.
    fn new(opt: &mut dyn Optimizer) -> Core {
        let base_lr = match opt.initial_lr() {
            Some(lr) => lr,
            None => {
                let lr = opt.lr();
                opt.set_initial_lr(lr);
                lr
            }
        };
        Core {
            base_lr,
            last_epoch: -1,
            last_lr: opt.lr(),
        }
    }

    fn apply(&mut self, opt: &mut dyn Optimizer, lr: f64) {
        opt.set_lr(lr);
        self.last_lr = opt.lr();
    }
}

/// Implements [`LrScheduler`] for a type with a `core: Core` field and the
/// methods `chainable(&self, lr, initial) -> f64` (PyTorch's `get_lr` at
/// `core.last_epoch` given the current rate; `initial` is PyTorch's
/// `_is_initial`) and `closed_form(&self) -> f64`.
macro_rules! single_scheduler {
    ($t:ty) => {
        impl LrScheduler for $t {
            fn step(&mut self, opt: &mut dyn Optimizer) {
                self.core.last_epoch += 1;
                let lr = self.chainable(opt.lr(), false);
                self.core.apply(opt, lr);
            }
            fn get_last_lr(&self) -> f64 {
                self.core.last_lr
            }
            fn last_epoch(&self) -> i64 {
                self.core.last_epoch
            }
            fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
                self.core.last_epoch = epoch;
                let lr = self.closed_form();
                self.core.apply(opt, lr);
            }
            fn undo_initial_step(&mut self) {
                self.core.last_epoch -= 1;
            }
            fn initial_step(&mut self, opt: &mut dyn Optimizer) {
                self.core.last_epoch += 1;
                let lr = self.chainable(opt.lr(), true);
                self.core.apply(opt, lr);
            }
        }
    };
}

/// Builds a scheduler: the core, then the initial step.
fn construct<S: LrScheduler>(opt: &mut dyn Optimizer, make: impl FnOnce(Core) -> S) -> S {
    let mut s = make(Core::new(opt));
    s.initial_step(opt);
    s
}

/// `torch.optim.lr_scheduler.StepLR`: multiplies the rate by `gamma` every
/// `step_size` epochs (`lr = base_lr * gamma^(epoch / step_size)`).
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

    fn chainable(&self, lr: f64, _initial: bool) -> f64 {
        let e = self.core.last_epoch;
        if e == 0 || e.rem_euclid(self.step_size as i64) != 0 {
            lr
        } else {
            lr * self.gamma
        }
    }

    fn closed_form(&self) -> f64 {
        let k = self.core.last_epoch.div_euclid(self.step_size as i64);
        self.core.base_lr * self.gamma.powf(k as f64)
    }
}
single_scheduler!(StepLR);

/// `torch.optim.lr_scheduler.ExponentialLR`: multiplies the rate by
/// `gamma` every epoch (`lr = base_lr * gamma^epoch`).
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

    fn chainable(&self, lr: f64, initial: bool) -> f64 {
        if initial { lr } else { lr * self.gamma }
    }

    fn closed_form(&self) -> f64 {
        self.core.base_lr * self.gamma.powf(self.core.last_epoch as f64)
    }
}
single_scheduler!(ExponentialLR);

/// `torch.optim.lr_scheduler.CosineAnnealingLR`: anneals from `base_lr` to
/// `eta_min` over `t_max` epochs along half a cosine
/// (`lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2`),
/// computed recursively as PyTorch does; past `t_max` it rises again.
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

    fn chainable(&self, lr: f64, initial: bool) -> f64 {
        let (e, t, base, eta_min) = (
            self.core.last_epoch,
            self.t_max as i64,
            self.core.base_lr,
            self.eta_min,
        );
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

    fn closed_form(&self) -> f64 {
        let e = self.core.last_epoch as f64;
        self.eta_min
            + (self.core.base_lr - self.eta_min) * (1.0 + (PI * e / self.t_max as f64).cos()) / 2.0
    }
}
single_scheduler!(CosineAnnealingLR);

/// `torch.optim.lr_scheduler.LinearLR`: scales the rate by a factor moving
/// linearly from `start_factor` to `end_factor` over `total_iters` epochs,
/// then keeps it (`lr = base_lr * (start + (end - start) * min(epoch, total) / total)`).
/// With `end_factor = 1` this is the usual linear warm-up.
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
        if total_iters == 0 {
            return Err(Error::invalid("LinearLR", "total_iters must be at least 1"));
        }
        Ok(construct(opt, |core| LinearLR {
            start_factor,
            end_factor,
            total_iters,
            core,
        }))
    }

    fn chainable(&self, lr: f64, initial: bool) -> f64 {
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

    fn closed_form(&self) -> f64 {
        let total = self.total_iters as f64;
        let e = self.core.last_epoch.min(self.total_iters as i64) as f64;
        self.core.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * e / total)
    }
}
single_scheduler!(LinearLR);

/// `torch.optim.lr_scheduler.SequentialLR`: runs `schedulers[i]` from
/// `milestones[i - 1]` on (the first from the start), restarting each at
/// its closed-form epoch 0 when its milestone is reached.
pub struct SequentialLR {
    schedulers: Vec<Box<dyn LrScheduler>>,
    milestones: Vec<i64>,
    last_epoch: i64,
    last_lr: f64,
}

impl SequentialLR {
    /// Takes over `schedulers` (already attached to `opt`): resets the rate
    /// to the optimizer's `initial_lr`, undoes their initial steps and
    /// redoes the first one's. Needs one milestone fewer than schedulers,
    /// strictly increasing.
    pub fn new(
        opt: &mut dyn Optimizer,
        mut schedulers: Vec<Box<dyn LrScheduler>>,
        milestones: Vec<usize>,
    ) -> Result<SequentialLR> {
        const OP: &str = "SequentialLR";
        if schedulers.is_empty() {
            return Err(Error::invalid(OP, "expects at least one scheduler"));
        }
        if milestones.len() + 1 != schedulers.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "expects one milestone fewer than schedulers, got {} schedulers and {} milestones",
                    schedulers.len(),
                    milestones.len()
                ),
            ));
        }
        if milestones.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(
                OP,
                format!("milestones must be strictly increasing, got {milestones:?}"),
            ));
        }
        let initial = opt.initial_lr().unwrap_or_else(|| opt.lr());
        opt.set_lr(initial);
        for s in &mut schedulers {
            s.undo_initial_step();
        }
        schedulers[0].initial_step(opt);
        let last_lr = schedulers[0].get_last_lr();
        let milestones = milestones.into_iter().map(|m| m as i64).collect();
        Ok(SequentialLR {
            schedulers,
            milestones,
            last_epoch: 0,
            last_lr,
        })
    }

    /// The index of the scheduler in charge at `epoch` (Python's `bisect_right`).
    fn current(&self, epoch: i64) -> usize {
        self.milestones.partition_point(|&m| m <= epoch)
    }
}

impl LrScheduler for SequentialLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        self.last_epoch += 1;
        let idx = self.current(self.last_epoch);
        let scheduler = &mut self.schedulers[idx];
        if idx > 0 && self.milestones[idx - 1] == self.last_epoch {
            scheduler.step_to(opt, 0);
        } else {
            scheduler.step(opt);
        }
        self.last_lr = scheduler.get_last_lr();
    }
    fn get_last_lr(&self) -> f64 {
        self.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }
    /// Hands `epoch` to the scheduler in charge then, counted from its milestone.
    fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
        self.last_epoch = epoch;
        let idx = self.current(epoch);
        let start = if idx == 0 {
            0
        } else {
            self.milestones[idx - 1]
        };
        self.schedulers[idx].step_to(opt, epoch - start);
        self.last_lr = self.schedulers[idx].get_last_lr();
    }
    fn undo_initial_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_initial_step();
        }
    }
    fn initial_step(&mut self, opt: &mut dyn Optimizer) {
        self.last_epoch = 0;
        self.schedulers[0].initial_step(opt);
        self.last_lr = self.schedulers[0].get_last_lr();
    }
}

/// `torch.optim.lr_scheduler.ChainedScheduler`: steps every scheduler each
/// epoch, so their (chainable) effects multiply.
pub struct ChainedScheduler {
    schedulers: Vec<Box<dyn LrScheduler>>,
    last_lr: f64,
}

impl ChainedScheduler {
    /// Chains `schedulers` (already attached to `opt`).
    pub fn new(
        opt: &dyn Optimizer,
        schedulers: Vec<Box<dyn LrScheduler>>,
    ) -> Result<ChainedScheduler> {
        if schedulers.is_empty() {
            return Err(Error::invalid(
                "ChainedScheduler",
                "expects at least one scheduler",
            ));
        }
        Ok(ChainedScheduler {
            schedulers,
            last_lr: opt.lr(),
        })
    }
}

impl LrScheduler for ChainedScheduler {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        for s in &mut self.schedulers {
            s.step(opt);
        }
        self.last_lr = opt.lr();
    }
    fn get_last_lr(&self) -> f64 {
        self.last_lr
    }
    fn last_epoch(&self) -> i64 {
        self.schedulers
            .iter()
            .map(|s| s.last_epoch())
            .max()
            .unwrap_or(0)
    }
    /// Jumps every scheduler to `epoch` in order (closed forms do not
    /// compose, so the last scheduler's rate is the one that stays).
    fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
        for s in &mut self.schedulers {
            s.step_to(opt, epoch);
        }
        self.last_lr = opt.lr();
    }
    fn undo_initial_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_initial_step();
        }
    }
    fn initial_step(&mut self, opt: &mut dyn Optimizer) {
        for s in &mut self.schedulers {
            s.initial_step(opt);
        }
        self.last_lr = opt.lr();
    }
}
