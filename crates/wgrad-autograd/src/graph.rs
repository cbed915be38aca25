//! The recorded graph: which op made a tensor, from which inputs.

use std::collections::HashSet;

use parking_lot::{Mutex, MutexGuard};
use wgrad_core::checks::conv::Conv2dGeometry;
use wgrad_core::checks::pool::Pool2dArgs;
use wgrad_core::{BinaryOp, Error, Result, UnaryOp};

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
    /// A conversion between float dtypes (`x.to(torch.float16)`); the
    /// gradient converts back to `from`.
    Cast {
        from: wgrad_core::DType,
    },
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
    /// `F.linear` of inputs `[x, weight, bias?]` (the bias added in the
    /// product's pass), and with `relu` the ReLU after it in the same pass
    /// (a `Linear` followed by `ReLU`); backward then first masks `g` by the
    /// output, as ReLU's own rule would.
    Linear {
        relu: bool,
    },
    IndexSelect {
        axis: isize,
        index: Storage,
    },
    Gather {
        axis: isize,
        index: Storage,
    },
    /// A strided view `x[start::step]` along `axis` (`Tensor::slice`, step > 1).
    Slice {
        axis: isize,
        start: usize,
        step: usize,
    },
    /// `base.index_add(axis, index, source)` of inputs `[base, source]`.
    IndexAdd {
        axis: isize,
        index: Storage,
    },
    /// `base.scatter_add(axis, index, src)` of inputs `[base, src]`.
    ScatterAdd {
        axis: isize,
        index: Storage,
    },
    ToDevice,
    /// Fused scaled-dot-product attention of inputs `[q, k, v]`.
    Attention(Box<crate::ops::attention::AttentionSaved>),
    /// Fused layer_norm of inputs `[x, weight?, bias?]`.
    LayerNorm(Box<crate::ops::layer_norm::LayerNormSaved>),
    /// 2-D convolution of inputs `[x, weight]` or `[x, weight, bias]` (a
    /// bias of the input's dtype is fused; any other is a separate add).
    Conv2d {
        geometry: Conv2dGeometry,
        /// The ReLU of a following `ReLU` in the same pass (see `Linear`).
        relu: bool,
    },
    /// Transposed 2-D convolution of `[x, weight]`: the input gradient of
    /// the convolution `geometry` describes.
    ConvTranspose2d {
        geometry: Conv2dGeometry,
    },
    /// 2-D max pooling; `indices` (I32, the output's shape) route the gradient.
    MaxPool2d {
        indices: Storage,
        args: Pool2dArgs,
    },
    /// 2-D average pooling.
    AvgPool2d {
        args: Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    },
    /// Adaptive 2-D average pooling (the sizes say everything).
    AdaptiveAvgPool2d,
    /// A math op whose rule is in `ops/math_grad.rs` (tensor-bound clamp,
    /// logsumexp, prod, std, norm).
    Math(crate::ops::math::MathOp),
    /// Fused log-softmax + NLL per sample (reduction 'none').
    CrossEntropy {
        target: Storage,
        label_smoothing: f32,
        ignore_index: i32,
        /// With the 'mean' reduction fused in (the output is the 0-d mean):
        /// the count of samples not ignored it divided by.
        mean_count: Option<Storage>,
        /// A 0-d 1.0 the forward pass wrote next to the mean (the GPU's
        /// one-pass loss): `backward()`'s implicit seed, so that it records
        /// no fill of its own.
        unit_seed: Option<Storage>,
        /// The logits' gradient for exactly that seed, written by the same
        /// pass (a training step's loss and its gradient in one dispatch):
        /// backward hands it on when its upstream gradient is `unit_seed`
        /// itself.
        seeded_grad: Option<Storage>,
    },
    /// The 'mean' reduction of per-sample losses over the samples not
    /// ignored; backward spreads `g / count` over them (ignored samples'
    /// losses are constants, so their share reaches nothing).
    CrossEntropyMean {
        count: Storage,
    },
    /// Inclusive prefix sum along `axis`; backward is the reverse cumsum.
    Cumsum {
        axis: isize,
    },
    /// Inclusive prefix product along `axis` (backward: `cumprod_backward`).
    Cumprod {
        axis: isize,
    },
}

