//! [`MultiStepLR`], [`LambdaLR`] and [`CosineAnnealingWarmRestarts`].

use std::f64::consts::PI;
use std::sync::Arc;

use wgrad_core::{Error, Result};

use super::{Core, LrScheduler, construct, single_scheduler};
use crate::optim::Optimizer;

/// `torch.optim.lr_scheduler.MultiStepLR`: multiplies the rate by `gamma`
/// at each milestone epoch (`lr = base_lr * gamma^(milestones <= epoch)`; a
/// milestone listed twice decays twice).
///
/// ```
/// use wgrad_autograd::optim::{MultiStepLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = MultiStepLR::new(&mut opt, &[2, 4], 0.1)?;
/// let mut lrs = Vec::new();
/// for _ in 0..29 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.1, 0.01, 0.01, 0.001]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MultiStepLR {
    /// The epochs at which the rate decays, sorted (repeats kept).
    milestones: Vec<i64>,
    /// Decay factor (PyTorch's default is 0.1).
    pub gamma: f64,
    core: Core,
}

impl MultiStepLR {
    /// Attaches to `opt` and performs the initial step (a milestone 0
    /// decays at once, as in PyTorch).
    pub fn new(opt: &mut dyn Optimizer, milestones: &[usize], gamma: f64) -> Result<MultiStepLR> {
        let mut milestones: Vec<i64> = milestones
            .iter()
            .map(|&m| {
                i64::try_from(m).map_err(|_| {
                    Error::invalid("MultiStepLR", format!("milestone {m} is too large"))
                })
            })
            .collect::<Result<_>>()?;
        milestones.sort_unstable();
        Ok(construct(opt, |core| MultiStepLR {
            milestones,
            gamma,
            core,
        }))
    }

    /// The milestones, sorted.
    pub fn milestones(&self) -> &[i64] {
        &self.milestones
    }

    fn chainable(&self, _group: usize, lr: f64, _base_lr: f64, _initial: bool) -> f64 {
        let e = self.core.last_epoch;
        let count = self.milestones.iter().filter(|&&m| m == e).count();
        if count == 0 {
            lr
        } else {
            // Python's `gamma ** count`: C's pow, as powf calls.
            lr * self.gamma.powf(count as f64)
        }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        let e = self.core.last_epoch;
        let passed = self.milestones.partition_point(|&m| m <= e);
        base_lr * self.gamma.powf(passed as f64)
    }
}
single_scheduler!(MultiStepLR);

/// A learning-rate multiplier of [`LambdaLR`]: the epoch to the factor.
pub type LrLambda = Arc<dyn Fn(i64) -> f64 + Send + Sync>;

/// `torch.optim.lr_scheduler.LambdaLR`: `lr = base_lr * lambda(epoch)`, with
/// one function for every group or one per group.
///
/// ```
/// use wgrad_autograd::optim::{LambdaLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = LambdaLR::new(&mut opt, |epoch| 1.0 / (epoch + 1) as f64)?;
/// let mut lrs = Vec::new();
/// for _ in 0..22 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.05, 0.1 / 3.0]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone)]
pub struct LambdaLR {
    lambdas: Vec<LrLambda>,
    core: Core,
}

impl std::fmt::Debug for LambdaLR {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LambdaLR")
            .field("lambdas", &self.lambdas.len())
            .field("core", &self.core)
            .finish()
    }
}

impl LambdaLR {
    /// Attaches to `opt` with `lr_lambda` for every group and performs the
    /// initial step (`lr = base_lr * lr_lambda(0)`).
    pub fn new(
        opt: &mut dyn Optimizer,
        lr_lambda: impl Fn(i64) -> f64 + Send + Sync + 'static,
    ) -> Result<LambdaLR> {
        let f: LrLambda = Arc::new(lr_lambda);
        let lambdas = vec![f; opt.num_param_groups()];
        LambdaLR::with_lambdas(opt, lambdas)
    }

    /// Attaches to `opt` with one function per parameter group (a count
    /// other than the number of groups is `InvalidArgument`).
    pub fn with_lambdas(opt: &mut dyn Optimizer, lambdas: Vec<LrLambda>) -> Result<LambdaLR> {
        let groups = opt.num_param_groups();
        if lambdas.len() != groups {
            return Err(Error::invalid(
                "LambdaLR",
                format!("Expected {groups} lr_lambdas, but got {}", lambdas.len()),
            ));
        }
        Ok(construct(opt, |core| LambdaLR { lambdas, core }))
    }

    /// PyTorch's `get_lr`: the closed form at every epoch.
    fn chainable(&self, group: usize, _lr: f64, base_lr: f64, _initial: bool) -> f64 {
        self.closed_form(group, base_lr)
    }

