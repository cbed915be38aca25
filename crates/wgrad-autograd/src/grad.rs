//! [`grad`]: gradients of outputs with respect to chosen inputs, returned
//! rather than accumulated into `.grad` (PyTorch's `torch.autograd.grad`).

use std::collections::{HashMap, HashSet};

use wgrad_core::{BinaryOp, DType, Error, Result};

use crate::backward::walk;
use crate::graph::topological_order;
use crate::storage::Storage;
use crate::tensor::Tensor;

const OP: &str = "autograd.grad";

/// The keyword arguments of [`grad`] (`torch.autograd.grad`'s).
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Keep the walked part of the graph for another backward or `grad`
    /// through it. By default (as in PyTorch, where it defaults to
    /// `create_graph`, i.e. false) the nodes the walk ran are freed.
    pub retain_graph: bool,
    /// Record the backward pass so the returned gradients can be
    /// differentiated again (higher-order gradients). Not supported: the
    /// walk runs the backward rules on storage and records no graph, so
    /// `true` is an error saying so.
    pub create_graph: bool,
    /// An input that the outputs do not depend on gets `None` instead of
    /// an error (PyTorch's `allow_unused=True`; wgrad returns `None`, not
    /// zeros, as PyTorch does without `materialize_grads`).
    pub allow_unused: bool,
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
/// create_graph, allow_unused)`: the gradient of the sum of `outputs`
/// (each weighted by its `grad_outputs` entry) with respect to each of
/// `inputs`, in the order of `inputs`. No tensor's `.grad` changes.
///
/// - `outputs` must require grad (each is a result of recorded ops on a
///   tensor that requires grad, or such a leaf).
/// - `inputs` must require grad; they can be leaves or intermediate
///   results (the gradient that reaches the result), and may repeat.
/// - `grad_outputs`: one upstream gradient per output, of its shape and
///   device. `None` means ones, which only a one-element output may take
///   (as in PyTorch).
/// - Only the part of the graph between the outputs and the inputs is
///   walked; the nodes walked are freed unless
///   [`retain_graph`](GradOptions::retain_graph).
/// - An input that no output depends on is an error unless
///   [`allow_unused`](GradOptions::allow_unused), which gives `None` for it.
/// - [`create_graph`](GradOptions::create_graph) is refused (see there).
///
/// The backward rules run on each tensor's own device, as in `backward`.
///
/// ```
/// use wgrad_autograd::{Device, GradOptions, Tensor, grad};
/// let device = Device::Cpu;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], &device)?.with_requires_grad(true)?;
/// let y = x.mul(&x)?.sum_all()?;
/// let dx = grad(&[&y], &[&x], None, GradOptions::default())?;
/// assert_eq!(dx[0].as_ref().map(|g| g.to_vec_f32()).transpose()?, Some(vec![2.0, 4.0, 6.0]));
/// assert!(x.grad().is_none());
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn grad(
    outputs: &[&Tensor],
    inputs: &[&Tensor],
    grad_outputs: Option<&[&Tensor]>,
    options: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if options.create_graph {
        return Err(Error::invalid(
            OP,
            "create_graph=true (higher-order gradients) is not supported: the backward walk \
             runs the backward rules on storage and records no graph of them",
        ));
    }
    check_arguments(outputs, inputs)?;
    let seeds = seeds(outputs, grad_outputs)?;
    let roots: Vec<Tensor> = outputs.iter().map(|&t| t.clone()).collect();
    let order = topological_order(&roots)?;
    let wanted: HashSet<u64> = inputs.iter().map(|t| t.id()).collect();
    let through = leading_to_inputs(&order, &wanted)?;

    let mut captured: HashMap<u64, Storage> = HashMap::new();
    let mut ran: Vec<Tensor> = Vec::new();
    let observed = |t: &Tensor| wanted.contains(&t.id());
    walk(&order, seeds, &observed, |tensor, g| {
        if wanted.contains(&tensor.id()) {
            captured.insert(tensor.id(), g.clone());
        }
        // Only nodes with an input among (or above) `inputs` run.
        if !through.contains(&tensor.id()) {
            return None;
        }
        ran.push(tensor.clone());
        Some(g)
    })?;
    if !options.retain_graph {
        for grad_fn in ran.iter().filter_map(Tensor::grad_fn) {
            drop(grad_fn.take());
        }
    }

    inputs
        .iter()
        .enumerate()
        .map(|(i, input)| match captured.get(&input.id()) {
            Some(g) => Ok(Some(Tensor::from_storage_leaf(g.contiguous()?))),
            None if options.allow_unused => Ok(None),
            None => Err(Error::invalid(
                OP,
                format!(
                    "input {i} (shape {:?}) appears to not have been used in the graph; set \
                     allow_unused: true if this is the desired behavior",
                    input.shape()
                ),
            )),
        })
        .collect()
}

