//! `torch.optim.Adagrad`: learning-rate decay, weight decay, an initial
//! accumulator value, maximize.

use wgrad_core::Result;
use wgrad_core::checks::optim::AdagradCoefficients;

use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{
    Optimizer, ParamGroup, check_non_negative, device_mismatch, param_operand, state_operand,
};
use crate::storage::StateStepOutcome;
use crate::{Storage, Tensor};

const OP: &str = "Adagrad";

/// Hyper-parameters of [`Adagrad`], with `torch.optim.Adagrad`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdagradConfig {
    /// Learning rate (>= 0). Default 1e-2.
    pub lr: f64,
    /// Rate decay: step `t` uses `lr / (1 + (t - 1) * lr_decay)` (>= 0). Default 0.
    pub lr_decay: f64,
    /// L2 penalty added to the gradient (>= 0). Default 0.
    pub weight_decay: f64,
    /// Starting value of the sum of squared gradients (>= 0). Default 0.
    pub initial_accumulator_value: f64,
    /// Added to the denominator for stability (>= 0). Default 1e-10.
    pub eps: f64,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for AdagradConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: AdagradConfig = AdagradConfig {
    lr: 1e-2,
    lr_decay: 0.0,
    weight_decay: 0.0,
    initial_accumulator_value: 0.0,
    eps: 1e-10,
    maximize: false,
};

impl GroupConfig for AdagradConfig {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// Validates Adagrad's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &AdagradConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "lr_decay value", c.lr_decay)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)?;
    check_non_negative(
        op,
        "initial_accumulator_value value",
        c.initial_accumulator_value,
    )?;
    check_non_negative(op, "epsilon value", c.eps)
}

/// Per-parameter state of [`Adagrad`] (PyTorch's `state[p]`), created on
/// the first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct AdagradState {
    /// Updates applied so far.
    pub step: u64,
    /// Sum of squared gradients (from `initial_accumulator_value`).
    pub sum: Tensor,
}

/// Adagrad (`torch.optim.Adagrad`).
///
/// ```
/// use wgrad_autograd::optim::{Adagrad, AdagradConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Adagrad::new(vec![w.clone()], AdagradConfig { lr: 0.1, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // First step: lr * grad / sqrt(grad^2).
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.9, -1.9]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct Adagrad {
    groups: Groups<AdagradConfig>,
    state: Vec<Option<AdagradState>>,
}

impl Adagrad {
    /// An optimizer over `params` (F32 leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: AdagradConfig) -> Result<Adagrad> {
        Adagrad::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<AdagradConfig>>) -> Result<Adagrad> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(Adagrad { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &AdagradConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<AdagradState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<AdagradState>] {
        &mut self.state
    }

    group_accessors!(AdagradConfig, OP, check_config, None);
}

/// Updates one parameter with gradient storage `grad`.
fn update(
    c: &AdagradConfig,
    param: &Tensor,
    grad: Storage,
    slot: &mut Option<AdagradState>,
) -> Result<()> {
    let param_storage = param.storage();
    if !param_storage.device().same(&grad.device()) {
        return Err(device_mismatch(OP, &param_storage, &grad));
    }
    // The state replaces the slot only once the update succeeded.
    let mut cur = match slot {
        Some(s) => s.clone(),
        None => AdagradState {
            step: 0,
            sum: Tensor::from_storage_leaf(
                param_storage.optimizer_full(c.initial_accumulator_value)?,
            ),
        },
    };
    let step = cur.step + 1;
    let k = AdagradCoefficients::new(
        OP,
        step,
        c.lr,
        c.lr_decay,
        c.eps,
        c.weight_decay,
        c.maximize,
    )?;
    let p = param_operand(param, param_storage)?;
    let sum = state_operand(OP, &p, &cur.sum)?;
    match p.adagrad_step(OP, &grad, &sum, &k)? {
        StateStepOutcome::Replaced {
            param: new_param,
            state,
        } => {
            param.set_storage(new_param)?;
            if let Some(s) = state.into_iter().next() {
                cur.sum.set_storage(s)?;
            }
        }
        // Updated in place: graphs that saved the parameter are stale.
        StateStepOutcome::InPlace => param.bump_version(),
    }
    cur.step = step;
    *slot = Some(cur);
    Ok(())
}

impl Optimizer for Adagrad {
    fn step(&mut self) -> Result<()> {
        self.groups.check(OP, check_config)?;
        let mut state = std::mem::take(&mut self.state);
        let result = self
            .groups
            .iter()
            .zip(&mut state)
            .try_for_each(|((config, param), slot)| match param.grad() {
                Some(grad) => update(config, param, grad.storage(), slot),
                None => Ok(()),
            });
        self.state = state;
        result
    }

    group_methods!();
}
