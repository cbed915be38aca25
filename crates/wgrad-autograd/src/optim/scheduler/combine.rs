//! Schedulers that drive others: [`SequentialLR`] and [`ChainedScheduler`].

use wgrad_core::{Error, Result};

use super::{LrScheduler, initial_or_current};
use crate::optim::Optimizer;

/// `torch.optim.lr_scheduler.SequentialLR`: runs `schedulers[i]` from
/// `milestones[i - 1]` on (the first from the start), restarting each at
/// its closed-form epoch 0 when its milestone is reached.
pub struct SequentialLR {
    schedulers: Vec<Box<dyn LrScheduler>>,
    milestones: Vec<i64>,
    last_epoch: i64,
    last_lrs: Vec<f64>,
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
        let initial = initial_or_current(opt);
        opt.set_group_lrs(&initial);
        for s in &mut schedulers {
            s.undo_initial_step();
        }
        schedulers[0].initial_step(opt);
        let last_lrs = schedulers[0].get_last_lrs();
        let milestones = milestones.into_iter().map(|m| m as i64).collect();
        Ok(SequentialLR {
            schedulers,
            milestones,
            last_epoch: 0,
            last_lrs,
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
        self.last_lrs = scheduler.get_last_lrs();
    }
    fn get_last_lr(&self) -> f64 {
        self.last_lrs.first().copied().unwrap_or(0.0)
    }
    fn get_last_lrs(&self) -> Vec<f64> {
        self.last_lrs.clone()
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
        self.last_lrs = self.schedulers[idx].get_last_lrs();
    }
    fn undo_initial_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_initial_step();
        }
    }
    fn initial_step(&mut self, opt: &mut dyn Optimizer) {
        self.last_epoch = 0;
        self.schedulers[0].initial_step(opt);
        self.last_lrs = self.schedulers[0].get_last_lrs();
    }
}

/// `torch.optim.lr_scheduler.ChainedScheduler`: steps every scheduler each
/// epoch, so their (chainable) effects multiply.
///
/// ```
/// use wgrad_autograd::optim::{ChainedScheduler, ExponentialLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let a = ExponentialLR::new(&mut opt, 0.5)?;
/// let b = ExponentialLR::new(&mut opt, 0.5)?;
/// let mut sched = ChainedScheduler::new(&opt, vec![Box::new(a), Box::new(b)])?;
/// let mut lrs = Vec::new();
/// for _ in 0..21 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.025, 0.00625]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct ChainedScheduler {
    schedulers: Vec<Box<dyn LrScheduler>>,
    last_lrs: Vec<f64>,
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
            last_lrs: opt.group_lrs(),
        })
    }
}

impl LrScheduler for ChainedScheduler {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        for s in &mut self.schedulers {
            s.step(opt);
        }
        self.last_lrs = opt.group_lrs();
    }
    fn get_last_lr(&self) -> f64 {
        self.last_lrs.first().copied().unwrap_or(0.0)
    }
    fn get_last_lrs(&self) -> Vec<f64> {
        self.last_lrs.clone()
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
        self.last_lrs = opt.group_lrs();
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
        self.last_lrs = opt.group_lrs();
    }
}
