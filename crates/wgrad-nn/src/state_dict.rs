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

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use safetensors::tensor::{Metadata, TensorView, View};
use safetensors::{Dtype, SafeTensors};
use wgrad_autograd::{Device, Storage, Tensor};
use wgrad_core::{DType, Error, Result};

use crate::Module;

/// Metadata every file written here carries: `format = pt` is what
/// Hugging Face tooling expects of a PyTorch-layout state_dict.
const FORMAT_KEY: &str = "format";
const FORMAT_PT: &str = "pt";

/// Writes every parameter of `module` to `path` as F32 under its PyTorch
/// name (GPU parameters are read back).
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
/// `module.named_parameters()`, each with its parameter's shape and dtype
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
/// file, like `safetensors.torch.save_file`. Names must be unique. Written
/// atomically, as [`save`] writes.
pub fn save_file(tensors: &[(String, Tensor)], path: impl AsRef<Path>) -> Result<()> {
    write_tensors("save", path.as_ref(), tensors, None)
}

/// Reads every tensor of a safetensors file onto `device`, like
/// `safetensors.torch.load_file`, in file order. F32, I32 and U32 tensors
/// are supported; any other dtype is an error naming the tensor (this keeps
/// each tensor's dtype, so nothing is converted; [`load`] converts F64, F16
/// and BF16 into a model's F32 parameters).
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
            let dtype = dtype_of(view.dtype()).ok_or_else(|| {
                Error::invalid(OP, format!("tensor '{name}' has dtype {}", view.dtype()))
            })?;
            let storage = Incoming::File(view.clone()).to_storage(name, device, dtype)?;
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

/// Serializes encoded tensors with `metadata` to `path`, atomically and
/// durably ([`write_atomically`]), byte for byte as
/// `safetensors::serialize` lays the file out.
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
    for (name, (dtype, shape, bytes)) in &tensors {
        TensorView::new(*dtype, shape.clone(), bytes)
            .map_err(|e| Error::invalid(op, format!("{}: tensor '{name}': {e}", path.display())))?;
    }
    let (header, order) = header_and_order(&tensors, metadata)
        .map_err(|e| Error::invalid(op, format!("cannot write {}: {e}", path.display())))?;
    write_atomically(op, path, |w| {
        w.write_all(&header)?;
        for &i in &order {
            w.write_all(&tensors[i].1.2)?;
        }
        Ok(())
    })
}

/// A tensor that tells `safetensors::serialize` its dtype, shape and size
/// but hands it no bytes, and logs the order in which they are asked for:
/// serializing these yields the file's header alone (no copy of the data)
/// and the order the data must follow it in.
struct HeaderOnly<'a> {
    dtype: Dtype,
    shape: &'a [usize],
    len: usize,
    index: usize,
    order: &'a RefCell<Vec<usize>>,
}

impl View for HeaderOnly<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        self.order.borrow_mut().push(self.index);
        Cow::Borrowed(&[])
    }

    fn data_len(&self) -> usize {
        self.len
    }
}

