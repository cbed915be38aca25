//! Training checkpoints: a model's parameters, its optimizer's state and the
//! epoch count in one safetensors file, so that training can stop and carry
//! on with the same numbers as if it never had.
//!
//! ```
//! use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::{Linear, Module, checkpoint};
//! let path = std::env::temp_dir().join(format!("wgrad-doc-ckpt-{}.safetensors", std::process::id()));
//! let model = Linear::new(4, 2, true, &Device::Cpu)?;
//! let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
//! // ... train epoch 1 ...
//! let x = Tensor::ones(&[3, 4], &Device::Cpu)?;
//! model.forward(&x)?.square()?.mean_all()?.backward()?;
//! opt.step()?;
//! checkpoint::save(&path, &model, &opt, 1)?;
//! // later, in a fresh process, with a model and optimizer built the same way:
//! let fresh = Linear::new(4, 2, true, &Device::Cpu)?;
//! let mut fresh_opt = Adam::new(fresh.parameters(), AdamConfig::default())?;
//! let epochs_done = checkpoint::load(&path, &fresh, &mut fresh_opt)?;
//! assert_eq!(epochs_done, 1);
//! assert_eq!(fresh.weight.to_vec_f32()?, model.weight.to_vec_f32()?);
//! assert_eq!(fresh_opt.state()[0].as_ref().map(|s| s.step), Some(1));
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! File layout (readable from Python with `safetensors.torch.load_file`):
//!
//! * the model's parameters under their PyTorch `state_dict` names, F32, as
//!   [`state_dict::save`](crate::state_dict::save) writes them;
//! * per-parameter optimizer state as `optim.state.{i}.{name}`, with `i` the
//!   parameter's index in the optimizer (PyTorch's `state` keys: the groups'
//!   parameters in order) and `name` as in PyTorch (`momentum_buffer`;
//!   `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`; `square_avg`, `grad_avg`;
//!   `sum`; `exp_inf`; `acc_delta`), F32 with the parameter's shape (F64,
//!   F16 and BF16 load too, converted to F32 as the parameters are), NAdam's
//!   `mu_product` as an F32 scalar, and the step count of every optimizer
//!   but SGD as the I64 scalar `optim.state.{i}.step`;
//! * metadata: `optim.type` (`SGD`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`,
//!   `NAdam`, `RAdam`, `Adamax`, `Adadelta`),
//!   the first parameter group's hyper-parameters as `optim.{key}` with
//!   PyTorch's `param_groups` keys (`optim.lr`, `optim.betas`, ...),
//!   `optim.num_params`, `optim.initial_lr` when a scheduler set one,
//!   `epoch`, and `wgrad.kind = checkpoint`. With several groups also
//!   `optim.num_groups`, `optim.group_sizes` (`[n0, n1, ...]`) and group
//!   `g >= 1`'s hyper-parameters as `optim.group.{g}.{key}` (and
//!   `optim.group.{g}.initial_lr`); a one-group file is as it always was.
//!
//! Restoring the optimizer sets every group's learning rate (and
//! `initial_lr`) from the file, as `optimizer.load_state_dict` does; every
//! other hyper-parameter must match the file's (build the optimizer with
//! the saved ones), or the load fails and says which differ. Loads are
//! all-or-nothing: the model and the optimizer are both checked and their
//! data staged before either changes.

use std::collections::HashMap;
use std::path::Path;

use safetensors::Dtype;
use safetensors::tensor::TensorView;
use wgrad_autograd::optim::{
    Adadelta, AdadeltaState, Adagrad, AdagradState, Adam, AdamState, AdamW, Adamax, AdamaxState,
    NAdam, NAdamState, Optimizer, ParamGroup, RAdam, RAdamState, RmsProp, RmsPropState, Sgd,
    SgdState,
};
use wgrad_autograd::{Device, Tensor};
use wgrad_core::{DType, Error, Result};

use crate::Module;
use crate::codec::{
    Encoded, Incoming, KIND_CHECKPOINT, KIND_KEY, OPTIM_PREFIX as PREFIX, SafetensorsFile,
    copy_to_device, encode, entry_problems, fail_if_any, is_checkpoint_metadata, is_optimizer_name,
    list, metadata_with_format, stage, write_encoded,
};

mod config;
mod impls;
mod impls_more;
mod metadata;
mod state;
pub use config::OptimizerConfig;
use state::*;

