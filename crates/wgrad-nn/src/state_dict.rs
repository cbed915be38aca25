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
//! ```no_run
//! use wgrad_autograd::Device;
//! use wgrad_nn::{Linear, Module, ReLU, Sequential, state_dict};
//! let device = Device::Cpu;
//! // torch: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
//! let model = Sequential::new()
//!     .add(Linear::new(784, 256, true, &device)?)
//!     .add(ReLU::new())
//!     .add(Linear::new(256, 10, true, &device)?);
//! state_dict::load(&model, "model.safetensors")?;
//! state_dict::save(&model, "copy.safetensors")?;
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! Loading is all-or-nothing, like `load_state_dict(strict=True)`: every
//! name the model expects must be present, no other name may be, and each
//! tensor must be F32 with its parameter's shape; all of that is checked
//! (and the data staged on the parameters' devices) before the first
//! parameter changes, so a failed load leaves the model as it was.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use safetensors::tensor::{Metadata, TensorView};
use safetensors::{Dtype, SafeTensors};
use wgrad_autograd::{Device, Storage, Tensor};
use wgrad_core::{DType, Error, Result};

use crate::Module;

/// Metadata every file written here carries: `format = pt` is what
/// Hugging Face tooling expects of a PyTorch-layout state_dict.
const FORMAT_KEY: &str = "format";
const FORMAT_PT: &str = "pt";

/// Writes every parameter of `module` to `path` as F32 under its PyTorch
/// name (GPU parameters are read back). The file is written to a sibling
/// temporary file and renamed over `path`, so an interrupted save never
/// leaves a half-written file behind.
pub fn save(module: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let params = module.named_parameters();
    for (name, p) in &params {
        if p.dtype() != DType::F32 {
            return Err(Error::invalid(
                "save",
                format!(
                    "{}: parameter '{name}' is {}, only float32 parameters can be saved",
                    path.display(),
                    p.dtype()
                ),
            ));
        }
    }
    write_tensors("save", path, &params, metadata_with_format(Vec::new()))
}

/// Loads the parameters of `module` from the safetensors file at `path`
/// (written by [`save`] or by `safetensors.torch.save_file(model.state_dict(), path)`),
/// replacing each parameter's data on its own device.
///
/// Strict and all-or-nothing: the file must hold exactly the names of
/// `module.named_parameters()`, each F32 with its parameter's shape. A
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
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let parsed = file.parse(OP)?;
    let skip_optimizer = crate::checkpoint::is_checkpoint_metadata(&parsed.metadata);
    let incoming: Vec<(String, Incoming<'_>)> = parsed
        .tensors
        .into_iter()
        .filter(|(name, _)| !(skip_optimizer && crate::checkpoint::is_optimizer_name(name)))
        .map(|(name, view)| (name, Incoming::File(view)))
        .collect();
    let plan = stage(OP, &file.label(), &module.named_parameters(), &incoming)?;
    plan.apply()
}

/// The module's parameters by PyTorch name, as detached copies (new leaves
/// on the parameters' devices, copied on the device): a snapshot that later
/// training does not change, as `copy.deepcopy(model.state_dict())` would be
/// in PyTorch.
pub fn state_dict(module: &dyn Module) -> Result<Vec<(String, Tensor)>> {
    module
        .named_parameters()
        .into_iter()
        .map(|(name, p)| Ok((name, copy_to_device(&p, &p.device())?)))
        .collect()
}

