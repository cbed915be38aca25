//! `torch.optim.RAdam`: Adam with the variance rectification of Liu et al.
//! (2019), plain momentum steps while the rectifier is undefined (`rho_t <=
//! 5`); L2 or decoupled weight decay, maximize.

use wgrad_core::{BinaryOp, Result};

use super::composed::{check_betas, check_state, commit, ema_square, lerp, operands};
use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{Optimizer, ParamGroup, check_non_negative, zeros_state};
use crate::Tensor;

const OP: &str = "RAdam";

/// Hyper-parameters of [`RAdam`], with `torch.optim.RAdam`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RAdamConfig {
    /// Learning rate (>= 0). Default 1e-3.
    pub lr: f64,
    /// Decay rates of the first and second moment estimates, each in
    /// `[0, 1)`. Default (0.9, 0.999).
    pub betas: (f64, f64),
    /// Added to the denominator for stability (>= 0). Default 1e-8.
    pub eps: f64,
    /// Weight decay (>= 0): an L2 term added to the gradient, or with
    /// `decoupled_weight_decay` the parameter shrunk by `1 - lr * wd`
    /// first (RAdamW). Default 0.
    pub weight_decay: f64,
    /// Apply `weight_decay` to the parameter as AdamW does. Default off.
    pub decoupled_weight_decay: bool,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for RAdamConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: RAdamConfig = RAdamConfig {
    lr: 1e-3,
    betas: (0.9, 0.999),
    eps: 1e-8,
    weight_decay: 0.0,
    decoupled_weight_decay: false,
    maximize: false,
};

impl GroupConfig for RAdamConfig {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, momentum: f64) {
        self.betas.0 = momentum;
    }
}

/// Validates RAdam's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &RAdamConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "epsilon value", c.eps)?;
    check_betas(op, c.betas)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)
}

/// Per-parameter state of [`RAdam`] (PyTorch's `state[p]`), created on the
/// first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct RAdamState {
    /// Updates applied so far.
    pub step: u64,
    /// First moment estimate.
    pub exp_avg: Tensor,
    /// Second moment estimate.
    pub exp_avg_sq: Tensor,
}

/// RAdam (`torch.optim.RAdam`).
///
/// ```
/// use wgrad_autograd::optim::{RAdam, RAdamConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = RAdam::new(vec![w.clone()], RAdamConfig { lr: 0.1, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // Unrectified early steps: lr times the bias-corrected momentum.
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.8, -1.6]) {
///     assert!((got - want).abs() < 1e-3, "{got} vs {want}");
/// }
/// assert_eq!(opt.state()[0].as_ref().map(|s| s.step), Some(1));
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct RAdam {
    groups: Groups<RAdamConfig>,
    state: Vec<Option<RAdamState>>,
}

impl RAdam {
    /// An optimizer over `params` (float leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: RAdamConfig) -> Result<RAdam> {
        RAdam::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<RAdamConfig>>) -> Result<RAdam> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(RAdam { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &RAdamConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<RAdamState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<RAdamState>] {
        &mut self.state
    }

    group_accessors!(RAdamConfig, OP, check_config, None);
}

/// Updates one parameter with gradient `grad` (`_single_tensor_radam`).
fn update(
    c: &RAdamConfig,
    param: &Tensor,
    grad: &Tensor,
    slot: &mut Option<RAdamState>,
) -> Result<()> {
    let _guard = crate::no_grad();
    let l2 = if c.decoupled_weight_decay {
        0.0
    } else {
        c.weight_decay
    };
    let (mut p, g) = operands(OP, param, grad, c.maximize, l2)?;
    let cur = match slot {
        Some(s) => s.clone(),
        None => {
            let storage = param.storage();
            RAdamState {
                step: 0,
                exp_avg: zeros_state(&storage)?,
                exp_avg_sq: zeros_state(&storage)?,
            }
        }
    };
    check_state(OP, param, &cur.exp_avg)?;
    check_state(OP, param, &cur.exp_avg_sq)?;
    let step = cur.step + 1;
    let t = step as f64;
    let (beta1, beta2) = c.betas;
    if c.decoupled_weight_decay && c.weight_decay != 0.0 {
        p = p.mul_scalar((1.0 - c.lr * c.weight_decay) as f32)?;
    }
    let exp_avg = lerp(&cur.exp_avg, &g, 1.0 - beta1)?;
    let exp_avg_sq = ema_square(&cur.exp_avg_sq, &g, beta2)?;
    let bias_correction1 = 1.0 - beta1.powf(t);
    let bias_correction2 = 1.0 - beta2.powf(t);
    let corrected = exp_avg
        .div_scalar(bias_correction1 as f32)?
        .mul_scalar(c.lr as f32)?;
    let rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    let rho_t = rho_inf - 2.0 * t * beta2.powf(t) / bias_correction2;
    let delta = if rho_t > 5.0 {
        let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
            / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
            .sqrt();
        // `bias_correction2 ** 0.5 / (exp_avg_sq.sqrt() + eps)`
        let adaptive = exp_avg_sq.sqrt()?.add_scalar(c.eps as f32)?.binary_scalar(
            BinaryOp::Div,
            bias_correction2.sqrt() as f32,
            true,
        )?;
        corrected.mul(&adaptive)?.mul_scalar(rect as f32)?
    } else {
        corrected
    };
    let p = p.sub(&delta)?;
    commit(
        param,
        &p,
        &[(&cur.exp_avg, &exp_avg), (&cur.exp_avg_sq, &exp_avg_sq)],
    )?;
    *slot = Some(RAdamState { step, ..cur });
    Ok(())
}

impl Optimizer for RAdam {
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
