//! PyTorch-compatible `state_dict`s, in memory and in safetensors files.
//!
//! [`save`] writes every parameter of a module as F32 under its PyTorch
//! `state_dict` name (`0.weight`, `0.bias`, ... in a
//! [`Sequential`](crate::Sequential)), so the file loads into the equivalent
//! PyTorch model with
//! `model.load_state_dict(safetensors.torch.load_file(path), strict=True)`.
//! The other way round, a file written from PyTorch with
//! `safetensors.torch.save_file(model.state_dict(), path)` for an equivalent
//! torch model (`nn.Linear` layers in an `nn.Sequential`, activations at the
//! same indices, float32) loads here with [`load`]:
//!
//! ```
//! use wgrad_autograd::Device;
//! use wgrad_nn::{Linear, Module, ReLU, Sequential, state_dict};
//! let device = Device::Cpu;
//! // torch: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
//! let mlp = || -> wgrad_core::Result<Sequential> {
//!     Ok(Sequential::new()
//!         .add(Linear::new(784, 256, true, &device)?)
//!         .add(ReLU::new())
//!         .add(Linear::new(256, 10, true, &device)?))
//! };
//! let (model, copy) = (mlp()?, mlp()?);
//! let path = std::env::temp_dir().join(format!("wgrad-doc-sd-{}.safetensors", std::process::id()));
//! state_dict::save(&model, &path)?; // 0.weight, 0.bias, 2.weight, 2.bias
//! state_dict::load(&copy, &path)?; // strict: names, shapes, dtypes
//! let same = |a: &Sequential, b: &Sequential| -> wgrad_core::Result<bool> {
//!     for (p, q) in a.parameters().iter().zip(b.parameters()) {
//!         if p.to_vec_f32()? != q.to_vec_f32()? {
//!             return Ok(false);
//!         }
//!     }
//!     Ok(true)
//! };
//! assert!(same(&model, &copy)?);
//! // Named tensors of any kind, as safetensors.torch.save_file/load_file.
//! let mut names: Vec<String> = state_dict::load_file(&path, &device)?
//!     .into_iter()
//!     .map(|(name, _)| name)
//!     .collect();
//! names.sort();
//! assert_eq!(names, ["0.bias", "0.weight", "2.bias", "2.weight"]);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! Loading is all-or-nothing, like `load_state_dict(strict=True)`: every
//! name the model expects must be present, no other name may be, and each
//! tensor must have its parameter's shape and dtype (F32), or a
//! floating-point dtype that converts to it (F64, F16, BF16, as
//! `load_state_dict`'s `param.copy_(input)` converts them); all of that is
//! checked (and the data staged on the parameters' devices) before the first
//! parameter changes, so a failed load leaves the model as it was.
//!
//! Saving is atomic and durable: the file is written to `.{name}.wgrad-tmp`
//! next to its target (a predictable name, so a save killed half-way leaves
//! at most that one file, which the next save to the same path removes),
//! flushed to disk, renamed over the target and the directory synced. A
//! failed save leaves the old file intact. An existing file keeps its
//! permissions (a new one gets `0o666` less the umask), and a path that is a
//! symbolic link stays one: the file it points to is replaced.

use std::path::Path;

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::codec::dtype::loaded_dtype;
use crate::codec::{
    Incoming, SafetensorsFile, copy_to_device, fail_if_any, is_checkpoint_metadata,
    is_optimizer_name, metadata_with_format, stage, stage_non_strict, write_tensors,
};

/// Writes every parameter and buffer of `module` to `path` in its own
/// dtype under its PyTorch `state_dict` name (GPU tensors are read back).
///
/// Atomic and durable (see the [module docs](self)): the data goes to
/// `.{name}.wgrad-tmp` in the target's directory, is synced, and is renamed
/// over the target; a stale temporary file from an interrupted save is
/// removed first; an existing target keeps its permissions; a symbolic link
/// keeps pointing at the (replaced) file. Errors (`InvalidArgument`) name
/// the path; after one the old file is as it was. Two saves to the same path
/// at the same time are refused rather than mixed: the second fails saying
/// another save is in progress.
pub fn save(module: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    for (name, p) in &module.named_parameters() {
        if !p.dtype().is_float() {
            return Err(Error::invalid(
                "save",
                format!(
                    "{}: parameter '{name}' is {}, only float parameters can be saved",
                    path.display(),
                    p.dtype()
                ),
            ));
        }
    }
    // Buffers keep their dtype (num_batches_tracked is an integer).
    write_tensors(
        "save",
        path,
        &module.named_state(),
        metadata_with_format(Vec::new()),
    )
}

