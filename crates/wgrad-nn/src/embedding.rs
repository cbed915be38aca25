//! [`Embedding`]: a lookup table of learned vectors (`torch.nn.Embedding`),
//! and [`embedding`], its functional form (`torch.nn.functional.embedding`).

use wgrad_autograd::{CompareOp, DType, Device, Tensor, no_grad};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::init;

/// Maps I32 indices of any shape to rows of `weight` `[num_embeddings,
/// embedding_dim]`: the output has the indices' shape plus `[dim]`. The
/// backward accumulates into the picked rows (`index_add`). An index outside
/// `0..num_embeddings` is `IndexOutOfRange` (on a GPU at the next readback).
///
/// With a `padding_idx` (PyTorch's `padding_idx=`), the lookups of that row
/// give it no gradient: its `weight` gradient stays 0, so an optimizer
/// without weight decay leaves the row as it is (all zeros when the table
/// was made by [`new_with_padding_idx`](Self::new_with_padding_idx)).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Embedding, Module};
/// let table = Embedding::new(10, 4, &Device::Cpu)?;
/// let ids = Tensor::from_vec(vec![1i32, 7, 7], &[3], &Device::Cpu)?;
/// assert_eq!(table.forward(&ids)?.shape(), [3, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Tensor,
    padding_idx: Option<usize>,
    training: bool,
}

impl Embedding {
    /// A table initialised from `N(0, 1)` like PyTorch (default generator).
    pub fn new(num_embeddings: usize, embedding_dim: usize, device: &Device) -> Result<Self> {
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        Ok(Embedding {
            weight: weight.with_requires_grad(true)?,
            padding_idx: None,
            training: true,
        })
    }

    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx)`:
    /// initialised from `N(0, 1)` with the row `padding_idx` zeroed, and no
    /// gradient for that row. A negative `padding_idx` counts from the end;
    /// one outside `-num_embeddings..num_embeddings` is an error naming it.
    pub fn new_with_padding_idx(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: isize,
        device: &Device,
    ) -> Result<Self> {
        let padding_idx = normalize_padding_idx(padding_idx, num_embeddings)?;
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        let weight = {
            let _guard = no_grad();
            let rows = Tensor::arange(0.0, num_embeddings as f64, 1.0, DType::I32, device)?;
            let pad_row = compare_row(&rows, padding_idx, CompareOp::Eq)?;
            weight.masked_fill(&pad_row.unsqueeze(1)?, 0.0)?.detach()
        };
        Ok(Embedding {
            weight: weight.with_requires_grad(true)?,
            padding_idx: Some(padding_idx),
            training: true,
        })
    }

    /// A table over an existing 2-D weight (`Embedding.from_pretrained` with
    /// `freeze=False` when `weight` requires grad).
    pub fn from_weight(weight: Tensor) -> Result<Self> {
        check_weight("Embedding", &weight)?;
        Ok(Embedding {
            weight,
            padding_idx: None,
            training: true,
        })
    }

    /// [`from_weight`](Self::from_weight) with a `padding_idx`
    /// (`Embedding.from_pretrained(weight, padding_idx=...)`): the row is
    /// kept as given (not zeroed) and gets no gradient. A negative index
    /// counts from the end; one out of range is an error naming it.
    pub fn from_weight_with_padding_idx(weight: Tensor, padding_idx: isize) -> Result<Self> {
        check_weight("Embedding", &weight)?;
        let num = weight.shape()[0];
        Ok(Embedding {
            weight,
            padding_idx: Some(normalize_padding_idx(padding_idx, num)?),
            training: true,
        })
    }

    /// `num_embeddings`.
    pub fn num_embeddings(&self) -> usize {
        self.weight.shape().first().copied().unwrap_or(0)
    }

    /// `embedding_dim`.
    pub fn embedding_dim(&self) -> usize {
        self.weight.shape().get(1).copied().unwrap_or(0)
    }

    /// The row that gets no gradient, counted from the start (PyTorch
    /// stores a negative `padding_idx` the same way).
    pub fn padding_idx(&self) -> Option<usize> {
        self.padding_idx
    }

    fn forward(&self, indices: &Tensor) -> Result<Tensor> {
        lookup(indices, &self.weight, self.padding_idx)
    }
}

/// `torch.nn.functional.embedding(indices, weight, padding_idx)`: the rows
/// of the 2-D `weight` picked by the I32 `indices` (any shape; the output
/// appends `weight`'s second dim). With a `padding_idx` (negative counts
/// from the end; out of range is an error naming it), lookups of that row
/// pass no gradient to `weight`; the output is the row as stored either way.
pub fn embedding(indices: &Tensor, weight: &Tensor, padding_idx: Option<isize>) -> Result<Tensor> {
    check_weight("embedding", weight)?;
    let padding_idx = padding_idx
        .map(|p| normalize_padding_idx(p, weight.shape()[0]))
        .transpose()?;
    lookup(indices, weight, padding_idx)
}

fn lookup(indices: &Tensor, weight: &Tensor, padding_idx: Option<usize>) -> Result<Tensor> {
    check_weight("embedding", weight)?;
    let shape = indices.shape();
    // An explicit length (not -1) so empty index tensors reshape too.
    let flat = indices.reshape(&[indices.numel() as isize])?;
    let mut rows = weight.index_select(0, &flat)?;
    if let Some(p) = padding_idx
        && rows.requires_grad()
    {
        // The same values either way; only the graph differs: where the
        // index is the padding row the output comes from a detached copy,
        // so that row's gradient entries are 0 (the `where` backward masks
        // them on the device, before `index_add` sums them into `weight`).
        let keep = compare_row(&flat, p, CompareOp::Ne)?.unsqueeze(1)?;
        rows = Tensor::where_cond(&keep, &rows, &rows.detach())?;
    }
    let mut out_shape: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    out_shape.push(weight.shape()[1] as isize);
    rows.reshape(&out_shape)
}

/// The U32 mask `indices (op) row` (compared as I32, so exact for any
/// table size).
fn compare_row(indices: &Tensor, row: usize, op: CompareOp) -> Result<Tensor> {
    let row = Tensor::full(&[], row as f64, DType::I32, &indices.device())?;
    indices.compare(&row, op)
}

fn check_weight(op: &'static str, weight: &Tensor) -> Result<()> {
    if weight.rank() != 2 {
        return Err(Error::invalid(
            op,
            format!(
                "weight must be 2-D [num, dim], got shape {:?}",
                weight.shape()
            ),
        ));
    }
    Ok(())
}

/// PyTorch's rule: `padding_idx` in `-num..num`, negative counted from the end.
fn normalize_padding_idx(padding_idx: isize, num_embeddings: usize) -> Result<usize> {
    let row = if padding_idx < 0 {
        num_embeddings.checked_sub(padding_idx.unsigned_abs())
    } else {
        Some(padding_idx.unsigned_abs()).filter(|&p| p < num_embeddings)
    };
    row.ok_or_else(|| {
        Error::invalid(
            "Embedding",
            format!(
                "padding_idx {padding_idx} must be within num_embeddings {num_embeddings} \
                 (-{num_embeddings} <= padding_idx < {num_embeddings})"
            ),
        )
    })
}
