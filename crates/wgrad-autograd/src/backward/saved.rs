//! What a backward rule may read of its node, checked against the
//! versions the forward pass saw.

use std::cell::Cell;

use wgrad_core::{Error, Result};

use crate::graph::Node;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// What a backward rule may read of its node: the saved inputs and output,
/// each checked against the version it had when the node was recorded.
pub(super) struct Saved<'a> {
    pub(super) node: &'a Node,
    pub(super) output: &'a Tensor,
    /// The output's gradient arrived through this node's ReLU mask already
    /// (a fused `linear_relu`'s, applied by the gradient's producer).
    pub(super) grad_premasked: bool,
    /// A ReLU output to mask input 0's gradient by as it is made (a
    /// `linear` node whose input is a `linear_relu`'s output), and whether
    /// the rule did (backward/relu_premask.rs).
    pub(super) dx_relu_mask: Option<Storage>,
    pub(super) dx_masked: Cell<bool>,
}

impl Saved<'_> {
    /// Input `i`'s data as the forward pass saw it.
    pub(super) fn input(&self, i: usize) -> Result<Storage> {
        let tensor = &self.node.inputs[i];
        self.check_version(tensor, self.node.input_versions[i], &format!("input {i}"))?;
        Ok(tensor.storage())
    }

    /// The node's output as the forward pass made it.
    pub(super) fn output(&self) -> Result<Storage> {
        self.check_version(self.output, self.node.output_version, "the output")?;
        Ok(self.output.storage())
    }

    /// Input `i`'s shape (which no change of data can alter).
    pub(super) fn shape(&self, i: usize) -> Vec<usize> {
        self.node.inputs[i].shape().to_vec()
    }

    /// PyTorch's "modified by an inplace operation" error.
    pub(super) fn check_version(&self, tensor: &Tensor, saved: u64, what: &str) -> Result<()> {
        let now = tensor.version();
        if now == saved {
            return Ok(());
        }
        Err(Error::invalid(
            "backward",
            format!(
                "one of the tensors needed for gradient computation has been modified by an \
                 inplace operation: {what} of `{}` (shape {:?}) is at version {now}; expected \
                 version {saved} instead. Its data changed (set_storage, an optimizer step, an \
                 in-place op) after the forward pass saved it; run backward before changing it",
                self.node.op.name(),
                tensor.shape()
            ),
        ))
    }
}