/// Loads the parameters of `module` from the safetensors file at `path`
/// (written by [`save`] or by `safetensors.torch.save_file(model.state_dict(), path)`),
/// replacing each parameter's data on its own device.
///
/// Strict and all-or-nothing: the file must hold exactly the names of
/// `module.named_state()`, each with its parameter's shape and dtype
/// (F32). F64, F16 and BF16 tensors are converted to the parameter's F32, as
/// PyTorch's `load_state_dict` converts them (F16 and BF16 exactly, F64
/// rounded to nearest, overflowing to infinity); any other dtype (integers,
/// bool, 8-bit floats) is an error. A
/// missing or unreadable file, a truncated or corrupted header, missing or
/// extra names, a wrong shape or dtype are `InvalidArgument` errors naming
/// the file and every offending tensor, and leave `module` unchanged. In a
/// checkpoint written by [`checkpoint::save`](crate::checkpoint::save) the
/// optimizer's `optim.*` tensors are skipped, so a checkpoint's weights load
/// into a bare model too.
///
/// Parameters are replaced in place ([`Tensor::set_storage`]): optimizers
/// and other handles to them see the loaded values.
pub fn load(module: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    load_with(module, path, true).map(drop)
}

/// The module's parameters by PyTorch name, as detached copies (new leaves
/// on the parameters' devices, copied on the device): a snapshot that later
/// training does not change, as `copy.deepcopy(model.state_dict())` would be
/// in PyTorch.
pub fn state_dict(module: &dyn Module) -> Result<Vec<(String, Tensor)>> {
    module
        .named_state()
        .into_iter()
        .map(|(name, p)| Ok((name, copy_to_device(&p, &p.device())?)))
        .collect()
}

/// Loads `entries` (as from [`state_dict`], on any device) into `module`:
/// the in-memory [`load`], with the same strict, all-or-nothing checks. The
/// parameters receive copies, so later training does not write into
/// `entries`.
pub fn load_state_dict(module: &dyn Module, entries: &[(String, Tensor)]) -> Result<()> {
    load_state_dict_with(module, entries, true).map(drop)
}

/// What a non-strict load left out (PyTorch's `_IncompatibleKeys`, the
/// value of `load_state_dict(sd, strict=False)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// The module's names the source lacks (those tensors kept their
    /// values), in the module's `state_dict` order.
    pub missing_keys: Vec<String>,
    /// The source's names the module lacks (ignored), in the source's order.
    pub unexpected_keys: Vec<String>,
}

