//! Reverse-mode differentiation: an iterative topological walk and one
//! `match` with every op's backward rule, run on the tensor's own device.

use std::collections::{HashMap, HashSet};

use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, UnaryOp, shape};

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

impl Tensor {
    /// Computes gradients of this one-element tensor with respect to every
    /// leaf that requires grad, accumulating into their `.grad`.
    pub fn backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "backward",
                format!(
                    "grad can be implicitly created only for one-element outputs, got shape {:?}; use backward_with",
                    self.shape()
                ),
            ));
        }
        let seed = Storage::full(&self.shape(), 1.0, DType::F32, &self.device())?;
        self.backward_with_storage(seed)
    }

    /// Backward with an explicit upstream gradient of this tensor's shape.
    pub fn backward_with(&self, grad: &Tensor) -> Result<()> {
        if grad.shape() != self.shape() {
            return Err(Error::ShapeMismatch {
                op: "backward_with",
                lhs: self.shape(),
                rhs: grad.shape(),
            });
        }
        self.backward_with_storage(grad.storage())
    }

    fn backward_with_storage(&self, seed: Storage) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::invalid(
                "backward",
                "tensor does not require grad and has no grad_fn",
            ));
        }
        let order = self.topological_order();
        let mut grads: HashMap<u64, Storage> = HashMap::new();
        grads.insert(self.id(), seed);
        for tensor in order.iter().rev() {
            let Some(grad) = grads.remove(&tensor.id()) else {
                continue;
            };
            let Some(node) = tensor.node() else {
                tensor.accumulate_grad(grad)?;
                continue;
            };
            let input_grads = input_gradients(&node.op, &grad, tensor, &node.inputs)?;
            for (input, g) in node.inputs.iter().zip(input_grads) {
                let Some(g) = g else { continue };
                if !input.requires_grad() {
                    continue;
                }
                let merged = match grads.remove(&input.id()) {
                    Some(existing) => existing.binary(&g, BinaryOp::Add)?,
                    None => g,
                };
                grads.insert(input.id(), merged);
            }
        }
        Ok(())
    }

    /// Tensors reachable from `self` through grad-requiring nodes, inputs
    /// before outputs. Iterative (no recursion), so deep graphs are fine.
    fn topological_order(&self) -> Vec<Tensor> {
        let mut order = Vec::new();
        let mut visited = HashSet::new();
        let mut stack: Vec<(Tensor, bool)> = vec![(self.clone(), false)];
        while let Some((tensor, children_done)) = stack.pop() {
            if children_done {
                order.push(tensor);
                continue;
            }
            if !visited.insert(tensor.id()) {
                continue;
            }
            stack.push((tensor.clone(), true));
            if let Some(node) = tensor.node() {
                for input in &node.inputs {
                    if input.requires_grad() && !visited.contains(&input.id()) {
                        stack.push((input.clone(), false));
                    }
                }
            }
        }
        order
    }
}

