//! Writing safetensors files: encoding tensors, laying out the header as
//! `safetensors::serialize` does, and handing the bytes to
//! [`write_atomically`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use safetensors::Dtype;
use safetensors::tensor::{TensorView, View};
use wgrad_autograd::Tensor;
use wgrad_core::{Error, Result};

use super::atomic::write_atomically;
use super::dtype::{Encoded, encode};

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
        TensorView::new(*dtype, shape.clone(), bytes).map_err(|e| {
            Error::serialization(op, path, format!("cannot encode tensor '{name}'"), e)
        })?;
    }
    let (header, order) = header_and_order(&tensors, metadata)
        .map_err(|e| Error::serialization(op, path, "cannot lay out the header", e))?;
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

/// The error of [`header_and_order`]: the safetensors crate's, or ours.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The safetensors header of `tensors` (length word + JSON, as
/// `safetensors::serialize` writes it) and the indices of `tensors` in the
/// order their data follows it.
fn header_and_order(
    tensors: &[(String, Encoded)],
    metadata: Option<HashMap<String, String>>,
) -> std::result::Result<(Vec<u8>, Vec<usize>), BoxError> {
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
    let header = safetensors::serialize(views, metadata)?;
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
        return Err("the safetensors crate laid the header out unexpectedly".into());
    }
    Ok((header, order))
}
