//! [`OptimizerConfig`]: the hyper-parameters of one parameter group of a
//! supported optimizer, and their file metadata form (`optim.type` and one
//! `optim.{key}` entry per field of the config, written and read by serde).

use std::collections::HashMap;

use wgrad_autograd::optim::{
    AdadeltaConfig, AdagradConfig, AdamConfig, AdamWConfig, AdamaxConfig, NAdamConfig, RAdamConfig,
    RmsPropConfig, SgdConfig,
};

use super::metadata::{from_pairs, to_pairs};
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
    /// `torch.optim.NAdam`.
    NAdam(NAdamConfig),
    /// `torch.optim.RAdam`.
    RAdam(RAdamConfig),
    /// `torch.optim.Adamax`.
    Adamax(AdamaxConfig),
    /// `torch.optim.Adadelta`.
    Adadelta(AdadeltaConfig),
}

/// The optimizers a file may name.
const KINDS: &str = "SGD, Adam, AdamW, RMSprop, Adagrad, NAdam, RAdam, Adamax, Adadelta";

impl OptimizerConfig {
    /// The optimizer's class name as PyTorch spells it (`SGD`, `Adam`,
    /// `AdamW`, `RMSprop`, `Adagrad`, `NAdam`, `RAdam`, `Adamax`, `Adadelta`).
    pub fn kind(&self) -> &'static str {
        match self {
            OptimizerConfig::Sgd(_) => "SGD",
            OptimizerConfig::Adam(_) => "Adam",
            OptimizerConfig::AdamW(_) => "AdamW",
            OptimizerConfig::RmsProp(_) => "RMSprop",
            OptimizerConfig::Adagrad(_) => "Adagrad",
            OptimizerConfig::NAdam(_) => "NAdam",
            OptimizerConfig::RAdam(_) => "RAdam",
            OptimizerConfig::Adamax(_) => "Adamax",
            OptimizerConfig::Adadelta(_) => "Adadelta",
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
            OptimizerConfig::NAdam(c) => c.lr,
            OptimizerConfig::RAdam(c) => c.lr,
            OptimizerConfig::Adamax(c) => c.lr,
            OptimizerConfig::Adadelta(c) => c.lr,
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
            OptimizerConfig::NAdam(c) => c.lr = lr,
            OptimizerConfig::RAdam(c) => c.lr = lr,
            OptimizerConfig::Adamax(c) => c.lr = lr,
            OptimizerConfig::Adadelta(c) => c.lr = lr,
        }
        self
    }

    /// `(optim.{key}, value)` pairs with PyTorch's `param_groups` keys,
    /// `optim.type` first.
    pub(super) fn metadata_pairs(self) -> Result<Vec<(String, String)>, String> {
        let mut pairs = vec![(format!("{PREFIX}type"), self.kind().to_string())];
        pairs.extend(self.hyper_pairs(PREFIX)?);
        Ok(pairs)
    }

    /// `({prefix}{key}, value)` pairs of the hyper-parameters (no type):
    /// the config's fields, which are PyTorch's `param_groups` keys, through
    /// its serde derive and the [`metadata`](super::metadata) format.
    pub(super) fn hyper_pairs(self, prefix: &str) -> Result<Vec<(String, String)>, String> {
        match self {
            OptimizerConfig::Sgd(c) => to_pairs(&c, prefix),
            OptimizerConfig::Adam(c) => to_pairs(&c, prefix),
            OptimizerConfig::AdamW(c) => to_pairs(&c, prefix),
            OptimizerConfig::RmsProp(c) => to_pairs(&c, prefix),
            OptimizerConfig::Adagrad(c) => to_pairs(&c, prefix),
            OptimizerConfig::NAdam(c) => to_pairs(&c, prefix),
            OptimizerConfig::RAdam(c) => to_pairs(&c, prefix),
            OptimizerConfig::Adamax(c) => to_pairs(&c, prefix),
            OptimizerConfig::Adadelta(c) => to_pairs(&c, prefix),
        }
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
        match kind {
            "SGD" => from_pairs(meta, prefix).map(OptimizerConfig::Sgd),
            "Adam" => from_pairs(meta, prefix).map(OptimizerConfig::Adam),
            "AdamW" => from_pairs(meta, prefix).map(OptimizerConfig::AdamW),
            "RMSprop" => from_pairs(meta, prefix).map(OptimizerConfig::RmsProp),
            "Adagrad" => from_pairs(meta, prefix).map(OptimizerConfig::Adagrad),
            "NAdam" => from_pairs(meta, prefix).map(OptimizerConfig::NAdam),
            "RAdam" => from_pairs(meta, prefix).map(OptimizerConfig::RAdam),
            "Adamax" => from_pairs(meta, prefix).map(OptimizerConfig::Adamax),
            "Adadelta" => from_pairs(meta, prefix).map(OptimizerConfig::Adadelta),
            other => Err(format!(
                "metadata '{PREFIX}type' = {other:?} is not an optimizer wgrad has ({KINDS})"
            )),
        }
    }
}
