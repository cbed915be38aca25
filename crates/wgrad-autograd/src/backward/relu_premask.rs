//! ReLU gradients applied by their producer. In `x -> linear_relu -> h ->
//! linear`, the second layer's backward makes `dh = g W` and the first
//! layer's backward would then mask it by `h > 0`: a pass over `dh` of its
//! own (or the mask read inside both of its products). Instead the second
//! layer's product zeroes the masked elements in its store (the GPU's
//! `matmul_t_masked_by_relu`), and the walk tells the first layer's rule
//! that its gradient arrived masked.
//!
//! Masking is idempotent and linear, so a gradient summed from masked and
//! unmasked parts is still right when masked again; the walk only skips
//! the mask when every part of `h`'s gradient came masked (no `narrow`
//! windows either). What must never change is what users see of `dh`: a
//! tensor whose gradient is observed (hooks, `retain_grad`, an input of
//! [`grad`](crate::grad())) gets it unmasked.

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// The ReLU output a rule may mask `input`'s gradient by as it makes it:
/// `input` is the output of a fused `linear_relu` node, unchanged since
/// (its version), and nobody observes its gradient (`observed`, hooks).
pub(super) fn mask_for(input: &Tensor, observed: &dyn Fn(&Tensor) -> bool) -> Option<Storage> {
    if !input.requires_grad() || observed(input) || input.has_hooks() {
        return None;
    }
    let grad_fn = input.grad_fn()?;
    let node = grad_fn.lock();
    let node = node.as_ref()?;
    let fused_relu = matches!(node.op, Op::Linear { relu: true });
    (fused_relu && node.output_version == input.version()).then(|| input.storage())
}
