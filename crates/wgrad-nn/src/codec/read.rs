//! Reading safetensors files into memory and validating their layout.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;
use safetensors::tensor::{Metadata, TensorView};
use wgrad_core::{Error, Result};

/// A safetensors file read into memory.
pub(crate) struct SafetensorsFile {
    path: PathBuf,
    bytes: Vec<u8>,
}

/// A parsed file: its `__metadata__` and its tensors in file order.
pub(crate) struct Parsed<'a> {
    pub metadata: HashMap<String, String>,
    pub tensors: Vec<(String, TensorView<'a>)>,
}

impl SafetensorsFile {
    /// Reads the whole file ([`Error::Io`] naming it when it can't be).
    pub(crate) fn read(op: &'static str, path: &Path) -> Result<SafetensorsFile> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(op, path, "cannot read", e))?;
        Ok(SafetensorsFile {
            path: path.to_path_buf(),
            bytes,
        })
    }

    /// How errors name the file.
    pub(crate) fn label(&self) -> String {
        self.path.display().to_string()
    }

    /// Parses the header and checks that every tensor's byte range is
    /// consistent with its dtype and shape and that the data covers the rest
    /// of the file exactly (so truncated and padded files are rejected);
    /// a file that fails is [`Error::Serialization`] with the safetensors
    /// crate's error as its source.
    pub(crate) fn parse(&self, op: &'static str) -> Result<Parsed<'_>> {
        let corrupt = |e: safetensors::SafeTensorError| {
            Error::serialization(
                op,
                &self.path,
                "not a valid safetensors file (truncated or corrupted?)",
                e,
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
