//! `torch.optim.Adam` and `torch.optim.AdamW` (Adam with decoupled weight
//! decay), including amsgrad and maximize.

use wgrad_core::{Error, Result};

use super::adam_foreach::step_all;
use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{
    Optimizer, ParamGroup, check_non_negative, device_mismatch, param_operand, state_operand,
    zeros_state,
};
use crate::storage::AdamStepOutcome;
use crate::{Storage, Tensor};

/// Hyper-parameters of [`Adam`], with `torch.optim.Adam`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdamConfig {
    /// Learning rate (>= 0). Default 1e-3.
    pub lr: f64,
    /// Decay rates of the first and second moment estimates, each in
    /// `[0, 1)`. Default (0.9, 0.999).
    pub betas: (f64, f64),
    /// Added to the denominator for stability (>= 0). Default 1e-8.
    pub eps: f64,
    /// L2 penalty added to the gradient (>= 0). Default 0.
    pub weight_decay: f64,
    /// Use the running maximum of the second moment (AMSGrad). Default off.
    pub amsgrad: bool,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
        }
    }
}

/// Hyper-parameters of [`AdamW`], with `torch.optim.AdamW`'s defaults (as
/// [`AdamConfig`] but `weight_decay = 1e-2`, applied as `param *= 1 - lr * wd`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdamWConfig {
    /// Learning rate (>= 0). Default 1e-3.
    pub lr: f64,
    /// Moment decay rates, each in `[0, 1)`. Default (0.9, 0.999).
    pub betas: (f64, f64),
    /// Denominator term (>= 0). Default 1e-8.
    pub eps: f64,
    /// Decoupled weight decay coefficient (>= 0). Default 1e-2.
    pub weight_decay: f64,
    /// AMSGrad. Default off.
    pub amsgrad: bool,
    /// Maximize the objective. Default off.
    pub maximize: bool,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        AdamWConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 1e-2,
            amsgrad: false,
            maximize: false,
        }
    }
}

/// Per-parameter state of [`Adam`]/[`AdamW`] (PyTorch's `state[p]`),
/// created on the first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct AdamState {
    /// Updates applied so far (the `t` of the bias corrections).
    pub step: u64,
    /// First moment estimate `m`.
    pub exp_avg: Tensor,
    /// Second moment estimate `v`.
    pub exp_avg_sq: Tensor,
    /// Running maximum of `v` (amsgrad only).
    pub max_exp_avg_sq: Option<Tensor>,
}

/// The defaults of [`AdamConfig`], as a constant.
const ADAM_DEFAULT: AdamConfig = AdamConfig {
    lr: 1e-3,
    betas: (0.9, 0.999),
    eps: 1e-8,
    weight_decay: 0.0,
    amsgrad: false,
    maximize: false,
};

impl From<AdamWConfig> for AdamConfig {
    fn from(c: AdamWConfig) -> AdamConfig {
        let AdamWConfig {
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize,
        } = c;
        AdamConfig {
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize,
        }
    }
}

impl From<AdamConfig> for AdamWConfig {
    fn from(c: AdamConfig) -> AdamWConfig {
        let AdamConfig {
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize,
        } = c;
        AdamWConfig {
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize,
        }
    }
}

/// [`GroupConfig`] for the two Adam configurations (beta1 is the momentum
/// that `OneCycleLR` cycles).
macro_rules! adam_group_config {
    ($t:ty) => {
        impl GroupConfig for $t {
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
    };
}
adam_group_config!(AdamConfig);
adam_group_config!(AdamWConfig);

/// Validates Adam's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, c: &AdamConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "epsilon value", c.eps)?;
    for (i, beta) in [c.betas.0, c.betas.1].into_iter().enumerate() {
        if !(0.0..1.0).contains(&beta) {
            return Err(Error::invalid(
                op,
                format!("Invalid beta parameter at index {i}: {beta}"),
            ));
        }
    }
    check_non_negative(op, "weight_decay value", c.weight_decay)
}

/// [`check_config`] for AdamW's groups.
fn check_config_w(op: &'static str, c: &AdamWConfig) -> Result<()> {
    check_config(op, &AdamConfig::from(*c))
}

