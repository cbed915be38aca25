//! `kernels/pool/` kernel specs: 2-D pooling over `[N, C, H, W]` and its
//! gradients (PyTorch's `max_pool2d`, `avg_pool2d`, `adaptive_avg_pool2d`).
//!
//! All take one immediate block (`Pool2dParams`, 104 bytes): sizes,
//! window hyper-parameters, the avg divisor mode, and offset + strides of
//! the strided operands; outputs are contiguous. Forward kernels run one
//! thread per output element; backward kernels one thread per input
//! element, gathering the outputs whose window covers it (deterministic,
//! no atomics).

use crate::spec::{Access::*, Elem, KernelSpec};

/// Bytes of `Pool2dParams`.
const POOL_IMMEDIATES: u32 = 104;

/// Window maxima and their flat in-plane indices. Bindings: input
/// (strided), values, indices (I32).
pub static MAX_POOL2D: KernelSpec = KernelSpec {
    file: "pool/max_pool2d.wgsl",
    entry: "max_pool2d",
    bindings: &[Read, ReadWrite, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Gradient of [`MAX_POOL2D`]: each input element sums the output
/// gradients whose index points at it. Bindings: grad_out (strided),
/// indices (I32, strided), grad_input.
pub static MAX_POOL2D_BACKWARD: KernelSpec = KernelSpec {
    file: "pool/max_pool2d_backward.wgsl",
    entry: "max_pool2d_backward",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`MAX_POOL2D_BACKWARD`] for a plain 2 x 2, stride-2 pooling that tiles
/// its input exactly: one thread per output writes its disjoint window.
/// Same bindings; `numel` counts the outputs.
pub static MAX_POOL2D_BACKWARD_2X2: KernelSpec = KernelSpec {
    file: "pool/max_pool2d_backward.wgsl",
    entry: "max_pool2d_backward_2x2",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Window averages (PyTorch's divisor rules). Bindings: input (strided), out.
pub static AVG_POOL2D: KernelSpec = KernelSpec {
    file: "pool/avg_pool2d.wgsl",
    entry: "avg_pool2d",
    bindings: &[Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Gradient of [`AVG_POOL2D`]. Bindings: grad_out (strided), grad_input.
pub static AVG_POOL2D_BACKWARD: KernelSpec = KernelSpec {
    file: "pool/avg_pool2d_backward.wgsl",
    entry: "avg_pool2d_backward",
    bindings: &[Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Adaptive window averages. Bindings: input (strided), out.
pub static ADAPTIVE_AVG_POOL2D: KernelSpec = KernelSpec {
    file: "pool/adaptive_avg_pool2d.wgsl",
    entry: "adaptive_avg_pool2d",
    bindings: &[Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Gradient of [`ADAPTIVE_AVG_POOL2D`]. Bindings: grad_out (strided),
/// grad_input.
pub static ADAPTIVE_AVG_POOL2D_BACKWARD: KernelSpec = KernelSpec {
    file: "pool/adaptive_avg_pool2d_backward.wgsl",
    entry: "adaptive_avg_pool2d_backward",
    bindings: &[Read, ReadWrite],
    immediate_bytes: POOL_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &MAX_POOL2D,
    &MAX_POOL2D_BACKWARD,
    &MAX_POOL2D_BACKWARD_2X2,
    &AVG_POOL2D,
    &AVG_POOL2D_BACKWARD,
    &ADAPTIVE_AVG_POOL2D,
    &ADAPTIVE_AVG_POOL2D_BACKWARD,
];