/// PyTorch's argument errors: empty lists, outputs or inputs that do not
/// require grad.
fn check_arguments(outputs: &[&Tensor], inputs: &[&Tensor]) -> Result<()> {
    if outputs.is_empty() {
        return Err(Error::invalid(OP, "grad requires non-empty outputs"));
    }
    if inputs.is_empty() {
        return Err(Error::invalid(OP, "grad requires non-empty inputs"));
    }
    if let Some(i) = outputs.iter().position(|t| !t.requires_grad()) {
        return Err(Error::invalid(
            OP,
            format!("element {i} of outputs does not require grad and does not have a grad_fn"),
        ));
    }
    if let Some(i) = inputs.iter().position(|t| !t.requires_grad()) {
        return Err(Error::invalid(
            OP,
            format!("input {i} (one of the differentiated tensors) does not require grad"),
        ));
    }
    Ok(())
}

/// The upstream gradient of every output, summed per tensor when an output
/// is listed twice.
fn seeds(outputs: &[&Tensor], grad_outputs: Option<&[&Tensor]>) -> Result<HashMap<u64, Storage>> {
    if let Some(given) = grad_outputs
        && given.len() != outputs.len()
    {
        return Err(Error::invalid(
            OP,
            format!(
                "grad_outputs has {} tensors but there are {} outputs; give one per output",
                given.len(),
                outputs.len()
            ),
        ));
    }
    let mut seeds: HashMap<u64, Storage> = HashMap::new();
    for (i, output) in outputs.iter().enumerate() {
        let seed = match grad_outputs.map(|g| g[i]) {
            Some(g) => {
                if g.shape() != output.shape() {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "mismatch in shape: grad_outputs[{i}] has a shape of {:?} and \
                             outputs[{i}] has a shape of {:?}",
                            g.shape(),
                            output.shape()
                        ),
                    ));
                }
                if !g.dtype().is_float() {
                    return Err(Error::DTypeMismatch {
                        op: OP,
                        expected: DType::F32,
                        got: g.dtype(),
                    });
                }
                if !g.device().same(&output.device()) {
                    return Err(Error::DeviceMismatch {
                        op: OP,
                        lhs: output.device().to_string(),
                        rhs: g.device().to_string(),
                    });
                }
                g.storage()
            }
            None => {
                if output.numel() != 1 {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "grad can be implicitly created only for scalar outputs: \
                             outputs[{i}] has shape {:?}; pass grad_outputs",
                            output.shape()
                        ),
                    ));
                }
                Storage::full(&output.shape(), 1.0, DType::F32, &output.device())?
            }
        };
        let merged = match seeds.remove(&output.id()) {
            Some(existing) => existing.binary(&seed, BinaryOp::Add)?,
            None => seed,
        };
        seeds.insert(output.id(), merged);
    }
    Ok(seeds)
}

/// The tensors of `order` (inputs before outputs) whose node has an input
/// that is in `wanted` or leads to one: the only nodes the walk must run.
fn leading_to_inputs(order: &[Tensor], wanted: &HashSet<u64>) -> Result<HashSet<u64>> {
    let mut through = HashSet::new();
    for tensor in order {
        let Some(grad_fn) = tensor.grad_fn() else {
            continue;
        };
        let leads = grad_fn
            .inputs()?
            .iter()
            .any(|input| wanted.contains(&input.id()) || through.contains(&input.id()));
        if leads {
            through.insert(tensor.id());
        }
    }
    Ok(through)
}