/// Updates one parameter with gradient storage `grad` (`decoupled`: AdamW).
pub(super) fn update(
    op: &'static str,
    decoupled: bool,
    c: &AdamConfig,
    param: &Tensor,
    grad: Storage,
    slot: &mut Option<AdamState>,
) -> Result<()> {
    let param_storage = param.storage();
    if !param_storage.device().same(&grad.device()) {
        return Err(device_mismatch(op, &param_storage, &grad));
    }
    // Lazy state, as torch creates it on the first step with a gradient;
    // kept aside until the update succeeded.
    let fresh = match slot {
        Some(_) => None,
        None => Some(AdamState {
            step: 0,
            exp_avg: zeros_state(&param_storage)?,
            exp_avg_sq: zeros_state(&param_storage)?,
            max_exp_avg_sq: if c.amsgrad {
                Some(zeros_state(&param_storage)?)
            } else {
                None
            },
        }),
    };
    let state = slot
        .as_ref()
        .or(fresh.as_ref())
        .ok_or_else(|| Error::invalid(op, "optimizer state missing"))?;
    if c.amsgrad && state.max_exp_avg_sq.is_none() {
        return Err(Error::invalid(
            op,
            "amsgrad is on but the state has no max_exp_avg_sq (restored from a run without amsgrad?)",
        ));
    }
    let max_sq = if c.amsgrad {
        state.max_exp_avg_sq.as_ref()
    } else {
        None
    };
    let step = state.step + 1;
    let p = param_operand(param, param_storage)?;
    let m = state_operand(op, &p, &state.exp_avg)?;
    let v = state_operand(op, &p, &state.exp_avg_sq)?;
    let vmax = max_sq.map(|t| state_operand(op, &p, t)).transpose()?;
    let outcome = p.adam_step(
        op,
        &grad,
        &m,
        &v,
        vmax.as_ref(),
        step,
        c.lr,
        c.betas,
        c.eps,
        c.weight_decay,
        decoupled,
        c.maximize,
    )?;
    match outcome {
        AdamStepOutcome::Replaced {
            param: new_param,
            exp_avg,
            exp_avg_sq,
            max_exp_avg_sq,
        } => {
            param.set_storage(new_param)?;
            state.exp_avg.set_storage(exp_avg)?;
            state.exp_avg_sq.set_storage(exp_avg_sq)?;
            if let (Some(t), Some(x)) = (max_sq, max_exp_avg_sq) {
                t.set_storage(x)?;
            }
        }
        // Updated in place: graphs that saved the parameter are stale.
        AdamStepOutcome::InPlace => param.bump_version(),
    }
    if let Some(s) = fresh {
        *slot = Some(s);
    }
    if let Some(s) = slot.as_mut() {
        s.step = step;
    }
    Ok(())
}

/// Adam (`torch.optim.Adam`).
///
/// ```
/// use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Adam::new(vec![w.clone()], AdamConfig { lr: 0.1, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // The first step moves each weight by about lr against its gradient.
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.9, -1.9]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct Adam {
    groups: Groups<AdamConfig>,
    state: Vec<Option<AdamState>>,
}

/// AdamW (`torch.optim.AdamW`): Adam whose weight decay shrinks the
/// parameter directly (`param *= 1 - lr * weight_decay`) instead of adding
/// an L2 term to the gradient.
///
/// ```
/// use wgrad_autograd::optim::{AdamW, AdamWConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = AdamW::new(vec![w.clone()], AdamWConfig { lr: 0.1, weight_decay: 0.01, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // w * (1 - lr * weight_decay), then Adam's step of about lr.
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.899, -1.898]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct AdamW {
    groups: Groups<AdamWConfig>,
    state: Vec<Option<AdamState>>,
}

/// The constructors, state accessors and [`Optimizer`] impl of `$t` (Adam
/// or AdamW) over groups of `$config`.
macro_rules! adam_optimizer {
    ($t:ident, $config:ty, $op:literal, $decoupled:expr, $check:expr) => {
        impl $t {
            /// An optimizer over `params` (F32 leaves) in one group. Invalid
            /// hyper-parameters are `InvalidArgument`, as torch raises `ValueError`.
            pub fn new(params: Vec<Tensor>, config: $config) -> Result<$t> {
                $t::with_groups(vec![ParamGroup::new(params, config)])
            }

            /// An optimizer over several parameter groups, each with its
            /// own hyper-parameters (e.g. weight decay on matrices only).
            pub fn with_groups(groups: Vec<ParamGroup<$config>>) -> Result<$t> {
                let groups = Groups::new($op, groups, $check)?;
                let state = vec![None; groups.params().len()];
                Ok($t { groups, state })
            }

            /// Per-parameter state, in parameter order (`None` before the
            /// first step that found a gradient for that parameter).
            pub fn state(&self) -> &[Option<AdamState>] {
                &self.state
            }

            /// Mutable per-parameter state (to restore a checkpoint). Restored
            /// tensors must be F32 with their parameter's shape and device.
            pub fn state_mut(&mut self) -> &mut [Option<AdamState>] {
                &mut self.state
            }

            group_accessors!($config, $op, $check, None);
        }

        impl Optimizer for $t {
            fn step(&mut self) -> Result<()> {
                self.groups.check($op, $check)?;
                let mut state = std::mem::take(&mut self.state);
                let params = self
                    .groups
                    .iter()
                    .map(|(config, param)| (AdamConfig::from(*config), param));
                let result = step_all($op, $decoupled, params, &mut state);
                self.state = state;
                result
            }

            group_methods!();
        }
    };
}

adam_optimizer!(Adam, AdamConfig, "Adam", false, check_config);
adam_optimizer!(AdamW, AdamWConfig, "AdamW", true, check_config_w);

impl Adam {
    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &AdamConfig {
        self.groups.first().unwrap_or(&ADAM_DEFAULT)
    }
}

impl AdamW {
    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> AdamWConfig {
        self.groups
            .first()
            .copied()
            .unwrap_or_else(|| ADAM_DEFAULT.into())
    }
}
