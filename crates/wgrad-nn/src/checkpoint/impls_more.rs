//! [`OptimizerCheckpoint`] for NAdam, RAdam, Adamax and Adadelta: the step
//! count and two buffers with PyTorch's names, plus NAdam's `mu_product`,
//! an F32 0-d tensor as PyTorch keeps it.

use super::*;

/// The checkpoint of an optimizer whose state is a step count and two
/// parameter-shaped buffers, `$a` and `$b` (PyTorch's names and the state's
/// field names).
macro_rules! two_buffer_checkpoint {
    ($opt:ty, $state:ident, $variant:ident, $a:ident, $b:ident) => {
        impl OptimizerCheckpoint for $opt {
            fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
                let state = self
                    .state()
                    .iter()
                    .map(|slot| {
                        Ok(match slot {
                            Some(s) => ParamState {
                                step: Some(s.step),
                                buffers: vec![
                                    (stringify!($a).to_string(), snapshot(&s.$a)?),
                                    (stringify!($b).to_string(), snapshot(&s.$b)?),
                                ],
                            },
                            None => ParamState::default(),
                        })
                    })
                    .collect::<Result<_>>()?;
                state_dict(
                    own_groups(self.param_groups(), OptimizerConfig::$variant),
                    state,
                )
            }

            fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
                let own = own_groups(self.param_groups(), OptimizerConfig::$variant);
                let staged = stage_state(self.params(), &own, state, |ps, _| {
                    Ok(if ps.step.is_some() {
                        vec![stringify!($a), stringify!($b)]
                    } else {
                        vec![]
                    })
                })?;
                for (slot, (step, buffers)) in self.state_mut().iter_mut().zip(staged) {
                    let mut it = buffers.into_iter();
                    *slot = match (step, it.next(), it.next()) {
                        (Some(step), Some($a), Some($b)) => Some($state { step, $a, $b }),
                        _ => None,
                    };
                }
                set_lrs(self, state);
                Ok(())
            }
        }
    };
}

two_buffer_checkpoint!(RAdam, RAdamState, RAdam, exp_avg, exp_avg_sq);
two_buffer_checkpoint!(Adamax, AdamaxState, Adamax, exp_avg, exp_inf);
two_buffer_checkpoint!(Adadelta, AdadeltaState, Adadelta, square_avg, acc_delta);

/// NAdam's scalar state buffer.
const MU_PRODUCT: &str = "mu_product";

impl OptimizerCheckpoint for NAdam {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        let state = self
            .state()
            .iter()
            .map(|slot| {
                let Some(s) = slot else {
                    return Ok(ParamState::default());
                };
                // On the CPU, as PyTorch keeps it (when not capturable).
                let mu = Tensor::full(&[], s.mu_product, DType::F32, &Device::Cpu)?;
                Ok(ParamState {
                    step: Some(s.step),
                    buffers: vec![
                        ("exp_avg".to_string(), snapshot(&s.exp_avg)?),
                        ("exp_avg_sq".to_string(), snapshot(&s.exp_avg_sq)?),
                        (MU_PRODUCT.to_string(), mu),
                    ],
                })
            })
            .collect::<Result<_>>()?;
        state_dict(
            own_groups(self.param_groups(), OptimizerConfig::NAdam),
            state,
        )
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        const OP: &str = "load_state_dict";
        let own = own_groups(self.param_groups(), OptimizerConfig::NAdam);
        if !matches!(state.config, OptimizerConfig::NAdam(_)) {
            // Another optimizer's state: refused by the common checks.
            stage_state(self.params(), &own, state, |_, _| Ok(vec![]))?;
        }
        // `mu_product` is a scalar: taken out (and checked) here, the
        // parameter-shaped buffers staged with the common rules.
        let mut shaped = state.clone();
        let mut problems = Vec::new();
        let mut mus = Vec::with_capacity(shaped.state.len());
        for (i, ps) in shaped.state.iter_mut().enumerate() {
            let found = ps.buffers.iter().position(|(n, _)| n == MU_PRODUCT);
            let before = problems.len();
            let mu = match found.map(|k| ps.buffers.remove(k).1) {
                Some(t) if t.dtype() == DType::F32 && t.numel() == 1 && t.rank() <= 1 => {
                    Some(f64::from(t.item()?))
                }
                Some(t) => {
                    problems.push(format!(
                        "parameter {i}: {MU_PRODUCT} has dtype {} and shape {:?}, expected an F32 scalar",
                        t.dtype(),
                        t.shape()
                    ));
                    None
                }
                None => None,
            };
            match (ps.step, mu) {
                (Some(_), None) if problems.len() == before => {
                    problems.push(format!("parameter {i}: missing buffer {MU_PRODUCT}"));
                }
                (None, Some(_)) => {
                    problems.push(format!("parameter {i}: {MU_PRODUCT} without a step count"));
                }
                _ => {}
            }
            mus.push(mu);
        }
        if !problems.is_empty() {
            return Err(Error::invalid(
                OP,
                format!("{MEMORY_SOURCE}: {}", problems.join("; ")),
            ));
        }
        let staged = stage_state(self.params(), &own, &shaped, |ps, _| {
            Ok(if ps.step.is_some() {
                vec!["exp_avg", "exp_avg_sq"]
            } else {
                vec![]
            })
        })?;
        for ((slot, (step, buffers)), mu) in self.state_mut().iter_mut().zip(staged).zip(mus) {
            let mut it = buffers.into_iter();
            *slot = match (step, mu, it.next(), it.next()) {
                (Some(step), Some(mu_product), Some(exp_avg), Some(exp_avg_sq)) => {
                    Some(NAdamState {
                        step,
                        mu_product,
                        exp_avg,
                        exp_avg_sq,
                    })
                }
                _ => None,
            };
        }
        set_lrs(self, state);
        Ok(())
    }
}
