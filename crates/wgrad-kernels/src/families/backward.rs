//! `kernels/backward/`: fused gradient kernels for reverse-mode autograd.

use crate::spec::{Access::*, Elem, KernelSpec, Selector};

/// `grad * op'(x)` over strided views; override `OP` = `UnaryOp::code()`.
/// Immediates: numel, rank, g_offset, x_offset, shape\[6\], g_strides\[6\],
/// x_strides\[6\], then `UnaryOp::params()` as two f32.
pub static UNARY_BACKWARD: KernelSpec = KernelSpec {
    file: "backward/unary_backward.wgsl",
    entry: "unary_backward",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 96,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// Softmax / log_softmax backward, rows along any axis; overrides `LOG`
/// (0/1) and `TPR` (threads per row, a power of two up to 256).
/// Immediates: rows, len, rank, axis, g_offset, y_offset, shape\[6\],
/// g_strides\[6\], y_strides\[6\].
pub static SOFTMAX_BACKWARD: KernelSpec = KernelSpec {
    file: "backward/softmax_backward.wgsl",
    entry: "softmax_backward",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 96,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Atomic f32 scatter-add (index_add and scatter_add); override
/// `FAULT_CODE` is the fault raised for an index out of range.
/// Immediates: numel, rank, src/idx/out offsets, shape\[6\], src/idx/out
/// strides\[6\], axis, size.
pub static SCATTER_ADD: KernelSpec = KernelSpec {
    file: "backward/scatter_add.wgsl",
    entry: "scatter_add",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 124,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// [`UNARY_BACKWARD`] over dense operands (rank 1, stride 1, offsets and
/// length multiples of 4): 16-byte accesses, `elementwise::VEC4_PER_THREAD`
/// vectors a thread. Same bindings, immediates and override.
pub static UNARY_BACKWARD_VEC4: KernelSpec = KernelSpec {
    file: "backward/unary_backward.wgsl",
    entry: "unary_backward_vec4",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 96,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// [`UNARY_BACKWARD`] with the gradient and x both F16 or both BF16
/// (override `KIND`: 3 f16, 4 bf16), in one pass: widened exactly, the
/// product in f32, rounded once. One output word (two elements) per
/// thread: `ceil(numel / 2)` threads. Immediates as [`UNARY_BACKWARD`].
pub static UNARY_BACKWARD_HALF: KernelSpec = KernelSpec {
    file: "backward/unary_backward.wgsl",
    entry: "unary_backward_half",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 96,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &UNARY_BACKWARD,
    &UNARY_BACKWARD_VEC4,
    &UNARY_BACKWARD_HALF,
    &SOFTMAX_BACKWARD,
    &SCATTER_ADD,
];
