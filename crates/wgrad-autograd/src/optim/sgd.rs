//! `torch.optim.SGD`: plain, momentum, Nesterov, weight decay, maximize.

use wgrad_core::Result;

use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{Optimizer, ParamGroup, check_non_negative, param_operand, state_operand};
use crate::storage::SgdStepOutcome;
use crate::{Storage, Tensor};

const OP: &str = "SGD";
/// What [`Sgd::config`] would show for an optimizer without groups.
const DEFAULT: SgdConfig = SgdConfig {
    lr: 1e-3,
    momentum: 0.0,
    dampening: 0.0,
    nesterov: false,
    weight_decay: 0.0,
    maximize: false,
};

/// Hyper-parameters of [`Sgd`], with `torch.optim.SGD`'s defaults
/// (`lr = 1e-3`, everything else off).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SgdConfig {
    /// Learning rate (>= 0).
    pub lr: f64,
    /// Momentum factor (>= 0; 0 disables the momentum buffer).
    pub momentum: f64,
    /// Dampening of the gradient added to the momentum buffer.
    pub dampening: f64,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`).
    pub nesterov: bool,
    /// L2 penalty added to the gradient (>= 0).
    pub weight_decay: f64,
    /// Maximize the objective instead of minimizing it.
    pub maximize: bool,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

impl SgdConfig {
    /// The defaults with learning rate `lr`.
    pub fn new(lr: f64) -> Self {
        SgdConfig {
            lr,
            ..Default::default()
        }
    }
}

/// Per-parameter state of [`Sgd`] (PyTorch's `state[p]`).
#[derive(Clone, Debug, Default)]
pub struct SgdState {
    /// The momentum buffer: `None` until the first step with a gradient
    /// (it then starts as that gradient) and whenever momentum is 0.
    pub momentum_buffer: Option<Tensor>,
}

impl GroupConfig for SgdConfig {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.momentum)
    }
    fn set_momentum(&mut self, momentum: f64) {
        self.momentum = momentum;
    }
}

/// Validates SGD's hyper-parameters the way torch does (`ValueError` there).
fn check_config(op: &'static str, config: &SgdConfig) -> Result<()> {
    check_non_negative(op, "learning rate", config.lr)?;
    check_non_negative(op, "momentum value", config.momentum)?;
    check_non_negative(op, "weight_decay value", config.weight_decay)?;
    if config.nesterov && (config.momentum <= 0.0 || config.dampening != 0.0) {
        return Err(wgrad_core::Error::invalid(
            op,
            "Nesterov momentum requires a momentum and zero dampening",
        ));
    }
    Ok(())
}

/// Stochastic gradient descent (`torch.optim.SGD`).
///
/// ```
/// use wgrad_autograd::optim::{Sgd, SgdConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1))?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // w - lr * grad
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.8, -1.6]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct Sgd {
    groups: Groups<SgdConfig>,
    state: Vec<SgdState>,
}

impl Sgd {
    /// An optimizer over `params` (F32 leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument`, as `torch.optim.SGD` raises
    /// `ValueError`.
    pub fn new(params: Vec<Tensor>, config: SgdConfig) -> Result<Sgd> {
        Sgd::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters (`torch.optim.SGD([{"params": ..., "lr": ...}, ...])`).
    pub fn with_groups(groups: Vec<ParamGroup<SgdConfig>>) -> Result<Sgd> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![SgdState::default(); groups.params().len()];
        Ok(Sgd { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &SgdConfig {
        // A Groups always has a group; the default is never seen.
        self.groups.first().unwrap_or(&DEFAULT)
    }

    group_accessors!(SgdConfig, OP, check_config, SgdState::default());

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[SgdState] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [SgdState] {
        &mut self.state
    }

    /// Updates one parameter with gradient storage `grad`.
    fn update(
        config: &SgdConfig,
        param: &Tensor,
        grad: Storage,
        state: &mut SgdState,
    ) -> Result<()> {
        let c = config;
        let use_buffer = c.momentum != 0.0;
        let p = param.storage();
        p.check_step_backend(OP, &grad)?;
        let p = param_operand(param, p)?;
        let buf = match (&state.momentum_buffer, use_buffer) {
            (Some(b), true) => Some(state_operand(OP, &p, b)?),
            _ => None,
        };
        let outcome = p.sgd_step(
            OP,
            &grad,
            buf.as_ref(),
            c.lr,
            c.momentum,
            c.dampening,
            c.weight_decay,
            c.nesterov,
            c.maximize,
        )?;
        match outcome {
            SgdStepOutcome::Replaced {
                param: new_param,
                momentum_buffer,
            } => {
                param.set_storage(new_param)?;
                if let Some(nb) = momentum_buffer {
                    match &state.momentum_buffer {
                        Some(b) => b.set_storage(nb)?,
                        None => state.momentum_buffer = Some(Tensor::from_storage_leaf(nb)),
                    }
                }
            }
            SgdStepOutcome::InPlace {
                new_momentum_buffer,
            } => {
                // Updated in place: graphs that saved the parameter are stale.
                param.bump_version();
                // A new buffer joins the state only once the step succeeded,
                // so that a failed first step is retried as a first step.
                if let Some(nb) = new_momentum_buffer {
                    state.momentum_buffer = Some(Tensor::from_storage_leaf(nb));
                }
            }
        }
        Ok(())
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        self.groups.check(OP, check_config)?;
        for ((config, param), state) in self.groups.iter().zip(&mut self.state) {
            let Some(grad) = param.grad() else { continue };
            Sgd::update(config, param, grad.storage(), state)?;
        }
        Ok(())
    }

    group_methods!();
}
