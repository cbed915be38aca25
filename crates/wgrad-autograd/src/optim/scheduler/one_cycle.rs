//! [`OneCycleLR`]: the 1cycle policy (Smith & Topin, super-convergence).

use std::f64::consts::PI;

use wgrad_core::{Error, Result};

use super::{Core, LrScheduler};
use crate::optim::Optimizer;

const OP: &str = "OneCycleLR";

/// How [`OneCycleLR`] moves between two rates within a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnealStrategy {
    /// Half a cosine (PyTorch's `"cos"`, the default).
    Cos,
    /// A straight line (`"linear"`).
    Linear,
}

impl AnnealStrategy {
    /// The value `pct` of the way from `start` to `end`, as PyTorch's
    /// `_annealing_cos`/`_annealing_linear` compute it.
    fn anneal(self, start: f64, end: f64, pct: f64) -> f64 {
        match self {
            AnnealStrategy::Cos => {
                let cos_out = (PI * pct).cos() + 1.0;
                end + (start - end) / 2.0 * cos_out
            }
            AnnealStrategy::Linear => (end - start) * pct + start,
        }
    }
}

/// The settings of [`OneCycleLR`], with `torch.optim.lr_scheduler.OneCycleLR`'s defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct OneCycleConfig {
    /// Peak rate: one value for every group, or one per group.
    pub max_lr: Vec<f64>,
    /// Steps in the cycle (>= 1; PyTorch's `total_steps`, or
    /// `epochs * steps_per_epoch`).
    pub total_steps: usize,
    /// Fraction of the cycle spent raising the rate, in `[0, 1]`. Default 0.3.
    pub pct_start: f64,
    /// Cosine (default) or linear annealing.
    pub anneal_strategy: AnnealStrategy,
    /// Cycle the momentum (SGD/RMSprop `momentum`, Adam `beta1`) inversely
    /// to the rate, between `base_momentum` and `max_momentum`. Default on,
    /// which needs an optimizer with a momentum (not Adagrad).
    pub cycle_momentum: bool,
    /// Lowest momentum. Default 0.85.
    pub base_momentum: f64,
    /// Highest momentum. Default 0.95.
    pub max_momentum: f64,
    /// `initial_lr = max_lr / div_factor`. Default 25.
    pub div_factor: f64,
    /// `min_lr = initial_lr / final_div_factor`. Default 1e4.
    pub final_div_factor: f64,
    /// Three phases (up, down to `initial_lr`, then down to `min_lr`)
    /// instead of two (up, down to `min_lr`). Default off.
    pub three_phase: bool,
}

impl OneCycleConfig {
    /// The defaults with peak rate `max_lr` (every group) over `total_steps` steps.
    pub fn new(max_lr: f64, total_steps: usize) -> Self {
        OneCycleConfig {
            max_lr: vec![max_lr],
            total_steps,
            pct_start: 0.3,
            anneal_strategy: AnnealStrategy::Cos,
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }
}

/// One phase of the cycle: it ends at `end_step` and goes from the
/// `start` to the `end` rate of a group (and from the start to the end
/// momentum: `true` is `max_momentum`, `false` `base_momentum`).
#[derive(Clone, Copy, Debug)]
struct Phase {
    end_step: f64,
    start_lr: Level,
    end_lr: Level,
    start_momentum: bool,
    end_momentum: bool,
}

/// A named rate of a group (`group["initial_lr"]`, `["max_lr"]`, `["min_lr"]`).
#[derive(Clone, Copy, Debug)]
enum Level {
    Initial,
    Max,
    Min,
}

/// A group's rates.
#[derive(Clone, Copy, Debug)]
struct Group {
    initial_lr: f64,
    max_lr: f64,
    min_lr: f64,
}

impl Group {
    fn lr(&self, level: Level) -> f64 {
        match level {
            Level::Initial => self.initial_lr,
            Level::Max => self.max_lr,
            Level::Min => self.min_lr,
        }
    }
}

/// `torch.optim.lr_scheduler.OneCycleLR`: raises the rate from
/// `max_lr / div_factor` to `max_lr` over the first `pct_start` of
/// `total_steps`, then anneals it to `initial_lr / final_div_factor`
/// (three-phase: back to the initial rate first), stepped once per batch.
/// The momentum moves the opposite way when `cycle_momentum` is on.
///
/// It overwrites every group's `initial_lr` (as PyTorch does), so build it
/// first when combining it with other schedulers. Stepping past
/// `total_steps` is an error in PyTorch: [`try_step`](Self::try_step)
/// returns it, while [`LrScheduler::step`] leaves the rate as it is.
///
/// ```
/// use wgrad_autograd::optim::{LrScheduler, OneCycleLR, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let config = SgdConfig { momentum: 0.9, ..SgdConfig::new(0.1) };
/// let mut opt = Sgd::new(vec![w], config)?;
/// let mut sched = OneCycleLR::new(&mut opt, 1.0, 10)?;
/// assert!((opt.lr() - 1.0 / 25.0).abs() < 1e-12); // max_lr / div_factor
/// let mut peak: f64 = 0.0;
/// for _ in 0..9 {
///     sched.step(&mut opt); // once per batch
///     peak = peak.max(opt.lr());
/// }
/// assert!((peak - 1.0).abs() < 1e-12);
/// assert!(opt.lr() < 1e-4); // initial_lr / final_div_factor at the end
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OneCycleLR {
    config: OneCycleConfig,
    phases: Vec<Phase>,
    groups: Vec<Group>,
    core: Core,
}

impl OneCycleLR {
    /// Attaches to `opt` with the defaults ([`OneCycleConfig::new`]).
    pub fn new(opt: &mut dyn Optimizer, max_lr: f64, total_steps: usize) -> Result<OneCycleLR> {
        OneCycleLR::with_config(opt, OneCycleConfig::new(max_lr, total_steps))
    }

