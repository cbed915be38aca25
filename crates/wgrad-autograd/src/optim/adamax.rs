//! `torch.optim.Adamax`: Adam over the infinity norm (Kingma & Ba, 2014);
//! L2 weight decay, maximize.

use wgrad_core::Result;

use super::composed::{addcdiv, check_betas, check_state, commit, lerp, operands};
use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{Optimizer, ParamGroup, check_non_negative, zeros_state};
use crate::Tensor;

const OP: &str = "Adamax";

/// Hyper-parameters of [`Adamax`], with `torch.optim.Adamax`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdamaxConfig {
    /// Learning rate (>= 0). Default 2e-3.
    pub lr: f64,
    /// Decay rates of the first moment and of the infinity norm, each in
    /// `[0, 1)`. Default (0.9, 0.999).
    pub betas: (f64, f64),
    /// Added to `|grad|` before the running maximum (>= 0). Default 1e-8.
    pub eps: f64,
    /// L2 penalty added to the gradient (>= 0). Default 0.
    pub weight_decay: f64,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for AdamaxConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: AdamaxConfig = AdamaxConfig {
    lr: 2e-3,
    betas: (0.9, 0.999),
    eps: 1e-8,
    weight_decay: 0.0,
    maximize: false,
};

impl GroupConfig for AdamaxConfig {
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

/// Validates Adamax's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &AdamaxConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "epsilon value", c.eps)?;
    check_betas(op, c.betas)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)
}

/// Per-parameter state of [`Adamax`] (PyTorch's `state[p]`), created on
/// the first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct AdamaxState {
    /// Updates applied so far.
    pub step: u64,
    /// First moment estimate.
    pub exp_avg: Tensor,
    /// Exponentially weighted infinity norm.
    pub exp_inf: Tensor,
}

/// Adamax (`torch.optim.Adamax`).
///
/// ```
/// use wgrad_autograd::optim::{Adamax, AdamaxConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Adamax::new(vec![w.clone()], AdamaxConfig { lr: 0.1, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // The first step moves each weight by about lr against its gradient.
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.9, -1.9]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct Adamax {
    groups: Groups<AdamaxConfig>,
    state: Vec<Option<AdamaxState>>,
}

impl Adamax {
    /// An optimizer over `params` (float leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: AdamaxConfig) -> Result<Adamax> {
        Adamax::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<AdamaxConfig>>) -> Result<Adamax> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(Adamax { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &AdamaxConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<AdamaxState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<AdamaxState>] {
        &mut self.state
    }

    group_accessors!(AdamaxConfig, OP, check_config, None);
}

/// Updates one parameter with gradient `grad` (`_single_tensor_adamax`).
fn update(
    c: &AdamaxConfig,
    param: &Tensor,
    grad: &Tensor,
    slot: &mut Option<AdamaxState>,
) -> Result<()> {
    let _guard = crate::no_grad();
    let (p, g) = operands(OP, param, grad, c.maximize, c.weight_decay)?;
    let cur = match slot {
        Some(s) => s.clone(),
        None => {
            let storage = param.storage();
            AdamaxState {
                step: 0,
                exp_avg: zeros_state(&storage)?,
                exp_inf: zeros_state(&storage)?,
            }
        }
    };
    check_state(OP, param, &cur.exp_avg)?;
    check_state(OP, param, &cur.exp_inf)?;
    let step = cur.step + 1;
    let (beta1, beta2) = c.betas;
    let exp_avg = lerp(&cur.exp_avg, &g, 1.0 - beta1)?;
    let exp_inf = cur
        .exp_inf
        .mul_scalar(beta2 as f32)?
        .maximum(&g.abs()?.add_scalar(c.eps as f32)?)?;
    let bias_correction = 1.0 - beta1.powf(step as f64);
    let clr = c.lr / bias_correction;
    let p = addcdiv(&p, &exp_avg, &exp_inf, -clr)?;
    commit(
        param,
        &p,
        &[(&cur.exp_avg, &exp_avg), (&cur.exp_inf, &exp_inf)],
    )?;
    *slot = Some(AdamaxState { step, ..cur });
    Ok(())
}

impl Optimizer for Adamax {
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