impl Op {
    /// The op's name, as errors about its node say it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Binary(op) | Op::BinaryScalar { op, .. } => op.name(),
            Op::Unary(op) => op.name(),
            Op::Where { .. } => "where",
            Op::Reshape => "reshape",
            Op::Transpose(..) => "transpose",
            Op::Permute(_) => "permute",
            Op::Narrow { .. } => "narrow",
            Op::Expand => "expand",
            Op::Unsqueeze(_) => "unsqueeze",
            Op::Squeeze(_) => "squeeze",
            Op::Contiguous => "contiguous",
            Op::Cast { .. } => "to_copy",
            Op::Concat { .. } => "cat",
            Op::Sum { .. } => "sum",
            Op::Mean { .. } => "mean",
            Op::Extreme { .. } => "max/min",
            Op::Var { .. } => "var",
            Op::Softmax { log: false, .. } => "softmax",
            Op::Softmax { log: true, .. } => "log_softmax",
            Op::MatmulT { .. } => "matmul",
            Op::Linear { relu: false } => "linear",
            Op::Linear { relu: true } => "linear_relu",
            Op::IndexSelect { .. } => "index_select",
            Op::Gather { .. } => "gather",
            Op::Slice { .. } => "slice",
            Op::IndexAdd { .. } => "index_add",
            Op::ScatterAdd { .. } => "scatter_add",
            Op::ToDevice => "to",
            Op::Attention(_) => "scaled_dot_product_attention",
            Op::LayerNorm(_) => "layer_norm",
            Op::Conv2d { relu: false, .. } => "conv2d",
            Op::Conv2d { relu: true, .. } => "conv2d_relu",
            Op::ConvTranspose2d { .. } => "conv_transpose2d",
            Op::MaxPool2d { .. } => "max_pool2d",
            Op::AvgPool2d { .. } => "avg_pool2d",
            Op::AdaptiveAvgPool2d => "adaptive_avg_pool2d",
            Op::CrossEntropy { .. } => "cross_entropy",
            Op::CrossEntropyMean { .. } => "cross_entropy_mean",
            Op::Math(m) => m.name(),
            Op::Cumsum { .. } => "cumsum",
            Op::Cumprod { .. } => "cumprod",
        }
    }
}

/// What a node keeps for its backward rule: the op (with the non-tensor
/// values it saved), the tensors it read, and the version of each input and
/// of the output when the node was recorded (see [`Tensor::version`]), so
/// that backward can refuse data that changed since.
pub(crate) struct Node {
    pub op: Op,
    pub inputs: Vec<Tensor>,
    pub input_versions: Vec<u64>,
    pub output_version: u64,
}

/// A non-leaf tensor's place in the graph (PyTorch's `grad_fn`). Backward
/// without `retain_graph` takes the [`Node`] out, freeing what it saved as
/// soon as the walk is done with it; a later backward through this tensor
/// is then an error instead of a silently doubled gradient.
pub(crate) struct GradFn {
    name: &'static str,
    node: Mutex<Option<Node>>,
}

impl GradFn {
    pub fn new(node: Node) -> Self {
        GradFn {
            name: node.op.name(),
            node: Mutex::new(Some(node)),
        }
    }

    /// The name of the op that made the tensor.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The node, or `None` once a backward without `retain_graph` freed it.
    pub fn lock(&self) -> MutexGuard<'_, Option<Node>> {
        self.node.lock()
    }

    /// Takes the node out (the graph below this tensor is freed with it).
    pub fn take(&self) -> Option<Node> {
        self.lock().take()
    }

    /// The inputs of the node, or the "graph was freed" error.
    pub fn inputs(&self) -> Result<Vec<Tensor>> {
        match self.lock().as_ref() {
            Some(node) => Ok(node.inputs.clone()),
            None => Err(self.freed()),
        }
    }

    /// PyTorch's error for a second backward through a freed graph.
    pub fn freed(&self) -> Error {
        Error::invalid(
            "backward",
            format!(
                "trying to backward through the graph a second time (the saved tensors of `{}` were \
                 freed by the first backward); call backward_with_options with \
                 BackwardOptions {{ retain_graph: true, .. }} the first time if you need to \
                 backward through the graph again",
                self.name
            ),
        )
    }
}

/// Tensors reachable from `roots` through grad-requiring nodes, inputs
/// before outputs. Iterative (no recursion), so deep graphs are fine.
/// Fails if a node on the way was freed by an earlier backward.
pub(crate) fn topological_order(roots: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut order = Vec::new();
    let mut visited = HashSet::new();
    let mut stack: Vec<(Tensor, bool)> = roots.iter().rev().map(|t| (t.clone(), false)).collect();
    while let Some((tensor, children_done)) = stack.pop() {
        if children_done {
            order.push(tensor);
            continue;
        }
        if !visited.insert(tensor.id()) {
            continue;
        }
        stack.push((tensor.clone(), true));
        if let Some(grad_fn) = tensor.grad_fn() {
            for input in grad_fn.inputs()? {
                if input.requires_grad() && !visited.contains(&input.id()) {
                    stack.push((input, false));
                }
            }
        }
    }
    Ok(order)
}