/// The gradient of each input of `op` given the output's gradient `g`.
fn input_gradients(
    op: &Op,
    g: &Storage,
    output: &Tensor,
    inputs: &[Tensor],
) -> Result<Vec<Option<Storage>>> {
    let x = |i: usize| inputs[i].storage();
    let shape_of = |i: usize| inputs[i].shape();
    Ok(match op {
        Op::Binary(bop) => {
            let (a, b) = (x(0), x(1));
            let (ga, gb) = binary_grads(*bop, g, &a, &b, &output.storage())?;
            vec![
                Some(ga.sum_to_shape(&shape_of(0))?),
                Some(gb.sum_to_shape(&shape_of(1))?),
            ]
        }
        Op::BinaryScalar {
            op,
            scalar,
            scalar_on_left,
        } => {
            vec![Some(scalar_grad(
                *op,
                *scalar,
                *scalar_on_left,
                g,
                &x(0),
                &output.storage(),
            )?)]
        }
        Op::Unary(uop) => vec![Some(g.unary_backward(&x(0), *uop)?)],
        Op::Where { mask } => {
            let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
            let ga = Storage::where_cond(mask, g, &zero)?;
            let gb = Storage::where_cond(mask, &zero, g)?;
            vec![
                Some(ga.sum_to_shape(&shape_of(0))?),
                Some(gb.sum_to_shape(&shape_of(1))?),
            ]
        }
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
        Op::Narrow { axis, start } => {
            let in_shape = shape_of(0);
            let ax = shape::normalize_axis("narrow", *axis, in_shape.len())?;
            let len = g.shape()[ax];
            let mut parts = Vec::new();
            let pad = |n: usize| -> Result<Storage> {
                let mut s = in_shape.clone();
                s[ax] = n;
                Storage::full(&s, 0.0, DType::F32, &g.device())
            };
            if *start > 0 {
                parts.push(pad(*start)?);
            }
            parts.push(g.clone());
            let after = in_shape[ax] - start - len;
            if after > 0 {
                parts.push(pad(after)?);
            }
            let refs: Vec<&Storage> = parts.iter().collect();
            vec![Some(Storage::concat(&refs, ax as isize)?)]
        }
        Op::Expand => vec![Some(g.sum_to_shape(&shape_of(0))?)],
        Op::Unsqueeze(axis) => vec![Some(g.squeeze(*axis)?)],
        Op::Squeeze(axis) => {
            let rank = shape_of(0).len();
            let ax = shape::normalize_axis("squeeze", *axis, rank)?;
            vec![Some(g.unsqueeze(ax as isize)?)]
        }
        Op::Concat { axis } => {
            let ax = shape::normalize_axis("concat", *axis, g.shape().len())?;
            let mut start = 0;
            let mut out = Vec::with_capacity(inputs.len());
            for t in inputs {
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
            let xs = x(0);
            let out = expand_reduced(&output.storage(), &in_shape, axes, *keepdim)?;
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
        } => {
            let in_shape = shape_of(0);
            let xs = x(0);
            let n = reduced_count(&in_shape, axes)?;
            let denom = (n as f32 - *correction as f32).max(0.0);
            let mean = xs.mean(axes, true)?;
            let centered = xs.binary(&mean, BinaryOp::Sub)?;
            let scale = expand_reduced(g, &in_shape, axes, *keepdim)?.binary_scalar(
                BinaryOp::Mul,
                2.0 / denom,
                false,
            )?;
            vec![Some(centered.binary(&scale, BinaryOp::Mul)?)]
        }
        Op::Softmax { axis, log } => {
            vec![Some(g.softmax_backward(&output.storage(), *axis, *log)?)]
        }
        Op::MatmulT { trans_a, trans_b } => {
            let (a, b) = (x(0), x(1));
            let (ta, tb) = (*trans_a, *trans_b);
            let ga = if ta {
                b.matmul_t(g, tb, true)?
            } else {
                g.matmul_t(&b, false, !tb)?
            };
            let gb = if tb {
                g.matmul_t(&a, true, ta)?
            } else {
                a.matmul_t(g, !ta, false)?
            };
            vec![
                Some(ga.sum_to_shape(&shape_of(0))?),
                Some(gb.sum_to_shape(&shape_of(1))?),
            ]
        }
        Op::IndexSelect { axis, index } => {
            let base = Storage::full(&shape_of(0), 0.0, DType::F32, &g.device())?;
            vec![Some(base.index_add(*axis, index, g)?)]
        }
        Op::Gather { axis, index } => {
            let base = Storage::full(&shape_of(0), 0.0, DType::F32, &g.device())?;
            vec![Some(base.scatter_add(*axis, index, g)?)]
        }
        Op::ToDevice => vec![Some(g.to_device(&inputs[0].device())?)],
        Op::CrossEntropy {
            target,
            label_smoothing,
            ignore_index,
        } => {
            vec![Some(x(0).cross_entropy_backward(
                target,
                g,
                *label_smoothing,
                *ignore_index,
            )?)]
        }
    })
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

fn binary_grads(
    op: BinaryOp,
    g: &Storage,
    a: &Storage,
    b: &Storage,
    out: &Storage,
) -> Result<(Storage, Storage)> {
    use BinaryOp::*;
    Ok(match op {
        Add => (g.clone(), g.clone()),
        Sub => (g.clone(), g.unary(UnaryOp::Neg)?),
        Mul => (g.binary(b, Mul)?, g.binary(a, Mul)?),
        Div => {
            let ga = g.binary(b, Div)?;
            // d(a/b)/db = -a/b^2 = -out/b
            let gb = ga.binary(out, Mul)?.unary(UnaryOp::Neg)?;
            (ga, gb)
        }
        Pow => {
            // d/da = b * a^(b-1); d/db = out * ln(a). Where those formulas
            // give 0 * inf = NaN, torch defines the limits instead: d/da = 0
            // where b == 0, and d/db = 0 where a == 0 and b >= 0.
            let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
            let ga = g.binary(
                &b.binary(&a.binary(&b.binary_scalar(Sub, 1.0, false)?, Pow)?, Mul)?,
                Mul,
            )?;
            let ga = Storage::where_cond(&b.compare_scalar(CompareOp::Ne, 0.0)?, &ga, &zero)?;
            let gb = g.binary(&out.binary(&a.unary(UnaryOp::Log)?, Mul)?, Mul)?;
            // 1 exactly where a == 0 and b >= 0 (a product of 0/1 masks).
            let limit = a
                .compare_scalar(CompareOp::Eq, 0.0)?
                .cast(DType::F32)?
                .binary(
                    &b.compare_scalar(CompareOp::Ge, 0.0)?.cast(DType::F32)?,
                    Mul,
                )?;
            let gb = Storage::where_cond(&limit.compare_scalar(CompareOp::Eq, 0.0)?, &gb, &zero)?;
            (ga, gb)
        }
        Maximum | Minimum => {
            // The winner takes the gradient; ties split it evenly (as PyTorch does).
            let winner = if op == Maximum {
                CompareOp::Gt
            } else {
                CompareOp::Lt
            };
            let wins_a = a.compare(b, winner)?.cast(DType::F32)?;
            let ties = a
                .compare(b, CompareOp::Eq)?
                .cast(DType::F32)?
                .binary_scalar(Mul, 0.5, false)?;
            let share_a = wins_a.binary(&ties, Add)?;
            let share_b = share_a.binary_scalar(Sub, 1.0, true)?;
            (g.binary(&share_a, Mul)?, g.binary(&share_b, Mul)?)
        }
    })
}

fn scalar_grad(
    op: BinaryOp,
    s: f32,
    scalar_on_left: bool,
    g: &Storage,
    x: &Storage,
    out: &Storage,
) -> Result<Storage> {
    use BinaryOp::*;
    match (op, scalar_on_left) {
        (Add, _) => Ok(g.clone()),
        (Sub, false) => Ok(g.clone()),
        (Sub, true) => g.unary(UnaryOp::Neg),
        (Mul, _) => g.binary_scalar(Mul, s, false),
        (Div, false) => g.binary_scalar(Div, s, false),
        // d(s/x)/dx = -s/x^2 = -out/x
        (Div, true) => g.binary(&out.binary(x, Div)?, Mul)?.unary(UnaryOp::Neg),
        // x^0 is constant: torch's gradient is 0 even where s * x^(s-1)
        // would be 0 * inf = NaN (x = 0).
        (Pow, false) if s == 0.0 => Storage::full(x.shape(), 0.0, DType::F32, &g.device()),
        // d(x^s)/dx = s * x^(s-1)
        (Pow, false) => g.binary(
            &x.binary_scalar(Pow, s - 1.0, false)?
                .binary_scalar(Mul, s, false)?,
            Mul,
        ),
        // d(0^x)/dx: torch defines 0 where x >= 0 (out * ln(0) = 0 * -inf there).
        (Pow, true) if s == 0.0 => {
            let grad = g.binary(&out.binary_scalar(Mul, s.ln(), false)?, Mul)?;
            let zero = Storage::full(&[], 0.0, DType::F32, &g.device())?;
            Storage::where_cond(&x.compare_scalar(CompareOp::Lt, 0.0)?, &grad, &zero)
        }
        // d(s^x)/dx = out * ln(s)
        (Pow, true) => g.binary(&out.binary_scalar(Mul, s.ln(), false)?, Mul),
        (Maximum | Minimum, _) => {
            let winner = if op == Maximum {
                CompareOp::Gt
            } else {
                CompareOp::Lt
            };
            let wins = x.compare_scalar(winner, s)?.cast(DType::F32)?;
            let ties = x
                .compare_scalar(CompareOp::Eq, s)?
                .cast(DType::F32)?
                .binary_scalar(Mul, 0.5, false)?;
            g.binary(&wins.binary(&ties, Add)?, Mul)
        }
    }
}
