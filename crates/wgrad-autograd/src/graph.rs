//! The recorded graph: which op made a tensor, from which inputs.

use wgrad_core::{BinaryOp, UnaryOp};

use crate::storage::Storage;
use crate::tensor::Tensor;

/// How a non-leaf tensor was made; its backward rule lives in `backward.rs`.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Binary(BinaryOp),
    /// `x (op) scalar`, or `scalar (op) x` when `scalar_on_left`.
    BinaryScalar {
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    },
    Unary(UnaryOp),
    /// `where(mask, a, b)`; the mask is not differentiable.
    Where {
        mask: Storage,
    },
    Reshape,
    Transpose(isize, isize),
    Permute(Vec<isize>),
    Narrow {
        axis: isize,
        start: usize,
    },
    Expand,
    Unsqueeze(isize),
    Squeeze(isize),
    Contiguous,
    Concat {
        axis: isize,
    },
    Sum {
        axes: Vec<isize>,
        keepdim: bool,
    },
    Mean {
        axes: Vec<isize>,
        keepdim: bool,
    },
    /// max or min (the output says which elements were extreme).
    Extreme {
        axes: Vec<isize>,
        keepdim: bool,
    },
    Var {
        axes: Vec<isize>,
        correction: usize,
        keepdim: bool,
    },
    Softmax {
        axis: isize,
        log: bool,
    },
    MatmulT {
        trans_a: bool,
        trans_b: bool,
    },
    IndexSelect {
        axis: isize,
        index: Storage,
    },
    Gather {
        axis: isize,
        index: Storage,
    },
    ToDevice,
    /// Fused log-softmax + NLL per sample (reduction 'none').
    CrossEntropy {
        target: Storage,
        label_smoothing: f32,
        ignore_index: i32,
    },
}

/// A node of the graph: the op and the tensors it read.
pub(crate) struct Node {
    pub op: Op,
    pub inputs: Vec<Tensor>,
}
