//! The safetensors codec beneath [`state_dict`](crate::state_dict) and
//! [`checkpoint`](crate::checkpoint): both import it, neither imports the
//! other.
//!
//! * [`read`]: reading and validating safetensors bytes ([`SafetensorsFile`]);
//! * [`write`]: laying out and writing them ([`write_tensors`],
//!   [`write_encoded`]) through [`atomic`]'s durable file replacement
//!   ([`write_atomically`](atomic::write_atomically));
//! * [`dtype`]: wgrad <-> safetensors dtypes, little-endian encoding, and the
//!   F64/F16/BF16 -> F32 conversions loads make;
//! * [`stage`](mod@stage): checking incoming tensors against what a model or optimizer
//!   expects and staging their data on its devices ([`Incoming`], [`Plan`](stage::Plan)).
//!
//! It also knows the metadata markers that tell a checkpoint from a plain
//! state_dict, so `state_dict::load` can skip a checkpoint's optimizer part
//! without asking `checkpoint`.

use std::collections::HashMap;

use wgrad_core::{Error, Result};

pub(crate) mod atomic;
pub(crate) mod dtype;
pub(crate) mod read;
pub(crate) mod stage;
pub(crate) mod write;

pub(crate) use dtype::{Encoded, encode};
pub(crate) use read::SafetensorsFile;
pub(crate) use stage::{Incoming, copy_to_device, entry_problems, stage, stage_non_strict};
pub(crate) use write::{write_encoded, write_tensors};

/// Metadata every file written here carries: `format = pt` is what
/// Hugging Face tooling expects of a PyTorch-layout state_dict.
const FORMAT_KEY: &str = "format";
const FORMAT_PT: &str = "pt";

/// Prefix of every optimizer tensor and metadata key in a file.
pub(crate) const OPTIM_PREFIX: &str = "optim.";
/// Metadata key telling what a wgrad file holds beyond a state_dict.
pub(crate) const KIND_KEY: &str = "wgrad.kind";
/// [`KIND_KEY`]'s value in a checkpoint (model + optimizer + epoch).
pub(crate) const KIND_CHECKPOINT: &str = "checkpoint";

/// `Some({format: pt, extra...})`: the metadata of the files written here.
pub(crate) fn metadata_with_format(
    extra: Vec<(String, String)>,
) -> Option<HashMap<String, String>> {
    let mut map: HashMap<String, String> = extra.into_iter().collect();
    map.insert(FORMAT_KEY.to_string(), FORMAT_PT.to_string());
    Some(map)
}

/// Whether file metadata marks a checkpoint.
pub(crate) fn is_checkpoint_metadata(meta: &HashMap<String, String>) -> bool {
    meta.get(KIND_KEY).map(String::as_str) == Some(KIND_CHECKPOINT)
}

/// Whether a tensor name belongs to the optimizer part of a file.
pub(crate) fn is_optimizer_name(name: &str) -> bool {
    name.starts_with(OPTIM_PREFIX)
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

/// `'a', 'b'` for error messages.
pub(crate) fn list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
