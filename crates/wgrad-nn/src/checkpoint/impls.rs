//! [`OptimizerCheckpoint`] for every optimizer: its state as
//! [`ParamState`]s (PyTorch's buffer names) and back.

use super::*;

impl OptimizerCheckpoint for Sgd {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        let state = self
            .state()
            .iter()
            .map(|s| {
                let buffers = match &s.momentum_buffer {
                    Some(b) => vec![("momentum_buffer".to_string(), snapshot(b)?)],
                    None => Vec::new(),
                };
                Ok(ParamState {
                    step: None,
                    buffers,
                })
            })
            .collect::<Result<_>>()?;
        state_dict(own_groups(self.param_groups(), OptimizerConfig::Sgd), state)
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        let own = own_groups(self.param_groups(), OptimizerConfig::Sgd);
        let staged = stage_state(self.params(), &own, state, |ps, config| {
            if ps.step.is_some() {
                return Err("SGD keeps no step count".to_string());
            }
            let momentum = match config {
                OptimizerConfig::Sgd(c) => c.momentum,
                _ => 0.0,
            };
            // The buffer appears after the first step with momentum on.
            let has_buffer = ps.buffers.iter().any(|(n, _)| n == "momentum_buffer");
            Ok(if momentum != 0.0 && has_buffer {
                vec!["momentum_buffer"]
            } else {
                vec![]
            })
        })?;
        for (slot, (_, mut buffers)) in self.state_mut().iter_mut().zip(staged) {
            *slot = SgdState {
                momentum_buffer: buffers.pop(),
            };
        }
        set_lrs(self, state);
        Ok(())
    }
}

/// Whether a group of an Adam-like optimizer uses amsgrad.
fn amsgrad(config: &OptimizerConfig) -> bool {
    match config {
        OptimizerConfig::Adam(c) => c.amsgrad,
        OptimizerConfig::AdamW(c) => c.amsgrad,
        _ => false,
    }
}

impl OptimizerCheckpoint for Adam {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        state_dict(
            own_groups(self.param_groups(), OptimizerConfig::Adam),
            adam_export(self.state())?,
        )
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        let own = own_groups(self.param_groups(), OptimizerConfig::Adam);
        let staged = stage_state(self.params(), &own, state, |ps, config| {
            adam_names(ps, amsgrad(config))
        })?;
        adam_import(self.state_mut(), staged);
        set_lrs(self, state);
        Ok(())
    }
}

impl OptimizerCheckpoint for AdamW {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        state_dict(
            own_groups(self.param_groups(), OptimizerConfig::AdamW),
            adam_export(self.state())?,
        )
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        let own = own_groups(self.param_groups(), OptimizerConfig::AdamW);
        let staged = stage_state(self.params(), &own, state, |ps, config| {
            adam_names(ps, amsgrad(config))
        })?;
        adam_import(self.state_mut(), staged);
        set_lrs(self, state);
        Ok(())
    }
}

impl OptimizerCheckpoint for RmsProp {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        let state = self
            .state()
            .iter()
            .map(|slot| {
                let Some(s) = slot else {
                    return Ok(ParamState::default());
                };
                let mut buffers = vec![("square_avg".to_string(), snapshot(&s.square_avg)?)];
                if let Some(b) = &s.momentum_buffer {
                    buffers.push(("momentum_buffer".to_string(), snapshot(b)?));
                }
                if let Some(g) = &s.grad_avg {
                    buffers.push(("grad_avg".to_string(), snapshot(g)?));
                }
                Ok(ParamState {
                    step: Some(s.step),
                    buffers,
                })
            })
            .collect::<Result<_>>()?;
        state_dict(
            own_groups(self.param_groups(), OptimizerConfig::RmsProp),
            state,
        )
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        let own = own_groups(self.param_groups(), OptimizerConfig::RmsProp);
        let staged = stage_state(self.params(), &own, state, |ps, config| {
            let OptimizerConfig::RmsProp(c) = config else {
                return Ok(vec![]);
            };
            if ps.step.is_none() {
                return Ok(vec![]);
            }
            let mut names = vec!["square_avg"];
            if c.momentum > 0.0 {
                names.push("momentum_buffer");
            }
            if c.centered {
                names.push("grad_avg");
            }
            Ok(names)
        })?;
        let configs: Vec<_> = self
            .param_groups()
            .iter()
            .flat_map(|g| std::iter::repeat_n(g.config, g.params().len()))
            .collect();
        for ((slot, (step, buffers)), c) in self.state_mut().iter_mut().zip(staged).zip(configs) {
            let mut it = buffers.into_iter();
            *slot = match (step, it.next()) {
                (Some(step), Some(square_avg)) => Some(RmsPropState {
                    step,
                    square_avg,
                    momentum_buffer: if c.momentum > 0.0 { it.next() } else { None },
                    grad_avg: if c.centered { it.next() } else { None },
                }),
                _ => None,
            };
        }
        set_lrs(self, state);
        Ok(())
    }
}

impl OptimizerCheckpoint for Adagrad {
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict> {
        let state = self
            .state()
            .iter()
            .map(|slot| {
                Ok(match slot {
                    Some(s) => ParamState {
                        step: Some(s.step),
                        buffers: vec![("sum".to_string(), snapshot(&s.sum)?)],
                    },
                    None => ParamState::default(),
                })
            })
            .collect::<Result<_>>()?;
        state_dict(
            own_groups(self.param_groups(), OptimizerConfig::Adagrad),
            state,
        )
    }

    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()> {
        let own = own_groups(self.param_groups(), OptimizerConfig::Adagrad);
        let staged = stage_state(self.params(), &own, state, |ps, _| {
            Ok(if ps.step.is_some() {
                vec!["sum"]
            } else {
                vec![]
            })
        })?;
        for (slot, (step, buffers)) in self.state_mut().iter_mut().zip(staged) {
            *slot = match (step, buffers.into_iter().next()) {
                (Some(step), Some(sum)) => Some(AdagradState { step, sum }),
                _ => None,
            };
        }
        set_lrs(self, state);
        Ok(())
    }
}
