//! Reverse-mode differentiation: an iterative topological walk and one
//! `match` with every op's backward rule, run on the tensor's own device.

use std::cell::Cell;
use std::collections::HashMap;

use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, UnaryOp, shape};

use crate::graph::{Op, topological_order};
use crate::ops::{attention, conv, layer_norm, linear, scatter, structure};
use crate::storage::Storage;
use crate::tensor::Tensor;

mod binary;
mod matmul;
mod relu_premask;
mod saved;
mod windows;
use binary::{binary_grads, scalar_grad};
use saved::Saved;
use windows::Window;

/// Options of [`Tensor::backward_with_options`] (PyTorch's keyword
/// arguments of `backward`).
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardOptions {
    /// Keep what the graph saved for backward so that another backward can
    /// run through it (PyTorch's `retain_graph`). By default backward frees
    /// it, so the memory of a step is given back as soon as backward ends.
    pub retain_graph: bool,
}

impl Tensor {
    /// Computes gradients of this one-element tensor with respect to every
    /// leaf that requires grad, accumulating into their `.grad`. Frees the
    /// graph's saved tensors (see [`BackwardOptions::retain_graph`]).
    ///
    /// Autograd at a glance: `requires_grad`, `backward`, `grad`,
    /// `zero_grad`, `detach`, [`no_grad`](crate::no_grad) (and
    /// [`grad`](crate::grad()) for gradients returned instead of stored):
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor, no_grad};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], &Device::Cpu)?
    ///     .with_requires_grad(true)?;
    /// let y = x.mul(&x)?.sum_all()?; // sum(x^2)
    /// assert!(y.requires_grad() && !y.is_leaf());
    /// y.backward()?;
    /// let g = x.grad().expect("x requires grad");
    /// assert_eq!(g.to_vec_f32()?, [2.0, 4.0, 6.0]);
    /// // Gradients accumulate until cleared, as in PyTorch.
    /// x.mul_scalar(10.0)?.sum_all()?.backward()?;
    /// assert_eq!(x.grad().expect("x requires grad").to_vec_f32()?, [12.0, 14.0, 16.0]);
    /// x.zero_grad();
    /// assert!(x.grad().is_none());
    /// // detach(): the same data cut from the graph; no_grad(): record nothing.
    /// assert!(!x.detach().requires_grad());
    /// let _guard = no_grad();
    /// assert!(!x.mul_scalar(2.0)?.requires_grad());
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn backward(&self) -> Result<()> {
        self.backward_with_options(None, BackwardOptions::default())
    }

    /// Backward with an explicit upstream gradient of this tensor's shape.
    pub fn backward_with(&self, grad: &Tensor) -> Result<()> {
        self.backward_with_options(Some(grad), BackwardOptions::default())
    }

    /// `tensor.backward(gradient, retain_graph=..)`: `gradient` is required
    /// for a tensor of more than one element (as in PyTorch).
    pub fn backward_with_options(
        &self,
        gradient: Option<&Tensor>,
        options: BackwardOptions,
    ) -> Result<()> {
        let seed = match gradient {
            Some(grad) => {
                if grad.shape() != self.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "backward_with",
                        lhs: self.shape().to_vec(),
                        rhs: grad.shape().to_vec(),
                    });
                }
                grad.storage()
            }
            None => {
                if self.numel() != 1 {
                    return Err(Error::invalid(
                        "backward",
                        format!(
                            "grad can be implicitly created only for one-element outputs, got shape {:?}; use backward_with",
                            self.shape()
                        ),
                    ));
                }
                match self.unit_seed()? {
                    Some(unit) => unit,
                    None => {
                        let dtype = if self.dtype().is_float() {
                            self.dtype()
                        } else {
                            DType::F32
                        };
                        Storage::full(&self.shape(), 1.0, dtype, &self.device())?
                    }
                }
            }
        };
        self.run_backward(seed, options.retain_graph)
    }

    /// A 1.0 of this tensor's shape and dtype that its forward pass already
    /// wrote (the GPU's one-pass `F.cross_entropy`), to seed `backward()`
    /// without a fill dispatch.
    fn unit_seed(&self) -> Result<Option<Storage>> {
        let Some(grad_fn) = self.grad_fn() else {
            return Ok(None);
        };
        let node = grad_fn.lock();
        let node = node.as_ref().ok_or_else(|| grad_fn.freed())?;
        Ok(match &node.op {
            Op::CrossEntropy {
                unit_seed: Some(unit),
                ..
            } => Some(unit.clone()),
            _ => None,
        })
    }

    /// The walk: gradients flow from `self` to the leaves in reverse
    /// topological order. Leaves' `.grad` change only once every rule has
    /// run, so a failing backward (a freed graph, data modified since the
    /// forward pass) leaves every `.grad` as it was.
    fn run_backward(&self, seed: Storage, retain_graph: bool) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::invalid(
                "backward",
                "tensor does not require grad and has no grad_fn",
            ));
        }
        let order = topological_order(std::slice::from_ref(self))?;
        let mut grads: HashMap<u64, Storage> = HashMap::new();
        grads.insert(self.id(), seed);
        let mut leaf_grads = Vec::new();
        let observed = |t: &Tensor| t.retains_grad();
        walk(&order, grads, &observed, |tensor, grad| {
            if tensor.grad_fn().is_some() {
                // `retain_grad()` results keep a copy, like leaves.
                if tensor.retains_grad() {
                    leaf_grads.push((tensor.clone(), grad.clone()));
                }
                return Some(grad);
            }
            leaf_grads.push((tensor.clone(), grad));
            None
        })?;
        for (leaf, grad) in leaf_grads {
            leaf.accumulate_grad(grad)?;
        }
        if !retain_graph {
            for grad_fn in order.iter().filter_map(Tensor::grad_fn) {
                drop(grad_fn.take());
            }
        }
        Ok(())
    }
}