/// Loads `entries` (as from [`state_dict`], on any device) into `module`:
/// the in-memory [`load`], with the same strict, all-or-nothing checks. The
/// parameters receive copies, so later training does not write into
/// `entries`.
pub fn load_state_dict(module: &dyn Module, entries: &[(String, Tensor)]) -> Result<()> {
    let incoming: Vec<(String, Incoming<'_>)> = entries
        .iter()
        .map(|(name, t)| (name.clone(), Incoming::Memory(t)))
        .collect();
    let plan = stage(
        "load_state_dict",
        "state_dict",
        &module.named_parameters(),
        &incoming,
    )?;
    plan.apply()
}

/// Writes named tensors (F32, I32 or U32, on any device) to a safetensors
/// file, like `safetensors.torch.save_file`. Names must be unique.
pub fn save_file(tensors: &[(String, Tensor)], path: impl AsRef<Path>) -> Result<()> {
    write_tensors("save", path.as_ref(), tensors, None)
}

/// Reads every tensor of a safetensors file onto `device`, like
/// `safetensors.torch.load_file`, in file order. F32, I32 and U32 tensors
/// are supported; any other dtype is an error naming the tensor.
pub fn load_file(path: impl AsRef<Path>, device: &Device) -> Result<Vec<(String, Tensor)>> {
    const OP: &str = "load";
    let file = SafetensorsFile::read(OP, path.as_ref())?;
    let parsed = file.parse(OP)?;
    let mut problems = Vec::new();
    for (name, view) in &parsed.tensors {
        if dtype_of(view.dtype()).is_none() {
            problems.push(format!(
                "tensor '{name}' has dtype {}, which wgrad cannot hold (F32, I32 or U32)",
                view.dtype()
            ));
        }
    }
    fail_if_any(OP, &file.label(), problems)?;
    parsed
        .tensors
        .iter()
        .map(|(name, view)| {
            let storage = Incoming::File(view.clone()).to_storage(device)?;
            Ok((name.clone(), Tensor::from_storage_leaf(storage)))
        })
        .collect()
}

// ---- shared with `checkpoint` ----

/// `Some({format: pt, extra...})`: the metadata of the files written here.
pub(crate) fn metadata_with_format(
    extra: Vec<(String, String)>,
) -> Option<HashMap<String, String>> {
    let mut map: HashMap<String, String> = extra.into_iter().collect();
    map.insert(FORMAT_KEY.to_string(), FORMAT_PT.to_string());
    Some(map)
}

/// A tensor ready for the file: safetensors dtype, shape, little-endian bytes.
pub(crate) type Encoded = (Dtype, Vec<usize>, Vec<u8>);

/// Serializes `tensors` (read back from their devices) with `metadata` to
/// `path`.
pub(crate) fn write_tensors(
    op: &'static str,
    path: &Path,
    tensors: &[(String, Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let encoded = tensors
        .iter()
        .map(|(name, t)| Ok((name.clone(), encode(t)?)))
        .collect::<Result<Vec<_>>>()?;
    write_encoded(op, path, encoded, metadata)
}

/// Serializes encoded tensors with `metadata` to `path`, atomically (the
/// safetensors crate writes a sibling temporary file and renames it).
pub(crate) fn write_encoded(
    op: &'static str,
    path: &Path,
    tensors: Vec<(String, Encoded)>,
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let mut seen = BTreeSet::new();
    for (name, _) in &tensors {
        if !seen.insert(name.as_str()) {
            return Err(Error::invalid(
                op,
                format!("{}: tensor name '{name}' appears twice", path.display()),
            ));
        }
    }
    let views = tensors
        .iter()
        .map(|(name, (dtype, shape, bytes))| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|view| (name.as_str(), view))
                .map_err(|e| {
                    Error::invalid(op, format!("{}: tensor '{name}': {e}", path.display()))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, metadata, path)
        .map_err(|e| Error::invalid(op, format!("cannot write {}: {e}", path.display())))
}

/// A safetensors file read into memory.
pub(crate) struct SafetensorsFile {
    path: String,
    bytes: Vec<u8>,
}

/// A parsed file: its `__metadata__` and its tensors in file order.
pub(crate) struct Parsed<'a> {
    pub metadata: HashMap<String, String>,
    pub tensors: Vec<(String, TensorView<'a>)>,
}

impl SafetensorsFile {
    /// Reads the whole file (`InvalidArgument` naming it when it can't be).
    pub(crate) fn read(op: &'static str, path: &Path) -> Result<SafetensorsFile> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::invalid(op, format!("cannot read {}: {e}", path.display())))?;
        Ok(SafetensorsFile {
            path: path.display().to_string(),
            bytes,
        })
    }

    /// How errors name the file.
    pub(crate) fn label(&self) -> String {
        self.path.clone()
    }

    /// Parses the header and checks that every tensor's byte range is
    /// consistent with its dtype and shape and that the data covers the rest
    /// of the file exactly (so truncated and padded files are rejected).
    pub(crate) fn parse(&self, op: &'static str) -> Result<Parsed<'_>> {
        let corrupt = |e: safetensors::SafeTensorError| {
            Error::invalid(
                op,
                format!(
                    "{} is not a valid safetensors file (truncated or corrupted?): {e}",
                    self.path
                ),
            )
        };
        let (header_len, meta): (usize, Metadata) =
            SafeTensors::read_metadata(&self.bytes).map_err(corrupt)?;
        // read_metadata validated `8 + header_len + data_len == file length`.
        let data = self.bytes.get(8 + header_len..).unwrap_or(&[]);
        let mut tensors = Vec::new();
        for name in meta.offset_keys() {
            let info = meta.info(&name).ok_or_else(|| {
                corrupt(safetensors::SafeTensorError::TensorNotFound(name.clone()))
            })?;
            let (start, end) = info.data_offsets;
            let bytes = data.get(start..end).ok_or_else(|| {
                corrupt(safetensors::SafeTensorError::InvalidOffset(name.clone()))
            })?;
            let view = TensorView::new(info.dtype, info.shape.clone(), bytes).map_err(corrupt)?;
            tensors.push((name, view));
        }
        Ok(Parsed {
            metadata: meta.metadata().clone().unwrap_or_default(),
            tensors,
        })
    }
}

/// Where a tensor to load comes from.
pub(crate) enum Incoming<'a> {
    /// Little-endian bytes in a file.
    File(TensorView<'a>),
    /// A tensor in memory, on any device.
    Memory(&'a Tensor),
}

impl Incoming<'_> {
    pub(crate) fn shape(&self) -> Vec<usize> {
        match self {
            Incoming::File(v) => v.shape().to_vec(),
            Incoming::Memory(t) => t.shape(),
        }
    }

    /// The dtype when wgrad has it, and how error messages spell it.
    fn dtype(&self) -> (Option<DType>, String) {
        match self {
            Incoming::File(v) => (dtype_of(v.dtype()), v.dtype().to_string()),
            Incoming::Memory(t) => (Some(t.dtype()), t.dtype().to_string()),
        }
    }

    /// The data as fresh storage on `device` (never aliasing the source, so
    /// in-place GPU optimizer steps on the result leave the source alone).
    pub(crate) fn to_storage(&self, device: &Device) -> Result<Storage> {
        match self {
            Incoming::Memory(t) => Ok(copy_to_device(t, device)?.storage()),
            Incoming::File(v) => {
                let shape = v.shape();
                match v.dtype() {
                    Dtype::F32 => {
                        Storage::from_vec(le_words(v.data(), f32::from_le_bytes), shape, device)
                    }
                    Dtype::I32 => {
                        Storage::from_vec(le_words(v.data(), i32::from_le_bytes), shape, device)
                    }
                    Dtype::U32 => {
                        Storage::from_vec(le_words(v.data(), u32::from_le_bytes), shape, device)
                    }
                    other => Err(Error::invalid(
                        "load",
                        format!("dtype {other} has no wgrad equivalent"),
                    )),
                }
            }
        }
    }
}

/// Validated data waiting to replace parameters.
pub(crate) struct Plan {
    pending: Vec<(Tensor, Storage)>,
}

impl Plan {
    /// Swaps the staged data into the parameters. Shapes and dtypes were
    /// checked when staging, so this does not fail in practice.
    pub(crate) fn apply(self) -> Result<()> {
        for (param, storage) in self.pending {
            param.set_storage(storage)?;
        }
        Ok(())
    }
}

/// Checks `incoming` against `expected` (names, shapes, F32) and, when all
/// of it is right, stages each tensor's data on its parameter's device.
/// Every problem is reported at once, naming `source` and the tensors.
pub(crate) fn stage(
    op: &'static str,
    source: &str,
    expected: &[(String, Tensor)],
    incoming: &[(String, Incoming<'_>)],
) -> Result<Plan> {
    fail_if_any(op, source, entry_problems(expected, incoming))?;
    let by_name: HashMap<&str, &Incoming<'_>> =
        incoming.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut pending = Vec::with_capacity(expected.len());
    for (name, param) in expected {
        let source_tensor = by_name
            .get(name.as_str())
            .ok_or_else(|| Error::invalid(op, format!("{source}: missing tensor '{name}'")))?;
        pending.push((param.clone(), source_tensor.to_storage(&param.device())?));
    }
    Ok(Plan { pending })
}

/// The strict checks of [`stage`]: the names match exactly, and each tensor
/// is F32 with the expected shape. Returns every problem found.
pub(crate) fn entry_problems(
    expected: &[(String, Tensor)],
    incoming: &[(String, Incoming<'_>)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut by_name: HashMap<&str, &Incoming<'_>> = HashMap::new();
    let mut duplicates = BTreeSet::new();
    for (name, t) in incoming {
        if by_name.insert(name.as_str(), t).is_some() {
            duplicates.insert(name.as_str());
        }
    }
    if !duplicates.is_empty() {
        problems.push(format!("duplicate tensor name(s): {}", list(duplicates)));
    }
    let wanted: BTreeSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    let missing: Vec<&str> = expected
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !by_name.contains_key(n))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing tensor(s): {}", list(missing)));
    }
    let extra: Vec<&str> = incoming
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !wanted.contains(n))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !extra.is_empty() {
        problems.push(format!("unexpected tensor(s): {}", list(extra)));
    }
    for (name, param) in expected {
        let Some(t) = by_name.get(name.as_str()) else {
            continue;
        };
        let (dtype, dtype_name) = t.dtype();
        if dtype != Some(DType::F32) {
            problems.push(format!(
                "tensor '{name}' has dtype {dtype_name}, expected F32 (float32)"
            ));
        }
        let (got, want) = (t.shape(), param.shape());
        if got != want {
            problems.push(format!(
                "tensor '{name}' has shape {got:?}, the parameter has shape {want:?}"
            ));
        }
    }
    problems
}

/// `Err(InvalidArgument)` listing `problems`, prefixed with the source.
pub(crate) fn fail_if_any(op: &'static str, source: &str, problems: Vec<String>) -> Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("{source}: {}", problems.join("; ")),
        ))
    }
}

/// An independent copy of `t`'s data on `device`: a new leaf that shares no
/// buffer with `t` (GPU optimizer steps update buffers in place, so a
/// shared one would not stay a snapshot). Same-device copies stay on the
/// device (a copy dispatch on the GPU); cross-device ones go through the host.
pub(crate) fn copy_to_device(t: &Tensor, device: &Device) -> Result<Tensor> {
    let s = t.storage();
    let copy = if !s.device().same(device) {
        s.to_device(device)?
    } else if s.numel() == 0 {
        Storage::full(s.shape(), 0.0, s.dtype(), device)?
    } else {
        // A one-part concat is a plain copy into a new contiguous buffer on
        // either backend; flattening first makes it work for any rank.
        let shape: Vec<isize> = s.shape().iter().map(|&d| d as isize).collect();
        let flat = s.reshape(&[-1])?;
        Storage::concat(&[&flat], 0)?.reshape(&shape)?
    };
    Ok(Tensor::from_storage_leaf(copy))
}

/// The wgrad dtype of a safetensors dtype, if it has one.
fn dtype_of(dtype: Dtype) -> Option<DType> {
    match dtype {
        Dtype::F32 => Some(DType::F32),
        Dtype::I32 => Some(DType::I32),
        Dtype::U32 => Some(DType::U32),
        _ => None,
    }
}

/// The safetensors dtype, shape and little-endian bytes of `t` (read back
/// from the GPU when it lives there).
pub(crate) fn encode(t: &Tensor) -> Result<Encoded> {
    Ok(match t.dtype() {
        DType::F32 => (
            Dtype::F32,
            t.shape(),
            le_bytes(t.to_vec::<f32>()?, f32::to_le_bytes),
        ),
        DType::I32 => (
            Dtype::I32,
            t.shape(),
            le_bytes(t.to_vec::<i32>()?, i32::to_le_bytes),
        ),
        DType::U32 => (
            Dtype::U32,
            t.shape(),
            le_bytes(t.to_vec::<u32>()?, u32::to_le_bytes),
        ),
    })
}

/// Encodes 4-byte words little-endian (the safetensors byte order).
fn le_bytes<T: Copy>(values: Vec<T>, to_le: fn(T) -> [u8; 4]) -> Vec<u8> {
    values.into_iter().flat_map(to_le).collect()
}

/// Decodes little-endian 4-byte words (the safetensors byte order, whatever
/// the host's). The caller's view guarantees a multiple of 4 bytes.
fn le_words<T>(bytes: &[u8], from_le: fn([u8; 4]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(4)
        .map(|c| from_le([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `'a', 'b'` for error messages.
fn list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