/// The safetensors header of `tensors` (length word + JSON, as
/// `safetensors::serialize` writes it) and the indices of `tensors` in the
/// order their data follows it.
fn header_and_order(
    tensors: &[(String, Encoded)],
    metadata: Option<HashMap<String, String>>,
) -> std::result::Result<(Vec<u8>, Vec<usize>), String> {
    let order = RefCell::new(Vec::with_capacity(tensors.len()));
    let views = tensors
        .iter()
        .enumerate()
        .map(|(index, (name, (dtype, shape, bytes)))| {
            let view = HeaderOnly {
                dtype: *dtype,
                shape,
                len: bytes.len(),
                index,
                order: &order,
            };
            (name.as_str(), view)
        });
    let header = safetensors::serialize(views, metadata).map_err(|e| e.to_string())?;
    let order = order.into_inner();
    // The header is the length word and that many bytes; every tensor's
    // data was asked for exactly once.
    let declared = header
        .get(..8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map(u64::from_le_bytes);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if declared != (header.len() as u64).checked_sub(8)
        || !sorted.iter().copied().eq(0..tensors.len())
    {
        return Err("the safetensors crate laid the header out unexpectedly".to_string());
    }
    Ok((header, order))
}

/// Suffix of the temporary file a save writes next to its target.
const TEMP_SUFFIX: &str = ".wgrad-tmp";

/// Replaces the file at `path` with what `write` writes, atomically and
/// durably:
///
/// * symbolic links are followed, so the file a link points to is replaced
///   and the link stays;
/// * the data goes to `.{name}.wgrad-tmp` in the target's directory, a
///   predictable name, so an interrupted save leaves at most that one file
///   and the next save removes it (a save still running holds an advisory
///   lock on it, and a second save to the same path fails instead of
///   removing it);
/// * the temporary file is synced, gets the permissions of the file it
///   replaces (a new file keeps `0o666` less the umask), is renamed over the
///   target, and the directory is synced.
///
/// Any failure before the rename removes the temporary file and leaves the
/// target as it was.
pub(crate) fn write_atomically(
    op: &'static str,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let fail = |what: String, e: io::Error| Error::invalid(op, format!("{what}: {e}"));
    let target = resolve_symlinks(path).map_err(|e| {
        fail(
            format!(
                "cannot write {}: cannot resolve the symbolic link",
                path.display()
            ),
            e,
        )
    })?;
    let shown = if target == path {
        path.display().to_string()
    } else {
        format!("{} (-> {})", path.display(), target.display())
    };
    let Some(name) = target.file_name() else {
        return Err(Error::invalid(
            op,
            format!("cannot write {shown}: the path does not name a file"),
        ));
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(Error::invalid(
            op,
            format!(
                "cannot write {shown}: directory {} does not exist",
                dir.display()
            ),
        ));
    }
    let permissions = match std::fs::metadata(&target) {
        Ok(meta) if meta.is_file() => Some(meta.permissions()),
        Ok(_) => {
            return Err(Error::invalid(
                op,
                format!("cannot write {shown}: it exists and is not a regular file"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(format!("cannot write {shown}"), e)),
    };
    let mut temp_name = OsString::from(".");
    temp_name.push(name);
    temp_name.push(TEMP_SUFFIX);
    let temp = dir.join(temp_name);
    let file = claim_temp(&temp).map_err(|e| {
        fail(
            format!("cannot write {shown}: temporary file {}", temp.display()),
            e,
        )
    })?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        write(&mut out)?;
        out.flush()?;
        drop(out);
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, &target)
    })();
    if let Err(e) = written {
        // Still locked by us, so `temp` is our file: no other save removes
        // or renames it.
        let _ = std::fs::remove_file(&temp);
        return Err(fail(format!("cannot write {shown}"), e));
    }
    sync_dir(&dir).map_err(|e| {
        fail(
            format!(
                "wrote {shown}, but could not sync its directory {} (the new file may not survive a crash)",
                dir.display()
            ),
            e,
        )
    })?;
    // Dropping `file` releases the lock (the renamed file is the target now).
    drop(file);
    Ok(())
}

/// `path` with symbolic links in its last component followed (relative
/// targets resolve against the link's directory), up to 40 of them as
/// Linux allows. A dangling link gives the path it points to, which the
/// save creates.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Creates the temporary file `temp`, fresh (so it gets the umask's
/// permissions) and locked (advisory, exclusive). Whatever is at `temp`
/// already is stale, left by an interrupted save, and is removed, unless a
/// save still running holds its lock: then this fails. One rule keeps
/// concurrent saves apart: `temp` is only written, renamed or removed by the
/// holder of the lock on the file it names.
fn claim_temp(temp: &Path) -> io::Result<File> {
    for _ in 0..8 {
        // Junk that no save creates (a link, a directory) is not locked by
        // anyone; a link is removed rather than followed.
        if let Ok(meta) = std::fs::symlink_metadata(temp)
            && !meta.is_file()
        {
            if meta.is_dir() {
                return Err(io::Error::other(
                    "a directory is in the way of the temporary file",
                ));
            }
            remove_if_present(temp)?;
        }
        let (file, fresh) = match OpenOptions::new().write(true).create_new(true).open(temp) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Read-only suffices to lock, and the stale file may be
                // read-only.
                match File::open(temp) {
                    Ok(file) => (file, false),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::other(
                    "another save to the same path is in progress",
                ));
            }
            // No advisory locks on this file system: go on unlocked.
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if !names_file(temp, &file)? {
            // Removed or replaced between our open and our lock: try again.
            continue;
        }
        if fresh {
            return Ok(file);
        }
        remove_if_present(temp)?;
    }
    Err(io::Error::other(
        "other saves keep replacing the temporary file",
    ))
}

/// Whether `path` still names the open `file` (the same inode).
fn names_file(path: &Path, file: &File) -> io::Result<bool> {
    let at_path = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata()?;
        Ok(open.dev() == at_path.dev() && open.ino() == at_path.ino())
    }
    #[cfg(not(unix))]
    {
        // Open files cannot be removed or renamed on Windows, so the path
        // still names the file we opened.
        let _ = file;
        Ok(at_path.is_file())
    }
}