/// The walk `backward` and [`grad`](crate::grad()) share: the gradients
/// in `grads` (by tensor id) flow through `order` (a
/// [`topological_order`](crate::graph::topological_order)) from outputs
/// to inputs. `arrive` gets each tensor's summed gradient once and hands it
/// back to go on through the tensor's node, or keeps it (a leaf's
/// gradient, or a branch not needed). `observed` says which tensors'
/// summed gradients the caller looks at besides hooks (retained, or
/// asked for): those always arrive as the rules define them, never with
/// a ReLU's mask applied ahead (backward/relu_premask.rs).
pub(crate) fn walk(
    order: &[Tensor],
    mut grads: HashMap<u64, Storage>,
    observed: &dyn Fn(&Tensor) -> bool,
    mut arrive: impl FnMut(&Tensor, Storage) -> Option<Storage>,
) -> Result<()> {
    // Gradients of `narrow` outputs, per input, assembled at the input's
    // turn (backward/windows.rs).
    let mut windows: HashMap<u64, Vec<Window>> = HashMap::new();
    // Per tensor id: whether every gradient part so far came through its
    // ReLU's mask already (backward/relu_premask.rs).
    let mut premasked: HashMap<u64, bool> = HashMap::new();
    for tensor in order.iter().rev() {
        let dense = grads.remove(&tensor.id());
        let parts = windows.remove(&tensor.id());
        let all_masked = premasked.remove(&tensor.id()) == Some(true);
        let grad_premasked = parts.is_none() && all_masked;
        let grad = match (dense, parts) {
            (None, None) => continue,
            (Some(dense), None) => dense,
            (dense, Some(parts)) => {
                let grad = windows::assemble(&tensor.shape(), dense, parts)?;
                // In the input's own float dtype, as every other gradient.
                if grad.dtype() != tensor.dtype() && grad.dtype().is_float() {
                    grad.cast(tensor.dtype())?
                } else {
                    grad
                }
            }
        };
        // `register_hook` functions see (and may replace) the summed gradient.
        let grad = tensor.apply_hooks(grad)?;
        let Some(grad) = arrive(tensor, grad) else {
            continue;
        };
        let Some(grad_fn) = tensor.grad_fn() else {
            continue;
        };
        let (inputs, input_grads, dx_masked) = {
            let node = grad_fn.lock();
            let node = node.as_ref().ok_or_else(|| grad_fn.freed())?;
            if let Op::Narrow { axis, start } = node.op {
                let input = &node.inputs[0];
                if input.requires_grad() {
                    let axis = shape::normalize_axis("narrow", axis, input.shape().len())?;
                    windows
                        .entry(input.id())
                        .or_default()
                        .push(Window { axis, start, grad });
                }
                continue;
            }
            let dx_relu_mask = match node.op {
                Op::Linear { .. } => node
                    .inputs
                    .first()
                    .and_then(|x| relu_premask::mask_for(x, observed)),
                _ => None,
            };
            let saved = Saved {
                node,
                output: tensor,
                grad_premasked,
                dx_relu_mask,
                dx_masked: Cell::new(false),
            };
            let input_grads = input_gradients(&saved, &grad)?;
            (node.inputs.clone(), input_grads, saved.dx_masked.get())
        };
        for (i, (input, g)) in inputs.iter().zip(input_grads).enumerate() {
            let Some(g) = g else { continue };
            if !input.requires_grad() {
                continue;
            }
            // A float input gets its gradient in its own dtype (PyTorch's
            // engine does the same), e.g. the F16 side of `x_f16 + y_f32`.
            let g = if g.dtype() != input.dtype() && g.dtype().is_float() {
                g.cast(input.dtype())?
            } else {
                g
            };
            let masked = i == 0 && dx_masked;
            let merged = match grads.remove(&input.id()) {
                Some(existing) => {
                    let all = premasked.get(&input.id()) == Some(&true) && masked;
                    premasked.insert(input.id(), all);
                    existing.binary(&g, BinaryOp::Add)?
                }
                None => {
                    premasked.insert(input.id(), masked);
                    g
                }
            };
            grads.insert(input.id(), merged);
        }
    }
    Ok(())
}

