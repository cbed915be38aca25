//! [`OptimizerConfig`]: the hyper-parameters of one parameter group of a
//! supported optimizer, and their file metadata form.

use std::collections::HashMap;

use wgrad_autograd::optim::{AdagradConfig, AdamConfig, AdamWConfig, RmsPropConfig, SgdConfig};

use crate::codec::OPTIM_PREFIX as PREFIX;

/// The hyper-parameters of a supported optimizer (of one parameter group).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptimizerConfig {
    /// `torch.optim.SGD`.
    Sgd(SgdConfig),
    /// `torch.optim.Adam`.
    Adam(AdamConfig),
    /// `torch.optim.AdamW`.
    AdamW(AdamWConfig),
    /// `torch.optim.RMSprop`.
    RmsProp(RmsPropConfig),
    /// `torch.optim.Adagrad`.
    Adagrad(AdagradConfig),
}

/// The optimizers a file may name.
const KINDS: &str = "SGD, Adam, AdamW, RMSprop, Adagrad";

impl OptimizerConfig {
    /// The optimizer's class name as PyTorch spells it (`SGD`, `Adam`,
    /// `AdamW`, `RMSprop`, `Adagrad`).
    pub fn kind(&self) -> &'static str {
        match self {
            OptimizerConfig::Sgd(_) => "SGD",
            OptimizerConfig::Adam(_) => "Adam",
            OptimizerConfig::AdamW(_) => "AdamW",
            OptimizerConfig::RmsProp(_) => "RMSprop",
            OptimizerConfig::Adagrad(_) => "Adagrad",
        }
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        match self {
            OptimizerConfig::Sgd(c) => c.lr,
            OptimizerConfig::Adam(c) => c.lr,
            OptimizerConfig::AdamW(c) => c.lr,
            OptimizerConfig::RmsProp(c) => c.lr,
            OptimizerConfig::Adagrad(c) => c.lr,
        }
    }

    /// The same hyper-parameters with learning rate `lr`.
    pub(super) fn with_lr(mut self, lr: f64) -> Self {
        match &mut self {
            OptimizerConfig::Sgd(c) => c.lr = lr,
            OptimizerConfig::Adam(c) => c.lr = lr,
            OptimizerConfig::AdamW(c) => c.lr = lr,
            OptimizerConfig::RmsProp(c) => c.lr = lr,
            OptimizerConfig::Adagrad(c) => c.lr = lr,
        }
        self
    }

    /// `(optim.{key}, value)` pairs with PyTorch's `param_groups` keys,
    /// `optim.type` first.
    pub(super) fn metadata_pairs(self) -> Vec<(String, String)> {
        let mut pairs = vec![(format!("{PREFIX}type"), self.kind().to_string())];
        pairs.extend(self.hyper_pairs(PREFIX));
        pairs
    }

    /// `({prefix}{key}, value)` pairs of the hyper-parameters (no type).
    /// Floats use Rust's shortest round-trip form, so they parse back exactly.
    pub(super) fn hyper_pairs(self, prefix: &str) -> Vec<(String, String)> {
        let f = |x: f64| format!("{x:?}");
        let b = |x: bool| x.to_string();
        let pairs: Vec<(&str, String)> = match self {
            OptimizerConfig::Sgd(c) => vec![
                ("lr", f(c.lr)),
                ("momentum", f(c.momentum)),
                ("dampening", f(c.dampening)),
                ("nesterov", b(c.nesterov)),
                ("weight_decay", f(c.weight_decay)),
                ("maximize", b(c.maximize)),
            ],
            OptimizerConfig::Adam(AdamConfig {
                lr,
                betas,
                eps,
                weight_decay,
                amsgrad,
                maximize,
            })
            | OptimizerConfig::AdamW(AdamWConfig {
                lr,
                betas,
                eps,
                weight_decay,
                amsgrad,
                maximize,
            }) => vec![
                ("lr", f(lr)),
                ("betas", format!("[{}, {}]", f(betas.0), f(betas.1))),
                ("eps", f(eps)),
                ("weight_decay", f(weight_decay)),
                ("amsgrad", b(amsgrad)),
                ("maximize", b(maximize)),
            ],
            OptimizerConfig::RmsProp(c) => vec![
                ("lr", f(c.lr)),
                ("alpha", f(c.alpha)),
                ("eps", f(c.eps)),
                ("weight_decay", f(c.weight_decay)),
                ("momentum", f(c.momentum)),
                ("centered", b(c.centered)),
                ("maximize", b(c.maximize)),
            ],
            OptimizerConfig::Adagrad(c) => vec![
                ("lr", f(c.lr)),
                ("lr_decay", f(c.lr_decay)),
                ("weight_decay", f(c.weight_decay)),
                ("initial_accumulator_value", f(c.initial_accumulator_value)),
                ("eps", f(c.eps)),
                ("maximize", b(c.maximize)),
            ],
        };
        pairs
            .into_iter()
            .map(|(k, v)| (format!("{prefix}{k}"), v))
            .collect()
    }

    /// Reads the first group's hyper-parameters back from file metadata.
    pub(super) fn from_metadata(meta: &HashMap<String, String>) -> Result<Self, String> {
        let kind = meta
            .get(&format!("{PREFIX}type"))
            .ok_or_else(|| format!("metadata lacks '{PREFIX}type'"))?;
        OptimizerConfig::from_metadata_with(meta, PREFIX, kind)
    }

    /// Reads the hyper-parameters of optimizer `kind` stored under `prefix`.
    pub(super) fn from_metadata_with(
        meta: &HashMap<String, String>,
        prefix: &str,
        kind: &str,
    ) -> Result<Self, String> {
        let get = |key: &str| {
            meta.get(&format!("{prefix}{key}"))
                .ok_or_else(|| format!("metadata lacks '{prefix}{key}'"))
        };
        let float = |key: &str| -> Result<f64, String> {
            let v = get(key)?;
            v.trim()
                .parse()
                .map_err(|_| format!("metadata '{prefix}{key}' = {v:?} is not a number"))
        };
        let flag = |key: &str| -> Result<bool, String> {
            let v = get(key)?;
            v.trim()
                .parse()
                .map_err(|_| format!("metadata '{prefix}{key}' = {v:?} is not true/false"))
        };
        let betas = || -> Result<(f64, f64), String> {
            let v = get("betas")?;
            let bad = || format!("metadata '{prefix}betas' = {v:?} is not two numbers");
            let parts: Vec<f64> = v
                .trim()
                .trim_start_matches(['[', '('])
                .trim_end_matches([']', ')'])
                .split(',')
                .map(|x| x.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            match parts[..] {
                [b1, b2] => Ok((b1, b2)),
                _ => Err(bad()),
            }
        };
        match kind {
            "SGD" => Ok(OptimizerConfig::Sgd(SgdConfig {
                lr: float("lr")?,
                momentum: float("momentum")?,
                dampening: float("dampening")?,
                nesterov: flag("nesterov")?,
                weight_decay: float("weight_decay")?,
                maximize: flag("maximize")?,
            })),
            "Adam" | "AdamW" => {
                let c = AdamConfig {
                    lr: float("lr")?,
                    betas: betas()?,
                    eps: float("eps")?,
                    weight_decay: float("weight_decay")?,
                    amsgrad: flag("amsgrad")?,
                    maximize: flag("maximize")?,
                };
                Ok(if kind == "Adam" {
                    OptimizerConfig::Adam(c)
                } else {
                    OptimizerConfig::AdamW(c.into())
                })
            }
            "RMSprop" => Ok(OptimizerConfig::RmsProp(RmsPropConfig {
                lr: float("lr")?,
                alpha: float("alpha")?,
                eps: float("eps")?,
                weight_decay: float("weight_decay")?,
                momentum: float("momentum")?,
                centered: flag("centered")?,
                maximize: flag("maximize")?,
            })),
            "Adagrad" => Ok(OptimizerConfig::Adagrad(AdagradConfig {
                lr: float("lr")?,
                lr_decay: float("lr_decay")?,
                weight_decay: float("weight_decay")?,
                initial_accumulator_value: float("initial_accumulator_value")?,
                eps: float("eps")?,
                maximize: flag("maximize")?,
            })),
            other => Err(format!(
                "metadata '{PREFIX}type' = {other:?} is not an optimizer wgrad has ({KINDS})"
            )),
        }
    }
}
