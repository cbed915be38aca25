//! `torch.optim.NAdam`: Adam with Nesterov momentum and the momentum-decay
//! schedule of Dozat (2016); L2 or decoupled weight decay, maximize.

use wgrad_core::Result;

use super::composed::{addcdiv, check_betas, check_state, commit, ema_square, lerp, operands};
use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{Optimizer, ParamGroup, check_non_negative, zeros_state};
use crate::Tensor;

const OP: &str = "NAdam";

/// Hyper-parameters of [`NAdam`], with `torch.optim.NAdam`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NAdamConfig {
    /// Learning rate (>= 0). Default 2e-3.
    pub lr: f64,
    /// Decay rates of the first and second moment estimates, each in
    /// `[0, 1)`. Default (0.9, 0.999).
    pub betas: (f64, f64),
    /// Added to the denominator for stability (>= 0). Default 1e-8.
    pub eps: f64,
    /// Weight decay (>= 0): an L2 term added to the gradient, or with
    /// `decoupled_weight_decay` the parameter shrunk by `1 - lr * wd`
    /// first (NAdamW). Default 0.
    pub weight_decay: f64,
    /// The momentum schedule's decay `psi`: step `t` uses momentum
    /// `beta1 (1 - 0.5 * 0.96^(t psi))` (>= 0). Default 4e-3.
    pub momentum_decay: f64,
    /// Apply `weight_decay` to the parameter as AdamW does. Default off.
    pub decoupled_weight_decay: bool,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for NAdamConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: NAdamConfig = NAdamConfig {
    lr: 2e-3,
    betas: (0.9, 0.999),
    eps: 1e-8,
    weight_decay: 0.0,
    momentum_decay: 4e-3,
    decoupled_weight_decay: false,
    maximize: false,
};

impl GroupConfig for NAdamConfig {
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

/// Validates NAdam's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &NAdamConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "epsilon value", c.eps)?;
    check_betas(op, c.betas)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)?;
    check_non_negative(op, "momentum_decay value", c.momentum_decay)
}

/// Per-parameter state of [`NAdam`] (PyTorch's `state[p]`), created on the
/// first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct NAdamState {
    /// Updates applied so far.
    pub step: u64,
    /// The product of the momenta `mu_1 ... mu_t` so far (1 before the
    /// first step). PyTorch keeps it in a float32 0-d tensor, so each step
    /// rounds it to f32 as PyTorch's does.
    pub mu_product: f64,
    /// First moment estimate.
    pub exp_avg: Tensor,
    /// Second moment estimate.
    pub exp_avg_sq: Tensor,
}

/// NAdam (`torch.optim.NAdam`).
///
/// ```
/// use wgrad_autograd::optim::{NAdam, NAdamConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = NAdam::new(vec![w.clone()], NAdamConfig { lr: 0.1, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // PyTorch's first step (a little over lr: the Nesterov look-ahead).
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.8943548, -1.8943548]) {
///     assert!((got - want).abs() < 1e-6, "{got} vs {want}");
/// }
/// assert_eq!(opt.state()[0].as_ref().map(|s| s.step), Some(1));
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct NAdam {
    groups: Groups<NAdamConfig>,
    state: Vec<Option<NAdamState>>,
}

impl NAdam {
    /// An optimizer over `params` (float leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: NAdamConfig) -> Result<NAdam> {
        NAdam::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<NAdamConfig>>) -> Result<NAdam> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(NAdam { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &NAdamConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<NAdamState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<NAdamState>] {
        &mut self.state
    }

    group_accessors!(NAdamConfig, OP, check_config, None);
}

/// The momentum `mu_t` of step `t` (torch's `beta1 * (1 - 0.5 *
/// 0.96 ** (t * momentum_decay))`).
fn momentum_at(c: &NAdamConfig, t: f64) -> f64 {
    c.betas.0 * (1.0 - 0.5 * 0.96f64.powf(t * c.momentum_decay))
}

/// Updates one parameter with gradient `grad` (`_single_tensor_nadam`).
fn update(
    c: &NAdamConfig,
    param: &Tensor,
    grad: &Tensor,
    slot: &mut Option<NAdamState>,
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
            NAdamState {
                step: 0,
                mu_product: 1.0,
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
    let bias_correction2 = 1.0 - beta2.powf(t);
    if c.decoupled_weight_decay && c.weight_decay != 0.0 {
        p = p.mul_scalar((1.0 - c.lr * c.weight_decay) as f32)?;
    }
    let mu = momentum_at(c, t);
    let mu_next = momentum_at(c, t + 1.0);
    // `mu_product *= mu` on a float32 0-d tensor.
    let mu_product = f64::from(cur.mu_product as f32 * mu as f32);
    let exp_avg = lerp(&cur.exp_avg, &g, 1.0 - beta1)?;
    let exp_avg_sq = ema_square(&cur.exp_avg_sq, &g, beta2)?;
    let denom = exp_avg_sq
        .div_scalar(bias_correction2 as f32)?
        .sqrt()?
        .add_scalar(c.eps as f32)?;
    let mu_product_next = mu_product * mu_next;
    let p = addcdiv(&p, &g, &denom, -c.lr * (1.0 - mu) / (1.0 - mu_product))?;
    let p = addcdiv(
        &p,
        &exp_avg,
        &denom,
        (-c.lr * mu_next) / (1.0 - mu_product_next),
    )?;
    commit(
        param,
        &p,
        &[(&cur.exp_avg, &exp_avg), (&cur.exp_avg_sq, &exp_avg_sq)],
    )?;
    *slot = Some(NAdamState {
        step,
        mu_product,
        ..cur
    });
    Ok(())
}

impl Optimizer for NAdam {
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