/// The gradient of each input of `op` given the output's gradient `g`.
fn input_gradients(saved: &Saved, g: &Storage) -> Result<Vec<Option<Storage>>> {
    let x = |i: usize| saved.input(i);
    let shape_of = |i: usize| saved.shape(i);
    let inputs = &saved.node.inputs;
    Ok(match &saved.node.op {
        Op::Binary(bop) => {
            let need = [inputs[0].requires_grad(), inputs[1].requires_grad()];
            let [ga, gb] = binary_grads(*bop, g, saved, need)?;
            vec![
                ga.map(|ga| ga.sum_to_shape(&shape_of(0))).transpose()?,
                gb.map(|gb| gb.sum_to_shape(&shape_of(1))).transpose()?,
            ]
        }
        Op::BinaryScalar {
            op,
            scalar,
            scalar_on_left,
        } => {
            vec![Some(scalar_grad(*op, *scalar, *scalar_on_left, g, saved)?)]
        }
        Op::Unary(uop) => vec![Some(g.unary_backward(&x(0)?, *uop)?)],
        Op::Where { mask } => {
            let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
            let side = |i: usize, picked: bool| -> Result<Option<Storage>> {
                if !inputs[i].requires_grad() {
                    return Ok(None);
                }
                let gi = if picked {
                    Storage::where_cond(mask, g, &zero)?
                } else {
                    Storage::where_cond(mask, &zero, g)?
                };
                gi.sum_to_shape(&shape_of(i)).map(Some)
            };
            vec![side(0, true)?, side(1, false)?]
        }
        Op::Cast { from } => vec![Some(g.cast(*from)?)],
        Op::Reshape | Op::Contiguous => vec![Some(g.reshape(&as_isize(&shape_of(0)))?)],
        Op::Transpose(a, b) => vec![Some(g.transpose(*a, *b)?)],
        Op::Permute(dims) => {
            let rank = dims.len();
            let mut inverse = vec![0isize; rank];
            for (i, &d) in dims.iter().enumerate() {
                inverse[shape::normalize_axis("permute", d, rank)?] = i as isize;
            }
            vec![Some(g.permute(&inverse)?)]
        }
        Op::Narrow { axis, start } => vec![Some(structure::narrow_backward(
            g,
            &shape_of(0),
            *axis,
            *start,
        )?)],
        Op::Expand => vec![Some(g.sum_to_shape(&shape_of(0))?)],
        Op::Unsqueeze(axis) => vec![Some(g.squeeze(*axis)?)],
        Op::Squeeze(axis) => {
            let in_shape = shape_of(0);
            if g.shape().len() == in_shape.len() {
                // The dim was not 1 (or the input was 0-d): squeeze was a no-op.
                vec![Some(g.clone())]
            } else {
                let ax = shape::normalize_axis("squeeze", *axis, in_shape.len())?;
                vec![Some(g.unsqueeze(ax as isize)?)]
            }
        }
        Op::Concat { axis } => {
            let ax = shape::normalize_axis("concat", *axis, g.shape().len())?;
            let mut start = 0;
            let mut out = Vec::with_capacity(inputs.len());
            for t in inputs {
                if t.shape() == [0] && g.shape().len() != 1 {
                    // A legacy empty `[0]` input that `cat` skipped.
                    out.push(Some(Storage::full(&[0], 0.0, t.dtype(), &g.device())?));
                    continue;
                }
                let len = t.shape()[ax];
                out.push(Some(g.narrow(ax as isize, start, len)?));
                start += len;
            }
            out
        }
        Op::Sum { axes, keepdim } => vec![Some(expand_reduced(g, &shape_of(0), axes, *keepdim)?)],
        Op::Mean { axes, keepdim } => {
            let in_shape = shape_of(0);
            let n = reduced_count(&in_shape, axes)?;
            let scaled = g.binary_scalar(BinaryOp::Div, n as f32, false)?;
            vec![Some(expand_reduced(&scaled, &in_shape, axes, *keepdim)?)]
        }
        Op::Extreme { axes, keepdim } => {
            let in_shape = shape_of(0);
            let xs = x(0)?;
            let out = expand_reduced(&saved.output()?, &in_shape, axes, *keepdim)?;
            let mask = xs.compare(&out, CompareOp::Eq)?.cast(DType::F32)?;
            let count = mask.sum(axes, true)?;
            let share =
                expand_reduced(g, &in_shape, axes, *keepdim)?.binary(&mask, BinaryOp::Mul)?;
            vec![Some(share.binary(&count, BinaryOp::Div)?)]
        }
        Op::Var {
            axes,
            correction,
            keepdim,
        } => vec![Some(crate::ops::math_grad::var_backward(
            g,
            &x(0)?,
            &shape_of(0),
            axes,
            *correction,
            *keepdim,
        )?)],
        Op::Softmax { axis, log } => {
            vec![Some(g.softmax_backward(&saved.output()?, *axis, *log)?)]
        }
        Op::MatmulT { trans_a, trans_b } => {
            let need = [inputs[0].requires_grad(), inputs[1].requires_grad()];
            matmul::matmul_t_grads(g, saved, need, *trans_a, *trans_b)?
        }
        Op::Linear { relu } => {
            let out = if *relu && !saved.grad_premasked {
                Some(saved.output()?)
            } else {
                None
            };
            let mask = saved.dx_relu_mask.as_ref();
            let (grads, dx_masked) = linear::linear_grads(g, out.as_ref(), mask, &x, inputs)?;
            saved.dx_masked.set(dx_masked);
            grads
        }
        Op::IndexSelect { axis, index } => {
            let base = Storage::full(&shape_of(0), 0.0, DType::F32, &g.device())?;
            vec![Some(base.index_add(*axis, index, g)?)]
        }
        Op::Gather { axis, index } => {
            let base = Storage::full(&shape_of(0), 0.0, DType::F32, &g.device())?;
            vec![Some(base.scatter_add(*axis, index, g)?)]
        }
        Op::Slice { axis, start, step } => {
            vec![Some(structure::slice_backward(
                g,
                &shape_of(0),
                *axis,
                *start,
                *step,
            )?)]
        }
        Op::IndexAdd { axis, index } => scatter::index_add_grads(g, *axis, index)?,
        Op::ScatterAdd { axis, index } => {
            scatter::scatter_add_grads(g, *axis, index, &shape_of(1))?
        }
        Op::ToDevice => vec![Some(g.to_device(&inputs[0].device())?)],
        Op::Attention(a) => attention::attention_grads(
            g,
            a,
            [x(0)?, x(1)?, x(2)?],
            saved.output()?,
            [shape_of(0), shape_of(1), shape_of(2)],
        )?,
        Op::LayerNorm(ln) => {
            let needs: Vec<bool> = inputs.iter().map(|t| t.requires_grad()).collect();
            let weight = if ln.has_weight { Some(x(1)?) } else { None };
            layer_norm::layer_norm_grads(g, ln, x(0)?, weight, &needs)?
        }
        Op::Conv2d { geometry, relu } => {
            let g = relu_masked(g, *relu, saved)?;
            let needs: Vec<bool> = inputs.iter().map(Tensor::requires_grad).collect();
            conv::conv2d_grads(&g, || x(0), || x(1), &needs, geometry)?
        }
        Op::MaxPool2d { indices, args } => {
            vec![Some(g.max_pool2d_backward(indices, &shape_of(0), args)?)]
        }
        Op::AvgPool2d {
            args,
            count_include_pad,
            divisor_override,
        } => vec![Some(g.avg_pool2d_backward(
            &shape_of(0),
            args,
            *count_include_pad,
            *divisor_override,
        )?)],
        Op::AdaptiveAvgPool2d => vec![Some(g.adaptive_avg_pool2d_backward(&shape_of(0))?)],
        Op::ConvTranspose2d { geometry } => {
            let needs = [inputs[0].requires_grad(), inputs[1].requires_grad()];
            conv::conv_transpose2d_grads(g, || x(0), || x(1), needs, geometry)?
        }
        Op::Math(m) => crate::ops::math_grad::grads(
            m,
            g,
            &crate::ops::math_grad::Inputs {
                input: &x,
                output: &|| saved.output(),
                shape: &shape_of,
            },
        )?,
        Op::CrossEntropy {
            unit_seed: Some(unit),
            seeded_grad: Some(grad),
            ..
        } if is_view_of(g, unit) => {
            // The forward pass made this gradient for this very seed; the
            // logits must still be as it read them.
            x(0)?;
            vec![Some(grad.clone())]
        }
        Op::CrossEntropy {
            target,
            label_smoothing,
            ignore_index,
            mean_count,
            ..
        } => vec![Some(match mean_count {
            Some(count) => x(0)?.cross_entropy_mean_backward(
                target,
                g,
                count,
                *label_smoothing,
                *ignore_index,
            )?,
            None => x(0)?.cross_entropy_backward(target, g, *label_smoothing, *ignore_index)?,
        })],
        Op::CrossEntropyMean { count } => {
            let share = g.binary(count, BinaryOp::Div)?.reshape(&[1])?;
            vec![Some(share.expand(&shape_of(0))?)]
        }
        Op::Cumsum { axis } => vec![Some(g.cumsum(*axis, true)?)],
        Op::Cumprod { axis } => vec![Some(g.cumprod_backward(&x(0)?, *axis)?)],
    })
}