/// `model.load_state_dict(entries, strict)`: with `strict` the same as
/// [`load_state_dict`] (returning empty key lists); without it, names only
/// one side has are reported in the returned [`IncompatibleKeys`] instead
/// of failing the load, and the tensors both name are loaded. A wrong
/// shape or dtype among those is still an error (PyTorch's "size mismatch
/// for ..."), and then nothing changes.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Linear, state_dict};
/// let layer = Linear::new(2, 1, true, &Device::Cpu)?;
/// let w = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2], &Device::Cpu)?;
/// let entries = vec![("weight".to_string(), w), ("head.bias".to_string(), Tensor::zeros(&[1], &Device::Cpu)?)];
/// let keys = state_dict::load_state_dict_with(&layer, &entries, false)?;
/// assert_eq!(keys.missing_keys, ["bias"]);
/// assert_eq!(keys.unexpected_keys, ["head.bias"]);
/// assert_eq!(layer.weight.to_vec_f32()?, [1.0, 2.0]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn load_state_dict_with(
    module: &dyn Module,
    entries: &[(String, Tensor)],
    strict: bool,
) -> Result<IncompatibleKeys> {
    let incoming: Vec<(String, Incoming<'_>)> = entries
        .iter()
        .map(|(name, t)| (name.clone(), Incoming::Memory(t)))
        .collect();
    stage_and_apply("load_state_dict", "state_dict", module, &incoming, strict)
}

/// Stages `incoming` against `module`'s state (all-or-nothing checks) and
/// applies it: strictly, or reporting the names only one side has.
fn stage_and_apply(
    op: &'static str,
    label: &str,
    module: &dyn Module,
    incoming: &[(String, Incoming<'_>)],
    strict: bool,
) -> Result<IncompatibleKeys> {
    if strict {
        stage(op, label, &module.named_state(), incoming)?.apply()?;
        return Ok(IncompatibleKeys::default());
    }
    let (plan, missing_keys, unexpected_keys) =
        stage_non_strict(op, label, &module.named_state(), incoming)?;
    plan.apply()?;
    Ok(IncompatibleKeys {
        missing_keys,
        unexpected_keys,
    })
}

/// [`load`] with PyTorch's `strict` flag, as
/// `model.load_state_dict(safetensors.torch.load_file(path), strict)`: see
/// [`load_state_dict_with`].
pub fn load_with(
    module: &dyn Module,
    path: impl AsRef<Path>,
    strict: bool,
) -> Result<IncompatibleKeys> {
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let parsed = file.parse(OP)?;
    let skip_optimizer = is_checkpoint_metadata(&parsed.metadata);
    let incoming: Vec<(String, Incoming<'_>)> = parsed
        .tensors
        .into_iter()
        .filter(|(name, _)| !(skip_optimizer && is_optimizer_name(name)))
        .map(|(name, view)| (name, Incoming::File(view)))
        .collect();
    stage_and_apply(OP, &file.label(), module, &incoming, strict)
}

/// Writes named tensors (F32, I32 or U32, on any device) to a safetensors
/// file, like `safetensors.torch.save_file`. Names must be unique. Written
/// atomically, as [`save`] writes.
pub fn save_file(tensors: &[(String, Tensor)], path: impl AsRef<Path>) -> Result<()> {
    write_tensors("save", path.as_ref(), tensors, None)
}

/// Reads every tensor of a safetensors file onto `device`, like
/// `safetensors.torch.load_file`, in file order. F32, F16, BF16, I32 and
/// U32 tensors keep their dtype; PyTorch's dtypes that wgrad lacks load as
/// its stand-ins (docs/PYTORCH.md): F64 as F32 (rounded to nearest), I64
/// as I32 (an error naming the tensor if a value does not fit; a
/// `state_dict` of a BatchNorm model has an int64 `num_batches_tracked`)
/// and BOOL as a U32 mask. Any other dtype is an error naming the tensor.
pub fn load_file(path: impl AsRef<Path>, device: &Device) -> Result<Vec<(String, Tensor)>> {
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let parsed = file.parse(OP)?;
    let mut problems = Vec::new();
    for (name, view) in &parsed.tensors {
        if loaded_dtype(view.dtype()).is_none() {
            problems.push(format!(
                "tensor '{name}' has dtype {}, which wgrad cannot hold (F32, F16, BF16, I32 or \
                 U32, or F64, I64 and BOOL as F32, I32 and U32)",
                view.dtype()
            ));
        }
    }
    fail_if_any(OP, &file.label(), problems)?;
    parsed
        .tensors
        .iter()
        .map(|(name, view)| {
            let dtype = loaded_dtype(view.dtype()).ok_or_else(|| {
                Error::invalid(OP, format!("tensor '{name}' has dtype {}", view.dtype()))
            })?;
            let storage = Incoming::File(view.clone())
                .to_storage(name, device, dtype)
                .map_err(|e| match e {
                    Error::InvalidArgument { message, .. } => {
                        Error::invalid(OP, format!("{}: {message}", file.label()))
                    }
                    other => other,
                })?;
            Ok((name.clone(), Tensor::from_storage_leaf(storage)))
        })
        .collect()
}