    /// Attaches to `opt`: sets every group's `initial_lr` (and, with
    /// `cycle_momentum`, its momentum to `max_momentum`), then performs the
    /// initial step. Bad settings are `InvalidArgument` naming the value.
    pub fn with_config(opt: &mut dyn Optimizer, config: OneCycleConfig) -> Result<OneCycleLR> {
        let c = &config;
        if c.total_steps == 0 {
            return Err(Error::invalid(
                OP,
                "Expected positive integer total_steps, but got 0",
            ));
        }
        if !(0.0..=1.0).contains(&c.pct_start) {
            return Err(Error::invalid(
                OP,
                format!(
                    "Expected float between 0 and 1 pct_start, but got {}",
                    c.pct_start
                ),
            ));
        }
        let n = opt.num_param_groups();
        let max_lrs = match c.max_lr.len() {
            1 => vec![c.max_lr[0]; n],
            k if k == n => c.max_lr.clone(),
            k => {
                return Err(Error::invalid(
                    OP,
                    format!("expected {n} values for max_lr, got {k}"),
                ));
            }
        };
        let groups: Vec<Group> = max_lrs
            .iter()
            .map(|&max_lr| {
                let initial_lr = max_lr / c.div_factor;
                Group {
                    initial_lr,
                    max_lr,
                    min_lr: initial_lr / c.final_div_factor,
                }
            })
            .collect();
        if c.cycle_momentum {
            if opt.group_momentums().is_none() {
                return Err(Error::invalid(
                    OP,
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
                ));
            }
            opt.set_group_momentums(&vec![c.max_momentum; n]);
        }
        let initial: Vec<f64> = groups.iter().map(|g| g.initial_lr).collect();
        opt.set_group_initial_lrs(&initial);
        let total = c.total_steps as f64;
        let up = c.pct_start * total - 1.0;
        let phases = if c.three_phase {
            vec![
                Phase {
                    end_step: up,
                    start_lr: Level::Initial,
                    end_lr: Level::Max,
                    start_momentum: true,
                    end_momentum: false,
                },
                Phase {
                    end_step: 2.0 * c.pct_start * total - 2.0,
                    start_lr: Level::Max,
                    end_lr: Level::Initial,
                    start_momentum: false,
                    end_momentum: true,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: Level::Initial,
                    end_lr: Level::Min,
                    start_momentum: true,
                    end_momentum: true,
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: up,
                    start_lr: Level::Initial,
                    end_lr: Level::Max,
                    start_momentum: true,
                    end_momentum: false,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: Level::Max,
                    end_lr: Level::Min,
                    start_momentum: false,
                    end_momentum: true,
                },
            ]
        };
        let mut s = OneCycleLR {
            config,
            phases,
            groups,
            core: Core::new(opt),
        };
        s.initial_step(opt);
        Ok(s)
    }

    /// The settings.
    pub fn config(&self) -> &OneCycleConfig {
        &self.config
    }

    /// One step, or PyTorch's error past `total_steps` (the rate is then
    /// left alone and the step not counted).
    pub fn try_step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        let next = self.core.last_epoch + 1;
        if next > self.config.total_steps as i64 {
            return Err(Error::invalid(
                OP,
                format!(
                    "Tried to step {next} times. The specified number of total steps is {}",
                    self.config.total_steps
                ),
            ));
        }
        self.core.last_epoch = next;
        self.apply(opt);
        Ok(())
    }

    /// PyTorch's `get_lr` at `core.last_epoch`: sets every group's rate and,
    /// with `cycle_momentum`, its momentum.
    fn apply(&mut self, opt: &mut dyn Optimizer) {
        let step = self.core.last_epoch as f64;
        let strategy = self.config.anneal_strategy;
        let (base_m, max_m) = (self.config.base_momentum, self.config.max_momentum);
        let momentum = |max: bool| if max { max_m } else { base_m };
        let mut lrs = Vec::with_capacity(self.groups.len());
        let mut momentums = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let mut start_step = 0.0;
            let last = self.phases.len() - 1;
            for (i, phase) in self.phases.iter().enumerate() {
                if step <= phase.end_step || i == last {
                    let pct = (step - start_step) / (phase.end_step - start_step);
                    lrs.push(strategy.anneal(g.lr(phase.start_lr), g.lr(phase.end_lr), pct));
                    momentums.push(strategy.anneal(
                        momentum(phase.start_momentum),
                        momentum(phase.end_momentum),
                        pct,
                    ));
                    break;
                }
                start_step = phase.end_step;
            }
        }
        if self.config.cycle_momentum {
            opt.set_group_momentums(&momentums);
        }
        self.core.apply(opt, &lrs);
    }
}

impl LrScheduler for OneCycleLR {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        // Past the end PyTorch raises; the trait's step has no error, so
        // it holds the rate (try_step reports it).
        let _ = self.try_step(opt);
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
    /// Jumps to step `epoch` (clamped to `0..=total_steps`).
    fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
        self.core.last_epoch = epoch.clamp(0, self.config.total_steps as i64);
        self.apply(opt);
    }
    fn undo_initial_step(&mut self) {
        self.core.last_epoch -= 1;
    }
    fn initial_step(&mut self, opt: &mut dyn Optimizer) {
        self.core.last_epoch += 1;
        self.apply(opt);
    }
}