/// `g` through the ReLU a product ran in its own pass (`relu`): ReLU's
/// rule with the node's output in place of its input (`out > 0` exactly
/// where `in > 0`, and NaN where NaN), else `g` itself.
fn relu_masked(g: &Storage, relu: bool, saved: &Saved) -> Result<Storage> {
    if relu {
        g.unary_backward(&saved.output()?, UnaryOp::Relu)
    } else {
        Ok(g.clone())
    }
}

fn as_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

fn reduced_count(in_shape: &[usize], axes: &[isize]) -> Result<usize> {
    let axes = shape::normalize_axes("reduce", axes, in_shape.len())?;
    Ok(axes.iter().map(|&a| in_shape[a]).product())
}

/// Broadcasts a reduction's gradient (or output) back over the reduced axes.
fn expand_reduced(
    g: &Storage,
    in_shape: &[usize],
    axes: &[isize],
    keepdim: bool,
) -> Result<Storage> {
    let axes = shape::normalize_axes("reduce", axes, in_shape.len())?;
    let kept = if keepdim {
        g.clone()
    } else {
        let keep_shape = shape::reduced_shape(in_shape, &axes, true);
        g.reshape(&as_isize(&keep_shape))?
    };
    kept.expand(in_shape)
}

/// Whether `a` is the very view `b` is (one GPU buffer, one layout): the
/// seed a forward pass wrote, handed back to its backward unchanged.
fn is_view_of(a: &Storage, b: &Storage) -> bool {
    match (a, b) {
        (Storage::Gpu(a), Storage::Gpu(b)) => {
            a.buffer().id() == b.buffer().id() && a.layout() == b.layout()
        }
        _ => false,
    }
}
