//! `torch.optim.SGD`: plain, momentum, Nesterov, weight decay, maximize.

use wgrad_core::Result;

use super::{
    Optimizer, check_non_negative, check_params, cpu_state, device_mismatch, gpu_param, gpu_state,
    zeros_state,
};
use crate::{Storage, Tensor};

const OP: &str = "SGD";

/// Hyper-parameters of [`Sgd`], with `torch.optim.SGD`'s defaults
/// (`lr = 1e-3`, everything else off).
#[derive(Clone, Copy, Debug, PartialEq)]
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

/// Stochastic gradient descent (`torch.optim.SGD`).
pub struct Sgd {
    params: Vec<Tensor>,
    config: SgdConfig,
    state: Vec<SgdState>,
    initial_lr: Option<f64>,
}

impl Sgd {
    /// An optimizer over `params` (F32 leaves). Invalid hyper-parameters are
    /// `InvalidArgument`, as `torch.optim.SGD` raises `ValueError`.
    pub fn new(params: Vec<Tensor>, config: SgdConfig) -> Result<Sgd> {
        check_params(OP, &params)?;
        check_non_negative(OP, "learning rate", config.lr)?;
        check_non_negative(OP, "momentum value", config.momentum)?;
        check_non_negative(OP, "weight_decay value", config.weight_decay)?;
        if config.nesterov && (config.momentum <= 0.0 || config.dampening != 0.0) {
            return Err(wgrad_core::Error::invalid(
                OP,
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        let state = vec![SgdState::default(); params.len()];
        Ok(Sgd {
            params,
            config,
            state,
            initial_lr: None,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &SgdConfig {
        &self.config
    }

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
        match (param.storage(), grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let param_storage = Storage::Cpu(p.clone());
                let buf = match (&state.momentum_buffer, use_buffer) {
                    (Some(b), true) => Some(cpu_state(OP, &param_storage, b)?),
                    _ => None,
                };
                let (new_p, new_buf) = p.sgd_step(
                    &g,
                    buf.as_ref(),
                    c.lr,
                    c.momentum,
                    c.dampening,
                    c.weight_decay,
                    c.nesterov,
                    c.maximize,
                )?;
                param.set_storage(Storage::Cpu(new_p))?;
                if let Some(nb) = new_buf {
                    match &state.momentum_buffer {
                        Some(b) => b.set_storage(Storage::Cpu(nb))?,
                        None => {
                            state.momentum_buffer =
                                Some(Tensor::from_storage_leaf(Storage::Cpu(nb)))
                        }
                    }
                }
                Ok(())
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                let p = gpu_param(param, p)?;
                // A new buffer joins the state only once the step succeeded, so
                // that a failed first step is retried as a first step.
                let mut fresh = None;
                let (buf, first) = match (&state.momentum_buffer, use_buffer) {
                    (Some(b), true) => (Some(gpu_state(OP, &p, b)?), false),
                    (None, true) => {
                        let b = zeros_state(&Storage::Gpu(p.clone()))?;
                        let t = gpu_state(OP, &p, &b)?;
                        fresh = Some(b);
                        (Some(t), true)
                    }
                    _ => (None, false),
                };
                p.sgd_step_(
                    &g,
                    buf.as_ref(),
                    first,
                    c.lr,
                    c.momentum,
                    c.dampening,
                    c.weight_decay,
                    c.nesterov,
                    c.maximize,
                )?;
                // Updated in place: graphs that saved the parameter are stale.
                param.bump_version();
                if fresh.is_some() {
                    state.momentum_buffer = fresh;
                }
                Ok(())
            }
            (p, g) => Err(device_mismatch(OP, &p, &g)),
        }
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        for (param, state) in self.params.iter().zip(&mut self.state) {
            let Some(grad) = param.grad() else { continue };
            Sgd::update(&self.config, param, grad.storage(), state)?;
        }
        Ok(())
    }

    fn zero_grad(&mut self) {
        for p in &self.params {
            p.zero_grad();
        }
    }

    fn lr(&self) -> f64 {
        self.config.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.config.lr = lr;
    }

    fn initial_lr(&self) -> Option<f64> {
        self.initial_lr
    }

    fn set_initial_lr(&mut self, lr: f64) {
        self.initial_lr = Some(lr);
    }

    fn params(&self) -> &[Tensor] {
        &self.params
    }
}
