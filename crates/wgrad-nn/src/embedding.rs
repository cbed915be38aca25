//! [`Embedding`]: a lookup table of learned vectors (`torch.nn.Embedding`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::init;
use crate::module::{Module, moved_parameter};

/// Maps I32 indices of any shape to rows of `weight` `[num_embeddings,
/// embedding_dim]`: the output has the indices' shape plus `[dim]`. The
/// backward accumulates into the picked rows (`index_add`). An index outside
/// `0..num_embeddings` is `IndexOutOfRange` (on a GPU at the next readback).
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Tensor,
    training: bool,
}

impl Embedding {
    /// A table initialised from `N(0, 1)` like PyTorch (default generator).
    pub fn new(num_embeddings: usize, embedding_dim: usize, device: &Device) -> Result<Self> {
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], device)?;
        init::normal_(&weight, 0.0, 1.0)?;
        Ok(Embedding {
            weight: weight.with_requires_grad(true)?,
            training: true,
        })
    }

    /// A table over an existing 2-D weight (`Embedding.from_pretrained` with
    /// `freeze=False` when `weight` requires grad).
    pub fn from_weight(weight: Tensor) -> Result<Self> {
        if weight.rank() != 2 {
            return Err(Error::invalid(
                "Embedding",
                format!(
                    "weight must be 2-D [num, dim], got shape {:?}",
                    weight.shape()
                ),
            ));
        }
        Ok(Embedding {
            weight,
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
}

impl Module for Embedding {
    fn forward(&self, indices: &Tensor) -> Result<Tensor> {
        let shape = indices.shape();
        // An explicit length (not -1) so empty index tensors reshape too.
        let flat = indices.reshape(&[indices.numel() as isize])?;
        let rows = self.weight.index_select(0, &flat)?;
        let mut out_shape: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
        out_shape.push(self.embedding_dim() as isize);
        rows.reshape(&out_shape)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![("weight".to_string(), self.weight.clone())]
    }

    fn train(&mut self, on: bool) {
        self.training = on;
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.weight = moved_parameter(&self.weight, device)?;
        Ok(())
    }
}
