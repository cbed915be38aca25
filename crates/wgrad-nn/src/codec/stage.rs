//! Checking incoming tensors (from a file or from memory) against the
//! tensors they are to replace, and staging their data on those tensors'
//! devices, so a load changes nothing until everything checked out.

use std::collections::{BTreeSet, HashMap};

use safetensors::Dtype;
use safetensors::tensor::TensorView;
use wgrad_autograd::{Device, Storage, Tensor};
use wgrad_core::{DType, Error, Result};

use super::dtype::{FLOAT_FILE_DTYPES, converts, file_dtype, le_words};
use super::{fail_if_any, list};

/// Where a tensor to load comes from.
#[derive(Clone)]
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
            Incoming::Memory(t) => t.shape().to_vec(),
        }
    }

    /// Why this tensor cannot become a `want` tensor (its dtype neither is
    /// `want` nor converts to it), for error messages; `None` when it can.
    pub(crate) fn dtype_problem(&self, name: &str, want: DType) -> Option<String> {
        let expected = format!("expected {} ({want})", file_dtype(want));
        match self {
            Incoming::Memory(t)
                if t.dtype() != want && !(t.dtype().is_float() && want.is_float()) =>
            {
                Some(format!(
                    "tensor '{name}' has dtype {}, {expected}",
                    t.dtype()
                ))
            }
            Incoming::File(v) if !converts(v.dtype(), want) => {
                let convertible = FLOAT_FILE_DTYPES
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                let hint = if want.is_float() {
                    format!(" ({convertible} convert to {want}, {} does not)", v.dtype())
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
        let storage = self.decode(name, device)?;
        if storage.dtype() == want {
            return Ok(storage);
        }
        // A float of another width (PyTorch's `copy_` into the parameter).
        storage.cast(want)
    }

    /// The data as fresh storage on `device` in the nearest wgrad dtype of
    /// the source (F64 rounds to F32, I64 narrows to I32).
    fn decode(&self, name: &str, device: &Device) -> Result<Storage> {
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
                    Dtype::F16 => {
                        Storage::from_vec(le_words(data, half::f16::from_le_bytes), shape, device)
                    }
                    Dtype::BF16 => {
                        Storage::from_vec(le_words(data, half::bf16::from_le_bytes), shape, device)
                    }
                    // PyTorch's integer buffers (num_batches_tracked) are
                    // int64; they load into I32 when every value fits.
                    Dtype::I64 => {
                        let wide = le_words(data, i64::from_le_bytes);
                        let narrow = wide
                            .iter()
                            .map(|&v| i32::try_from(v))
                            .collect::<std::result::Result<Vec<i32>, _>>()
                            .map_err(|_| {
                                Error::invalid(
                                    "load",
                                    format!(
                                        "tensor '{name}': an int64 value does not fit the \
                                         int32 tensor it loads into"
                                    ),
                                )
                            })?;
                        Storage::from_vec(narrow, shape, device)
                    }
                    // torch.bool: one byte per element, 0 or 1.
                    Dtype::BOOL => Storage::from_vec(
                        data.iter()
                            .map(|&b| u32::from(b != 0))
                            .collect::<Vec<u32>>(),
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

/// [`stage`] with PyTorch's `strict=False`: names only one side has are
/// not errors but returned, the module's missing ones in its order and the
/// unexpected ones in `incoming`'s; the names both have are checked and
/// staged as [`stage`] does (a wrong shape or dtype is still an error, and
/// nothing changes then).
pub(crate) fn stage_non_strict(
    op: &'static str,
    source: &str,
    expected: &[(String, Tensor)],
    incoming: &[(String, Incoming<'_>)],
) -> Result<(Plan, Vec<String>, Vec<String>)> {
    let have: BTreeSet<&str> = incoming.iter().map(|(n, _)| n.as_str()).collect();
    let want: BTreeSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    let (present, missing): (Vec<_>, Vec<_>) = expected
        .iter()
        .cloned()
        .partition(|(n, _)| have.contains(n.as_str()));
    let mut unexpected = Vec::new();
    let mut known = Vec::new();
    for (name, t) in incoming {
        if want.contains(name.as_str()) {
            known.push((name.clone(), t.clone()));
        } else {
            unexpected.push(name.clone());
        }
    }
    let plan = stage(op, source, &present, &known)?;
    let missing = missing.into_iter().map(|(n, _)| n).collect();
    Ok((plan, missing, unexpected))
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