/// Prefix of the per-parameter state tensors.
const STATE_PREFIX: &str = "optim.state.";
/// [`KIND_KEY`]'s value in a file holding optimizer state alone.
const KIND_OPTIMIZER: &str = "optimizer";
const EPOCH_KEY: &str = "epoch";
const NUM_PARAMS_KEY: &str = "optim.num_params";
const INITIAL_LR_KEY: &str = "optim.initial_lr";
/// The number of parameter groups (written when there are several).
const NUM_GROUPS_KEY: &str = "optim.num_groups";
/// The parameter count of every group, as `[n0, n1, ...]`.
const GROUP_SIZES_KEY: &str = "optim.group_sizes";
/// Prefix of group `g >= 1`'s hyper-parameters: `optim.group.{g}.{key}`.
const GROUP_PREFIX: &str = "optim.group.";
/// How errors about in-memory optimizer state name their source.
const MEMORY_SOURCE: &str = "optimizer state";

/// The state of one parameter (PyTorch's `optimizer.state[p]`).
#[derive(Clone, Debug, Default)]
pub struct ParamState {
    /// Adam's step count; `None` for SGD and for a parameter without state.
    pub step: Option<u64>,
    /// Named F32 buffers shaped like the parameter, named as in PyTorch
    /// (`momentum_buffer`; `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`).
    pub buffers: Vec<(String, Tensor)>,
}

/// One parameter group's settings (an entry of PyTorch's
/// `state_dict()["param_groups"]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamGroupState {
    /// The group's hyper-parameters, with its current learning rate.
    pub config: OptimizerConfig,
    /// The group's `initial_lr`, when a scheduler set one.
    pub initial_lr: Option<f64>,
    /// How many parameters the group holds (its `params`, which are the
    /// next indices of the flat parameter order).
    pub num_params: usize,
}

/// An optimizer's complete state (`optimizer.state_dict()` in PyTorch).
#[derive(Clone, Debug)]
pub struct OptimizerStateDict {
    /// The hyper-parameters (the first group's), with the current learning rate.
    pub config: OptimizerConfig,
    /// The learning rate schedulers started from (the first group's), when
    /// one was attached.
    pub initial_lr: Option<f64>,
    /// One entry per parameter, in the optimizer's parameter order.
    pub state: Vec<ParamState>,
    /// Every parameter group, in order. Empty means one group described by
    /// `config` and `initial_lr` (a state dict built by hand); when present
    /// it is what loads, and `config`/`initial_lr` mirror its first entry.
    pub param_groups: Vec<ParamGroupState>,
}

impl OptimizerStateDict {
    /// The groups: `param_groups`, or the single group `config` describes.
    pub fn groups(&self) -> Vec<ParamGroupState> {
        if self.param_groups.is_empty() {
            vec![ParamGroupState {
                config: self.config,
                initial_lr: self.initial_lr,
                num_params: self.state.len(),
            }]
        } else {
            self.param_groups.clone()
        }
    }
}

/// An optimizer whose state can be saved and restored ([`Sgd`], [`Adam`],
/// [`AdamW`], [`RmsProp`], [`Adagrad`], [`NAdam`], [`RAdam`], [`Adamax`],
/// [`Adadelta`]).
pub trait OptimizerCheckpoint: Optimizer {
    /// A snapshot of the state: hyper-parameters and copies of every state
    /// buffer (on the parameters' devices), which later steps leave alone.
    fn optimizer_state_dict(&self) -> Result<OptimizerStateDict>;

    /// Restores `state` (as from [`optimizer_state_dict`](Self::optimizer_state_dict),
    /// on any device): all-or-nothing. The optimizer type, the number of
    /// parameters and of groups and each group's size, every buffer's
    /// presence, dtype (F32) and shape, and every group's hyper-parameters
    /// but the learning rate must match, else this is an `InvalidArgument`
    /// listing each problem and nothing changes. Sets every group's learning
    /// rate (and `initial_lr` when `state` has one); buffers are copied onto
    /// their parameters' devices.
    fn load_optimizer_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()>;
}

/// Writes `opt`'s state to a safetensors file (`optim.state.{i}.*` tensors
/// and `optim.*` metadata; see the [module docs](self)).
pub fn save_optimizer(opt: &dyn OptimizerCheckpoint, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let sd = opt.optimizer_state_dict()?;
    let (tensors, mut meta) = encode_optimizer(&sd)?;
    meta.push((KIND_KEY.to_string(), KIND_OPTIMIZER.to_string()));
    write_encoded("save", path, tensors, metadata_with_format(meta))
}

