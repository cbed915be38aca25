//! `torch.optim.Adadelta`: the adaptive learning rate of Zeiler (2012);
//! L2 weight decay, maximize.

use wgrad_core::{Error, Result};

use super::composed::{check_state, commit, ema_square, operands};
use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{Optimizer, ParamGroup, check_non_negative, zeros_state};
use crate::Tensor;

const OP: &str = "Adadelta";

/// Hyper-parameters of [`Adadelta`], with `torch.optim.Adadelta`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdadeltaConfig {
    /// Coefficient scaling the delta before it is applied (>= 0). Default 1.0.
    pub lr: f64,
    /// Decay rate of the running averages, in `[0, 1]`. Default 0.9.
    pub rho: f64,
    /// Added inside both square roots for stability (>= 0). Default 1e-6.
    pub eps: f64,
    /// L2 penalty added to the gradient (>= 0). Default 0.
    pub weight_decay: f64,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for AdadeltaConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: AdadeltaConfig = AdadeltaConfig {
    lr: 1.0,
    rho: 0.9,
    eps: 1e-6,
    weight_decay: 0.0,
    maximize: false,
};

/// No momentum for `OneCycleLR` to cycle (as in torch, whose Adadelta has
/// neither `momentum` nor `betas`).
impl GroupConfig for AdadeltaConfig {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// Validates Adadelta's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &AdadeltaConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    if !(0.0..=1.0).contains(&c.rho) {
        return Err(Error::invalid(op, format!("Invalid rho value: {}", c.rho)));
    }
    check_non_negative(op, "epsilon value", c.eps)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)
}

/// Per-parameter state of [`Adadelta`] (PyTorch's `state[p]`), created on
/// the first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct AdadeltaState {
    /// Updates applied so far.
    pub step: u64,
    /// Running average of the squared gradient.
    pub square_avg: Tensor,
    /// Running average of the squared update.
    pub acc_delta: Tensor,
}

/// Adadelta (`torch.optim.Adadelta`).
///
/// ```
/// use wgrad_autograd::optim::{Adadelta, AdadeltaConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Adadelta::new(vec![w.clone()], AdadeltaConfig::default())?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // First step: sqrt(eps / (0.1 grad^2 + eps)) grad, about sqrt(10 eps).
/// for (got, want) in w.to_vec_f32()?.iter().zip([1.0 - 0.00316, -2.0 + 0.00316]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct Adadelta {
    groups: Groups<AdadeltaConfig>,
    state: Vec<Option<AdadeltaState>>,
}

impl Adadelta {
    /// An optimizer over `params` (float leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: AdadeltaConfig) -> Result<Adadelta> {
        Adadelta::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<AdadeltaConfig>>) -> Result<Adadelta> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(Adadelta { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &AdadeltaConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<AdadeltaState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<AdadeltaState>] {
        &mut self.state
    }

    group_accessors!(AdadeltaConfig, OP, check_config, None);
}

/// Updates one parameter with gradient `grad` (`_single_tensor_adadelta`).
fn update(
    c: &AdadeltaConfig,
    param: &Tensor,
    grad: &Tensor,
    slot: &mut Option<AdadeltaState>,
) -> Result<()> {
    let _guard = crate::no_grad();
    let (p, g) = operands(OP, param, grad, c.maximize, c.weight_decay)?;
    let cur = match slot {
        Some(s) => s.clone(),
        None => {
            let storage = param.storage();
            AdadeltaState {
                step: 0,
                square_avg: zeros_state(&storage)?,
                acc_delta: zeros_state(&storage)?,
            }
        }
    };
    check_state(OP, param, &cur.square_avg)?;
    check_state(OP, param, &cur.acc_delta)?;
    let eps = c.eps as f32;
    let square_avg = ema_square(&cur.square_avg, &g, c.rho)?;
    let std = square_avg.add_scalar(eps)?.sqrt()?;
    let delta = cur.acc_delta.add_scalar(eps)?.sqrt()?.div(&std)?.mul(&g)?;
    let acc_delta = ema_square(&cur.acc_delta, &delta, c.rho)?;
    let p = p.add(&delta.mul_scalar(-c.lr as f32)?)?;
    commit(
        param,
        &p,
        &[(&cur.square_avg, &square_avg), (&cur.acc_delta, &acc_delta)],
    )?;
    *slot = Some(AdadeltaState {
        step: cur.step + 1,
        ..cur
    });
    Ok(())
}

impl Optimizer for Adadelta {
    fn step(&mut self) -> Result<()> {
        self.groups.check(OP, check_config)?;
        let mut state = std::mem::take(&mut self.state);
        let result = self
            .groups
            .iter()
            .zip(&mut state)
            .try_for_each(|((config, param), slot)| match param.grad() {
                Some(grad) => update(config, param, &grad, slot),
                None => Ok(()),
            });
        self.state = state;
        result
    }

    group_methods!();
}
