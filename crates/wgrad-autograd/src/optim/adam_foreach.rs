//! Adam/AdamW's multi-tensor step: GPU parameters that share a group's
//! hyper-parameters and a step count are updated together by
//! [`GpuTensor::adam_step_foreach_`] (four per dispatch), as PyTorch's
//! default `foreach` implementation batches its updates. Everything else
//! (CPU and half parameters, amsgrad) takes the per-parameter path.

use wgrad_core::{DType, Result};
use wgrad_gpu::{AdamOperands, GpuTensor};

use super::adam::{AdamConfig, AdamState, update};
use super::{param_operand, state_operand, zeros_state};
use crate::{Storage, Tensor};

/// A parameter ready for the multi-tensor step, with its operands made
/// dense; its state, if new, is kept aside until the update succeeded.
struct Entry {
    index: usize,
    param: Tensor,
    operands: [GpuTensor; 4],
    fresh: Option<AdamState>,
}

/// Parameters collected for one `adam_step_foreach_` call: one group's
/// hyper-parameters, one step count.
#[derive(Default)]
struct Batch {
    config: Option<AdamConfig>,
    step: u64,
    entries: Vec<Entry>,
}

/// One Adam/AdamW step of `params` (each with its group's config, in
/// parameter order), with `state` their per-parameter state.
pub(super) fn step_all<'a>(
    op: &'static str,
    decoupled: bool,
    params: impl Iterator<Item = (AdamConfig, &'a Tensor)>,
    state: &mut [Option<AdamState>],
) -> Result<()> {
    let mut batch = Batch::default();
    for (index, (config, param)) in params.enumerate() {
        let Some(grad) = param.grad() else {
            continue;
        };
        let grad = grad.storage();
        let slot = state
            .get_mut(index)
            .ok_or_else(|| wgrad_core::Error::invalid(op, "optimizer state missing"))?;
        match prepare(&config, index, param, &grad, slot)? {
            Some((step, entry)) => {
                if batch.config != Some(config) || batch.step != step {
                    batch.flush(decoupled, state)?;
                    batch = Batch {
                        config: Some(config),
                        step,
                        entries: Vec::new(),
                    };
                }
                batch.entries.push(entry);
            }
            None => update(op, decoupled, &config, param, grad, slot)?,
        }
    }
    batch.flush(decoupled, state)
}

/// `param`'s operands for the multi-tensor step, with the step count it
/// will be at, or `None` when it takes the per-parameter path (not an F32
/// GPU parameter with an F32 GPU gradient, or amsgrad on).
fn prepare(
    config: &AdamConfig,
    index: usize,
    param: &Tensor,
    grad: &Storage,
    slot: &Option<AdamState>,
) -> Result<Option<(u64, Entry)>> {
    const OP: &str = "adam_step";
    let storage = param.storage();
    let eligible = !config.amsgrad
        && storage.dtype() == DType::F32
        && grad.dtype() == DType::F32
        && matches!((&storage, grad), (Storage::Gpu(_), Storage::Gpu(_)))
        && storage.device().same(&grad.device());
    if !eligible {
        return Ok(None);
    }
    let fresh = match slot {
        Some(_) => None,
        None => Some(AdamState {
            step: 0,
            exp_avg: zeros_state(&storage)?,
            exp_avg_sq: zeros_state(&storage)?,
            max_exp_avg_sq: None,
        }),
    };
    let Some(state) = slot.as_ref().or(fresh.as_ref()) else {
        return Ok(None);
    };
    let p = param_operand(param, storage)?;
    let m = state_operand(OP, &p, &state.exp_avg)?;
    let v = state_operand(OP, &p, &state.exp_avg_sq)?;
    let step = state.step + 1;
    match (p, grad, m, v) {
        (Storage::Gpu(p), Storage::Gpu(g), Storage::Gpu(m), Storage::Gpu(v)) => Ok(Some((
            step,
            Entry {
                index,
                param: param.clone(),
                operands: [p, g.clone(), m, v],
                fresh,
            },
        ))),
        _ => Ok(None),
    }
}

impl Batch {
    /// Runs the collected updates, then records them: a new state is kept,
    /// every step count advances, and each parameter's version is bumped
    /// (graphs that saved it are stale). On an error nothing is recorded.
    fn flush(&mut self, decoupled: bool, state: &mut [Option<AdamState>]) -> Result<()> {
        let (Some(c), false) = (self.config, self.entries.is_empty()) else {
            return Ok(());
        };
        let items: Vec<AdamOperands<'_>> = self
            .entries
            .iter()
            .map(|e| {
                let [param, grad, exp_avg, exp_avg_sq] = &e.operands;
                AdamOperands {
                    param,
                    grad,
                    exp_avg,
                    exp_avg_sq,
                }
            })
            .collect();
        GpuTensor::adam_step_foreach_(
            &items,
            self.step,
            c.lr,
            c.betas,
            c.eps,
            c.weight_decay,
            decoupled,
            c.maximize,
        )?;
        for entry in self.entries.drain(..) {
            entry.param.bump_version();
            let Some(slot) = state.get_mut(entry.index) else {
                continue;
            };
            if let Some(fresh) = entry.fresh {
                *slot = Some(fresh);
            }
            if let Some(s) = slot.as_mut() {
                s.step = self.step;
            }
        }
        Ok(())
    }
}