/// Restores `opt`'s state from a file written by [`save_optimizer`] or
/// [`save`] (a checkpoint's model tensors are skipped). All-or-nothing,
/// with the checks of
/// [`load_optimizer_state_dict`](OptimizerCheckpoint::load_optimizer_state_dict);
/// errors name the file.
pub fn load_optimizer(opt: &mut dyn OptimizerCheckpoint, path: impl AsRef<Path>) -> Result<()> {
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let parsed = file.parse(OP)?;
    let is_checkpoint = is_checkpoint_metadata(&parsed.metadata);
    let mut problems = Vec::new();
    if !is_checkpoint {
        let foreign: Vec<&str> = parsed
            .tensors
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !is_optimizer_name(n))
            .collect();
        if !foreign.is_empty() {
            problems.push(format!(
                "unexpected tensor(s) in an optimizer file: {}",
                list(foreign)
            ));
        }
    }
    fail_if_any(OP, &file.label(), problems)?;
    let sd = decode_optimizer(
        &file.label(),
        &parsed.metadata,
        &parsed.tensors,
        opt.params().len(),
    )?;
    load_into(opt, &sd, &file.label())
}

/// Saves a training checkpoint: `model`'s parameters (PyTorch names),
/// `opt`'s state and `epoch` (the number of epochs completed) in one
/// safetensors file, written atomically and durably as
/// [`state_dict::save`](crate::state_dict::save) writes (a synced
/// `.{name}.wgrad-tmp` renamed over `path`; permissions and symbolic links
/// kept; an interrupted save's stale temporary file removed).
pub fn save(
    path: impl AsRef<Path>,
    model: &dyn Module,
    opt: &dyn OptimizerCheckpoint,
    epoch: u64,
) -> Result<()> {
    let path = path.as_ref();
    let mut tensors = Vec::new();
    for (name, p) in model.named_state() {
        if is_optimizer_name(&name) {
            return Err(Error::invalid(
                "save",
                format!(
                    "{}: parameter name '{name}' clashes with the optimizer's '{PREFIX}' names",
                    path.display()
                ),
            ));
        }
        tensors.push((name, encode(&p)?));
    }
    let sd = opt.optimizer_state_dict()?;
    let (optim_tensors, mut meta) = encode_optimizer(&sd)?;
    tensors.extend(optim_tensors);
    meta.push((KIND_KEY.to_string(), KIND_CHECKPOINT.to_string()));
    meta.push((EPOCH_KEY.to_string(), epoch.to_string()));
    write_encoded("save", path, tensors, metadata_with_format(meta))
}

/// Restores a checkpoint written by [`save`] into `model` and `opt` (built
/// the same way as the saved ones) and returns the epoch it recorded (the
/// number of epochs completed, so training continues with that index).
///
/// All-or-nothing: the model part has the strict checks of
/// [`state_dict::load`](crate::state_dict::load), the optimizer part those
/// of [`load_optimizer`]; nothing changes unless both pass. A plain
/// state_dict file (no optimizer state) is an error saying so; load it with
/// `state_dict::load`.
pub fn load(
    path: impl AsRef<Path>,
    model: &dyn Module,
    opt: &mut dyn OptimizerCheckpoint,
) -> Result<u64> {
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let label = file.label();
    let parsed = file.parse(OP)?;
    if !is_checkpoint_metadata(&parsed.metadata) {
        return Err(Error::invalid(
            OP,
            format!(
                "{label} is not a wgrad checkpoint (no '{KIND_KEY} = {KIND_CHECKPOINT}' metadata); a plain state_dict loads with state_dict::load"
            ),
        ));
    }
    let epoch_text = parsed.metadata.get(EPOCH_KEY).map(String::as_str);
    let epoch = epoch_text
        .and_then(|e| e.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            Error::invalid(
                OP,
                format!("{label}: metadata '{EPOCH_KEY}' = {epoch_text:?} is not an epoch count"),
            )
        })?;
    let (optim_views, model_views): (Vec<_>, Vec<_>) = parsed
        .tensors
        .iter()
        .partition(|(name, _)| is_optimizer_name(name));
    let incoming: Vec<(String, Incoming<'_>)> = model_views
        .into_iter()
        .map(|(name, view)| (name.clone(), Incoming::File(view.clone())))
        .collect();
    // Stage the model (validated and uploaded, not yet applied), then let
    // the optimizer validate and swap its state in; the model only changes
    // once both succeeded.
    let plan = stage(OP, &label, &model.named_state(), &incoming)?;
    let optim_views: Vec<(String, TensorView<'_>)> = optim_views.into_iter().cloned().collect();
    let sd = decode_optimizer(&label, &parsed.metadata, &optim_views, opt.params().len())?;
    load_into(opt, &sd, &label)?;
    plan.apply()?;
    Ok(epoch)
}

/// Whether the file at `path` is a checkpoint written by [`save`] (rather
/// than a plain state_dict, e.g. one saved from PyTorch). Reads the file.
pub fn is_checkpoint(path: impl AsRef<Path>) -> Result<bool> {
    let file = SafetensorsFile::read("load", path.as_ref())?;
    Ok(is_checkpoint_metadata(&file.parse("load")?.metadata))
}
