//! [`ReduceLROnPlateau`]: lowers the rate when a metric stops improving.

use wgrad_core::{Error, Result};

use crate::optim::Optimizer;

const OP: &str = "ReduceLROnPlateau";

/// Whether [`ReduceLROnPlateau`]'s metric should fall or rise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlateauMode {
    /// Lower is better (a loss; PyTorch's `"min"`, the default).
    Min,
    /// Higher is better (an accuracy; `"max"`).
    Max,
}

/// How [`ReduceLROnPlateau`] measures a significant improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMode {
    /// Relative: better than `best * (1 -/+ threshold)` (`"rel"`, the default).
    Rel,
    /// Absolute: better than `best -/+ threshold` (`"abs"`).
    Abs,
}

/// The settings of [`ReduceLROnPlateau`], with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceLROnPlateauConfig {
    /// Minimize or maximize the metric. Default `Min`.
    pub mode: PlateauMode,
    /// Factor the rate is multiplied by (< 1). Default 0.1.
    pub factor: f64,
    /// Epochs without improvement tolerated before a reduction. Default 10.
    pub patience: usize,
    /// What counts as an improvement (see [`ThresholdMode`]). Default 1e-4.
    pub threshold: f64,
    /// Relative or absolute threshold. Default `Rel`.
    pub threshold_mode: ThresholdMode,
    /// Epochs to wait after a reduction before counting bad epochs again. Default 0.
    pub cooldown: usize,
    /// Lowest rate: one value for every group, or one per group. Default 0.
    pub min_lr: Vec<f64>,
    /// Reductions smaller than this are skipped. Default 1e-8.
    pub eps: f64,
}

impl Default for ReduceLROnPlateauConfig {
    fn default() -> Self {
        ReduceLROnPlateauConfig {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

/// `torch.optim.lr_scheduler.ReduceLROnPlateau`: after more than
/// `patience` epochs without the metric improving, multiplies every group's
/// rate by `factor` (not below its `min_lr`), then waits `cooldown` epochs.
///
/// ```
/// use wgrad_autograd::optim::*;
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::zeros(&[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w], SgdConfig::new(0.1))?;
/// let config = ReduceLROnPlateauConfig { patience: 1, factor: 0.5, ..Default::default() };
/// let mut sched = ReduceLROnPlateau::new(&mut opt, config)?;
/// for loss in [1.0, 0.9, 0.9, 0.9] {
///     sched.step(&mut opt, loss);
/// }
/// assert_eq!(opt.lr(), 0.05);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReduceLROnPlateau {
    config: ReduceLROnPlateauConfig,
    min_lrs: Vec<f64>,
    best: f64,
    num_bad_epochs: usize,
    cooldown_counter: usize,
    last_epoch: i64,
    last_lrs: Vec<f64>,
}

impl ReduceLROnPlateau {
    /// Attaches to `opt` (the rates are left alone until a plateau). A
    /// `factor >= 1`, a negative threshold or eps, or a `min_lr` list that
    /// is neither one value nor one per group is `InvalidArgument`.
    pub fn new(opt: &dyn Optimizer, config: ReduceLROnPlateauConfig) -> Result<ReduceLROnPlateau> {
        if config.factor >= 1.0 || config.factor.is_nan() {
            return Err(Error::invalid(
                OP,
                format!("Factor should be < 1.0, got {}", config.factor),
            ));
        }
        if config.factor < 0.0 {
            return Err(Error::invalid(
                OP,
                format!("factor must be >= 0, got {}", config.factor),
            ));
        }
        for (name, v) in [("threshold", config.threshold), ("eps", config.eps)] {
            if v.is_nan() || v < 0.0 {
                return Err(Error::invalid(OP, format!("{name} must be >= 0, got {v}")));
            }
        }
        let n = opt.num_param_groups();
        let min_lrs = match config.min_lr.len() {
            1 => vec![config.min_lr[0]; n],
            k if k == n => config.min_lr.clone(),
            k => {
                return Err(Error::invalid(OP, format!("expected {n} min_lrs, got {k}")));
            }
        };
        let best = match config.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        };
        Ok(ReduceLROnPlateau {
            config,
            min_lrs,
            best,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lrs: opt.group_lrs(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &ReduceLROnPlateauConfig {
        &self.config
    }

    /// Whether `a` improves on `best` by more than the threshold
    /// (PyTorch's `_is_better`; a NaN metric never does).
    fn is_better(&self, a: f64, best: f64) -> bool {
        let t = self.config.threshold;
        match (self.config.mode, self.config.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - t),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - t,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (t + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + t,
        }
    }

    /// Records the epoch's `metric` and reduces the rates after a plateau
    /// (call it once per epoch, after validation).
    pub fn step(&mut self, opt: &mut dyn Optimizer, metric: f64) {
        self.last_epoch += 1;
        if self.is_better(metric, self.best) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            // Bad epochs in the cooldown do not count.
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.config.patience {
            self.reduce(opt);
            self.cooldown_counter = self.config.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lrs = opt.group_lrs();
    }

    /// Multiplies every group's rate by `factor`, not below its `min_lr`,
    /// skipping changes no larger than `eps`.
    fn reduce(&mut self, opt: &mut dyn Optimizer) {
        let n = opt.num_param_groups();
        if self.min_lrs.len() != n {
            // A group added since construction gets the first min_lr.
            let fill = self.min_lrs.first().copied().unwrap_or(0.0);
            self.min_lrs.resize(n, fill);
        }
        let lrs: Vec<f64> = opt
            .group_lrs()
            .into_iter()
            .zip(&self.min_lrs)
            .map(|(old, &min_lr)| {
                let new = (old * self.config.factor).max(min_lr);
                if old - new > self.config.eps {
                    new
                } else {
                    old
                }
            })
            .collect();
        opt.set_group_lrs(&lrs);
    }

    /// The best metric so far.
    pub fn best(&self) -> f64 {
        self.best
    }

    /// Bad epochs since the last improvement or reduction.
    pub fn num_bad_epochs(&self) -> usize {
        self.num_bad_epochs
    }

    /// Epochs stepped so far.
    pub fn last_epoch(&self) -> i64 {
        self.last_epoch
    }

    /// The rate after the last step (the first group's).
    pub fn get_last_lr(&self) -> f64 {
        self.last_lrs.first().copied().unwrap_or(0.0)
    }

    /// The rates after the last step, one per group.
    pub fn get_last_lrs(&self) -> Vec<f64> {
        self.last_lrs.clone()
    }
}
