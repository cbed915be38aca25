//! `torch.optim.RMSprop`: plain, centered, momentum, weight decay, maximize.

use wgrad_core::checks::optim::RmsPropCoefficients;
use wgrad_core::{Error, Result};

use super::group::{GroupConfig, Groups, group_accessors, group_methods};
use super::{
    Optimizer, ParamGroup, check_non_negative, device_mismatch, param_operand, state_operand,
    zeros_state,
};
use crate::storage::StateStepOutcome;
use crate::{Storage, Tensor};

const OP: &str = "RMSprop";

/// Hyper-parameters of [`RmsProp`], with `torch.optim.RMSprop`'s defaults.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RmsPropConfig {
    /// Learning rate (>= 0). Default 1e-2.
    pub lr: f64,
    /// Smoothing constant of the square average, in `[0, 1)`. Default 0.99.
    pub alpha: f64,
    /// Added to the denominator for stability (>= 0). Default 1e-8.
    pub eps: f64,
    /// L2 penalty added to the gradient (>= 0). Default 0.
    pub weight_decay: f64,
    /// Momentum factor (>= 0; 0 keeps no momentum buffer). Default 0.
    pub momentum: f64,
    /// Normalize by the estimated variance (square average minus the
    /// squared gradient average) instead of the square average. Default off.
    pub centered: bool,
    /// Maximize the objective instead of minimizing it. Default off.
    pub maximize: bool,
}

impl Default for RmsPropConfig {
    fn default() -> Self {
        DEFAULT
    }
}

/// The defaults, as a constant.
const DEFAULT: RmsPropConfig = RmsPropConfig {
    lr: 1e-2,
    alpha: 0.99,
    eps: 1e-8,
    weight_decay: 0.0,
    momentum: 0.0,
    centered: false,
    maximize: false,
};

impl GroupConfig for RmsPropConfig {
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

/// Validates RMSprop's hyper-parameters as torch does (`alpha >= 0`; `alpha
/// = 1` freezes the square average at zero and `alpha > 1` can drive it
/// negative, both accepted by torch and computed as torch does).
fn check_config(op: &'static str, c: &RmsPropConfig) -> Result<()> {
    check_non_negative(op, "learning rate", c.lr)?;
    check_non_negative(op, "epsilon value", c.eps)?;
    check_non_negative(op, "momentum value", c.momentum)?;
    check_non_negative(op, "weight_decay value", c.weight_decay)?;
    if c.alpha.is_nan() || c.alpha < 0.0 {
        return Err(Error::invalid(
            op,
            format!("Invalid alpha value: {} (must be >= 0)", c.alpha),
        ));
    }
    Ok(())
}

/// Per-parameter state of [`RmsProp`] (PyTorch's `state[p]`), created on
/// the first step that finds a gradient.
#[derive(Clone, Debug)]
pub struct RmsPropState {
    /// Updates applied so far.
    pub step: u64,
    /// Running average of the squared gradient.
    pub square_avg: Tensor,
    /// Momentum buffer (momentum > 0 only).
    pub momentum_buffer: Option<Tensor>,
    /// Running average of the gradient (centered only).
    pub grad_avg: Option<Tensor>,
}

/// RMSprop (`torch.optim.RMSprop`).
///
/// ```
/// use wgrad_autograd::optim::{RmsProp, RmsPropConfig, Optimizer};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = RmsProp::new(vec![w.clone()], RmsPropConfig { lr: 0.01, ..Default::default() })?;
/// opt.zero_grad();
/// w.square()?.sum_all()?.backward()?; // grad = 2w
/// opt.step()?;
/// // First step: grad / sqrt((1 - alpha) grad^2) = 10 sign(grad), times lr.
/// for (got, want) in w.to_vec_f32()?.iter().zip([0.9, -1.9]) {
///     assert!((got - want).abs() < 1e-5, "{got} vs {want}");
/// }
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub struct RmsProp {
    groups: Groups<RmsPropConfig>,
    state: Vec<Option<RmsPropState>>,
}

impl RmsProp {
    /// An optimizer over `params` (F32 leaves) in one group. Invalid
    /// hyper-parameters are `InvalidArgument` naming the value.
    pub fn new(params: Vec<Tensor>, config: RmsPropConfig) -> Result<RmsProp> {
        RmsProp::with_groups(vec![ParamGroup::new(params, config)])
    }

    /// An optimizer over several parameter groups, each with its own
    /// hyper-parameters.
    pub fn with_groups(groups: Vec<ParamGroup<RmsPropConfig>>) -> Result<RmsProp> {
        let groups = Groups::new(OP, groups, check_config)?;
        let state = vec![None; groups.params().len()];
        Ok(RmsProp { groups, state })
    }

    /// The hyper-parameters (the first group's).
    pub fn config(&self) -> &RmsPropConfig {
        self.groups.first().unwrap_or(&DEFAULT)
    }

    /// Per-parameter state, in parameter order.
    pub fn state(&self) -> &[Option<RmsPropState>] {
        &self.state
    }

    /// Mutable per-parameter state (to restore a checkpoint). Restored
    /// tensors must be F32 with their parameter's shape and device.
    pub fn state_mut(&mut self) -> &mut [Option<RmsPropState>] {
        &mut self.state
    }

    group_accessors!(RmsPropConfig, OP, check_config, None);
}

/// Updates one parameter with gradient storage `grad`.
fn update(
    c: &RmsPropConfig,
    param: &Tensor,
    grad: Storage,
    slot: &mut Option<RmsPropState>,
) -> Result<()> {
    let param_storage = param.storage();
    if !param_storage.device().same(&grad.device()) {
        return Err(device_mismatch(OP, &param_storage, &grad));
    }
    // The state this step uses: the existing one (tensor handles, shared)
    // with any piece the configuration now needs added as zeros (torch's
    // zeros_like). It replaces the slot only once the update succeeded.
    let mut cur = match slot {
        Some(s) => s.clone(),
        None => RmsPropState {
            step: 0,
            square_avg: zeros_state(&param_storage)?,
            momentum_buffer: None,
            grad_avg: None,
        },
    };
    if c.momentum > 0.0 && cur.momentum_buffer.is_none() {
        cur.momentum_buffer = Some(zeros_state(&param_storage)?);
    }
    if c.centered && cur.grad_avg.is_none() {
        cur.grad_avg = Some(zeros_state(&param_storage)?);
    }
    let ga_t = cur.grad_avg.as_ref().filter(|_| c.centered);
    let buf_t = cur.momentum_buffer.as_ref().filter(|_| c.momentum > 0.0);
    let p = param_operand(param, param_storage)?;
    let v = state_operand(OP, &p, &cur.square_avg)?;
    let ga = ga_t.map(|t| state_operand(OP, &p, t)).transpose()?;
    let buf = buf_t.map(|t| state_operand(OP, &p, t)).transpose()?;
    let k = RmsPropCoefficients::new(c.lr, c.alpha, c.eps, c.weight_decay, c.momentum, c.maximize);
    match p.rmsprop_step(OP, &grad, &v, ga.as_ref(), buf.as_ref(), &k)? {
        StateStepOutcome::Replaced {
            param: new_param,
            state,
        } => {
            param.set_storage(new_param)?;
            let targets = std::iter::once(&cur.square_avg).chain(ga_t).chain(buf_t);
            for (t, s) in targets.zip(state) {
                t.set_storage(s)?;
            }
        }
        // Updated in place: graphs that saved the parameter are stale.
        StateStepOutcome::InPlace => param.bump_version(),
    }
    cur.step += 1;
    *slot = Some(cur);
    Ok(())
}

impl Optimizer for RmsProp {
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