/// Removes the file `path`; one that is already gone is fine.
fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Syncs directory `dir`, so a rename in it survives a crash (Unix; other
/// systems cannot open directories as files and sync renames themselves).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
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

    /// Why this tensor cannot become a `want` tensor (its dtype neither is
    /// `want` nor converts to it), for error messages; `None` when it can.
    pub(crate) fn dtype_problem(&self, name: &str, want: DType) -> Option<String> {
        let expected = format!("expected {} ({want})", file_dtype(want));
        match self {
            Incoming::Memory(t) if t.dtype() != want => Some(format!(
                "tensor '{name}' has dtype {}, {expected}",
                t.dtype()
            )),
            Incoming::File(v) if !converts(v.dtype(), want) => {
                let convertible = CONVERTED_TO_F32
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                let hint = if want == DType::F32 {
                    format!(" ({convertible} convert to F32, {} does not)", v.dtype())
                } else {
                    String::new()
                };
                Some(format!(
                    "tensor '{name}' has dtype {}, {expected} like its parameter{hint}",
                    v.dtype()
                ))
            }
            _ => None,
        }
    }

    /// The data as fresh `want` storage on `device` (never aliasing the
    /// source, so in-place GPU optimizer steps on the result leave the
    /// source alone), converted from F64, F16 or BF16 to F32 when `want` is
    /// F32 (see [`converts`]). Errors name the tensor as `name`.
    pub(crate) fn to_storage(&self, name: &str, device: &Device, want: DType) -> Result<Storage> {
        if let Some(problem) = self.dtype_problem(name, want) {
            return Err(Error::invalid("load", problem));
        }
        match self {
            Incoming::Memory(t) => Ok(copy_to_device(t, device)?.storage()),
            Incoming::File(v) => {
                let (shape, data) = (v.shape(), v.data());
                match v.dtype() {
                    Dtype::F32 => {
                        Storage::from_vec(le_words(data, f32::from_le_bytes), shape, device)
                    }
                    Dtype::I32 => {
                        Storage::from_vec(le_words(data, i32::from_le_bytes), shape, device)
                    }
                    Dtype::U32 => {
                        Storage::from_vec(le_words(data, u32::from_le_bytes), shape, device)
                    }
                    // Narrowing: rounds to nearest-even, overflows to
                    // infinity, keeps NaN, as torch's `.float()`.
                    Dtype::F64 => Storage::from_vec(
                        le_words(data, |w| f64::from_le_bytes(w) as f32),
                        shape,
                        device,
                    ),
                    // Widening, exact (subnormals, infinities and NaN too).
                    Dtype::F16 => Storage::from_vec(
                        le_words(data, |w| half::f16::from_le_bytes(w).to_f32()),
                        shape,
                        device,
                    ),
                    Dtype::BF16 => Storage::from_vec(
                        le_words(data, |w| half::bf16::from_le_bytes(w).to_f32()),
                        shape,
                        device,
                    ),
                    other => Err(Error::invalid(
                        "load",
                        format!("tensor '{name}': dtype {other} has no wgrad equivalent"),
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
        let storage = source_tensor.to_storage(name, &param.device(), param.dtype())?;
        pending.push((param.clone(), storage));
    }
    Ok(Plan { pending })
}

/// The strict checks of [`stage`]: the names match exactly, and each tensor
/// has the expected shape and dtype (or one that [`converts`] to it).
/// Returns every problem found.
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
        problems.extend(t.dtype_problem(name, param.dtype()));
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

/// The file dtypes [`load`] converts into F32 parameters.
const CONVERTED_TO_F32: [Dtype; 3] = [Dtype::F64, Dtype::F16, Dtype::BF16];

/// Whether a file tensor of dtype `from` loads into a `to` tensor: the same
/// dtype, or F64, F16 or BF16 into F32. Those are the conversions PyTorch's
/// `load_state_dict` makes that lose nothing a float32 model could hold
/// (F16 and BF16 widen exactly; F64 rounds to nearest as storing it in a
/// float32 parameter must). Integers, bool and 8-bit floats are refused:
/// loading them into weights is almost surely the wrong file.
pub(crate) fn converts(from: Dtype, to: DType) -> bool {
    dtype_of(from) == Some(to) || (to == DType::F32 && CONVERTED_TO_F32.contains(&from))
}

/// How safetensors spells a wgrad dtype.
fn file_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::I32 => Dtype::I32,
        DType::U32 => Dtype::U32,
    }
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

/// Decodes little-endian `N`-byte words (the safetensors byte order,
/// whatever the host's). The caller's view guarantees a multiple of `N`
/// bytes.
fn le_words<T, const N: usize>(bytes: &[u8], from_le: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .filter_map(|c| <[u8; N]>::try_from(c).ok())
        .map(from_le)
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