    fn closed_form(&self, group: usize, base_lr: f64) -> f64 {
        match self.lambdas.get(group) {
            Some(f) => base_lr * f(self.core.last_epoch),
            None => base_lr,
        }
    }
}
single_scheduler!(LambdaLR);

/// `torch.optim.lr_scheduler.CosineAnnealingWarmRestarts` (SGDR): cosine
/// annealing from `base_lr` to `eta_min` over `t_0` epochs, then again over
/// `t_0 * t_mult`, `t_0 * t_mult^2`, ... epochs, restarting at `base_lr`:
/// `lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * t_cur / t_i)) / 2`.
///
/// ```
/// use wgrad_autograd::optim::{CosineAnnealingWarmRestarts, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = CosineAnnealingWarmRestarts::new(&mut opt, 2, 1, 0.0)?;
/// let mut lrs = Vec::new();
/// for _ in 0..22 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.05, 0.1, 0.05]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CosineAnnealingWarmRestarts {
    /// Epochs of the first cycle (>= 1).
    pub t_0: usize,
    /// Growth factor of the cycle length (>= 1).
    pub t_mult: usize,
    /// Lowest rate.
    pub eta_min: f64,
    /// Epochs since the last restart (a float, as in PyTorch after a jump).
    t_cur: f64,
    /// Length of the current cycle.
    t_i: f64,
    core: Core,
}

impl CosineAnnealingWarmRestarts {
    /// Attaches to `opt` and performs the initial step. `t_0` and `t_mult`
    /// must be at least 1.
    pub fn new(
        opt: &mut dyn Optimizer,
        t_0: usize,
        t_mult: usize,
        eta_min: f64,
    ) -> Result<CosineAnnealingWarmRestarts> {
        const OP: &str = "CosineAnnealingWarmRestarts";
        if t_0 == 0 {
            return Err(Error::invalid(
                OP,
                format!("Expected positive integer T_0, but got {t_0}"),
            ));
        }
        if t_mult == 0 {
            return Err(Error::invalid(
                OP,
                format!("Expected integer T_mult >= 1, but got {t_mult}"),
            ));
        }
        let mut s = CosineAnnealingWarmRestarts {
            t_0,
            t_mult,
            eta_min,
            t_cur: -1.0,
            t_i: t_0 as f64,
            core: Core::new(opt),
        };
        s.initial_step(opt);
        Ok(s)
    }

    /// Epochs since the last restart (PyTorch's `T_cur`).
    pub fn t_cur(&self) -> f64 {
        self.t_cur
    }

    /// Length of the current cycle (PyTorch's `T_i`).
    pub fn t_i(&self) -> f64 {
        self.t_i
    }

    /// Sets every group's rate from `t_cur` and `t_i`.
    fn apply(&mut self, opt: &mut dyn Optimizer) {
        let (eta_min, t_cur, t_i) = (self.eta_min, self.t_cur, self.t_i);
        let lrs: Vec<f64> = self
            .core
            .base_lrs
            .iter()
            .map(|&base| eta_min + (base - eta_min) * (1.0 + (PI * t_cur / t_i).cos()) / 2.0)
            .collect();
        self.core.apply(opt, &lrs);
    }
}

impl LrScheduler for CosineAnnealingWarmRestarts {
    fn step(&mut self, opt: &mut dyn Optimizer) {
        if self.core.last_epoch < 0 {
            // PyTorch's `step()` before any epoch is `step(0)`.
            return self.step_to(opt, 0);
        }
        self.core.last_epoch += 1;
        self.t_cur += 1.0;
        if self.t_cur >= self.t_i {
            self.t_cur %= self.t_i;
            self.t_i *= self.t_mult as f64;
        }
        self.apply(opt);
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
    /// PyTorch's `step(epoch)`: the cycle holding `epoch` (negative epochs
    /// count as 0, where PyTorch raises).
    fn step_to(&mut self, opt: &mut dyn Optimizer, epoch: i64) {
        let epoch = epoch.max(0);
        let (t_0, t_mult) = (self.t_0 as f64, self.t_mult as f64);
        let e = epoch as f64;
        if e >= t_0 {
            if self.t_mult == 1 {
                self.t_cur = e % t_0;
            } else {
                // Python's `int(math.log(x, T_mult))`, truncated toward 0.
                let n = ((e / t_0 * (t_mult - 1.0) + 1.0).ln() / t_mult.ln()).trunc();
                let grown = t_mult.powf(n);
                self.t_cur = e - t_0 * (grown - 1.0) / (t_mult - 1.0);
                self.t_i = t_0 * grown;
            }
        } else {
            self.t_i = t_0;
            self.t_cur = e;
        }
        self.core.last_epoch = epoch;
        self.apply(opt);
    }
    fn undo_initial_step(&mut self) {
        self.core.last_epoch -= 1;
    }
    fn initial_step(&mut self, opt: &mut dyn Optimizer) {
        self.step(opt);
    }
}
