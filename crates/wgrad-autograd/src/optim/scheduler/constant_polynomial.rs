//! [`ConstantLR`] and [`PolynomialLR`]: schedules over `total_iters` epochs
//! that then keep the rate.

use wgrad_core::{Error, Result};

use super::{Core, LrScheduler, construct, single_scheduler};
use crate::optim::Optimizer;

/// `torch.optim.lr_scheduler.ConstantLR`: multiplies the rate by `factor`
/// until epoch `total_iters`, then restores it
/// (`lr = base_lr * factor` for `epoch < total_iters`, `base_lr` after).
///
/// As in PyTorch, the recursive form (every [`LrScheduler::step`]) scales
/// the current rate by `factor` at epoch 0 and by `1 / factor` at epoch
/// `total_iters`, so it composes with other schedulers in a
/// [`ChainedScheduler`](super::ChainedScheduler); the closed form
/// ([`LrScheduler::step_to`], used by [`SequentialLR`](super::SequentialLR)
/// at milestones) is the formula above. Both follow PyTorch where they
/// disagree: with `total_iters = 0` stepping keeps `factor` for good, while
/// the closed form gives `base_lr`. With `factor = 0` PyTorch's step at
/// epoch `total_iters` divides by zero (`ZeroDivisionError`); that step has
/// no error here, so it sets the closed form's rate, `base_lr`.
///
/// ```
/// use wgrad_autograd::optim::{ConstantLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = ConstantLR::new(&mut opt, 0.5, 2)?;
/// let mut lrs = Vec::new();
/// for _ in 0..4 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.05, 0.05, 0.1, 0.1]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ConstantLR {
    /// Factor until `total_iters`, in `[0, 1]` (PyTorch's default 1/3).
    pub factor: f64,
    /// Epochs at the lowered rate (default 5; 0 is accepted, as in PyTorch).
    pub total_iters: usize,
    core: Core,
}

impl ConstantLR {
    /// Attaches to `opt` and performs the initial step (which multiplies
    /// the rate by `factor`). `factor` must be in `[0, 1]`.
    pub fn new(opt: &mut dyn Optimizer, factor: f64, total_iters: usize) -> Result<ConstantLR> {
        if !(0.0..=1.0).contains(&factor) {
            return Err(Error::invalid(
                "ConstantLR",
                format!(
                    "Constant multiplicative factor expected to be between 0 and 1, but got {factor}"
                ),
            ));
        }
        Ok(construct(opt, |core| ConstantLR {
            factor,
            total_iters,
            core,
        }))
    }

    fn chainable(&self, group: usize, lr: f64, base_lr: f64, _initial: bool) -> f64 {
        let e = self.core.last_epoch;
        if e == 0 {
            lr * self.factor
        } else if e != self.total_iters as i64 {
            lr
        } else if self.factor == 0.0 {
            // PyTorch raises ZeroDivisionError; the closed form's rate instead.
            self.closed_form(group, base_lr)
        } else {
            lr * (1.0 / self.factor)
        }
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        // PyTorch's `factor + (last_epoch >= total_iters) * (1 - factor)`.
        let reached = if self.core.last_epoch >= self.total_iters as i64 {
            1.0 - self.factor
        } else {
            0.0
        };
        base_lr * (self.factor + reached)
    }
}
single_scheduler!(ConstantLR);

/// `torch.optim.lr_scheduler.PolynomialLR`: decays the rate to 0 over
/// `total_iters` epochs along a polynomial of degree `power`, then keeps it
/// (`lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power`),
/// computed recursively as PyTorch does (each step multiplies the current
/// rate by `((1 - e / total) / (1 - (e - 1) / total))^power`).
///
/// PyTorch accepts `total_iters = 0`: stepping then never changes the rate,
/// while its closed form divides by zero; the closed form here
/// ([`LrScheduler::step_to`], used by [`SequentialLR`](super::SequentialLR)
/// at milestones) gives `base_lr` instead. PyTorch does not check `power`,
/// but a negative one raises `ZeroDivisionError` at epoch `total_iters`
/// (zero to a negative power), so it is refused here at construction.
///
/// ```
/// use wgrad_autograd::optim::{PolynomialLR, LrScheduler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let mut sched = PolynomialLR::new(&mut opt, 4, 2.0)?;
/// let mut lrs = Vec::new();
/// for _ in 0..6 {
///     lrs.push(opt.lr()); // opt.step() would use this rate
///     sched.step(&mut opt);
/// }
/// for (got, want) in lrs.iter().zip([0.1, 0.05625, 0.025, 0.00625, 0.0, 0.0]) {
///     assert!((got - want).abs() < 1e-12, "{lrs:?}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PolynomialLR {
    /// Epochs of the decay (default 5; 0 is accepted, as in PyTorch, and
    /// keeps the rate).
    pub total_iters: usize,
    /// Degree of the polynomial, >= 0 (default 1: a linear decay).
    pub power: f64,
    core: Core,
}

impl PolynomialLR {
    /// Attaches to `opt` and performs the initial step (which keeps the
    /// rate). `power` must be non-negative.
    pub fn new(opt: &mut dyn Optimizer, total_iters: usize, power: f64) -> Result<PolynomialLR> {
        if power.is_nan() || power < 0.0 {
            return Err(Error::invalid(
                "PolynomialLR",
                format!(
                    "power must be non-negative, but got {power} (PyTorch fails at total_iters: \
                     0.0 cannot be raised to a negative power)"
                ),
            ));
        }
        Ok(construct(opt, |core| PolynomialLR {
            total_iters,
            power,
            core,
        }))
    }

    fn chainable(&self, _group: usize, lr: f64, _base_lr: f64, initial: bool) -> f64 {
        let e = self.core.last_epoch;
        let total = self.total_iters as i64;
        // total == 0 can only get here at epoch 0 after an undone initial
        // step, where PyTorch divides 0 by 0.
        if initial || e > total || total == 0 {
            return lr;
        }
        let t = total as f64;
        let decay = ((1.0 - e as f64 / t) / (1.0 - (e - 1) as f64 / t)).powf(self.power);
        lr * decay
    }

    fn closed_form(&self, _group: usize, base_lr: f64) -> f64 {
        if self.total_iters == 0 {
            // PyTorch raises ZeroDivisionError; the rate stepping keeps.
            return base_lr;
        }
        let total = self.total_iters as f64;
        let e = self.core.last_epoch.min(self.total_iters as i64) as f64;
        base_lr * (1.0 - e / total).powf(self.power)
    }
}
single_scheduler!(PolynomialLR);
