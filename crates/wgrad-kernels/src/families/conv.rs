//! `kernels/conv/`: 2-D convolutions as implicit GEMMs (no im2col buffer)
//! on 64 x 64 or 128 x 128 register-tiled output tiles
//! (`common/gemm_64.wgsl` / `gemm_128.wgsl`, the tilings of
//! `matmul_64.wgsl` / `matmul_128.wgsl`), the operand patches gathered while the
//! tiles load, on a grid of `groups` workgroups of 256 threads, folded
//! past 65535. The forward and weight gradient take the `ConvParams`
//! immediates (`common/conv_params.wgsl`, 128 bytes).

use crate::spec::Access::{Read, ReadWrite};
use crate::spec::{Elem, KernelSpec};

/// Forward convolution. Bindings: input (read, through strides), weight
/// (read, contiguous), out (read_write, contiguous NCHW), bias (read, dense
/// `[C_out]`, read only with override `HAS_BIAS` = 1). Override `ALIGNED` = 1
/// when the input channels per group are a multiple of 16.
/// Immediates: `ConvParams`.
pub static CONV2D: KernelSpec = KernelSpec {
    file: "conv/conv2d.wgsl",
    entry: "conv2d",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`CONV2D`] on 128 x 128 output tiles (8 x 8 per thread, K steps of 8;
/// `ALIGNED` = 1 when the input channels per group are a multiple of 8), for
/// large outputs. Same bindings and immediates.
pub static CONV2D_128: KernelSpec = KernelSpec {
    file: "conv/conv2d_128.wgsl",
    entry: "conv2d_128",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Input gradient (the forward's adjoint in its input; `conv_transpose2d`),
/// one dispatch per stride phase (the input pixels whose taps match) with
/// the `ConvInputGradParams` immediates (128 bytes). Bindings: grad_out
/// (read, through strides), weight (read, contiguous), dx (read_write,
/// contiguous NCHW). Override `ALIGNED` = 1 when the output channels per
/// group are a multiple of 16.
pub static CONV2D_INPUT_GRAD: KernelSpec = KernelSpec {
    file: "conv/conv2d_input_grad.wgsl",
    entry: "conv2d_input_grad",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`CONV2D_INPUT_GRAD`] on 128 x 128 output tiles (`ALIGNED` = 1 when the
/// output channels per group are a multiple of 8). Same bindings and
/// immediates.
pub static CONV2D_INPUT_GRAD_128: KernelSpec = KernelSpec {
    file: "conv/conv2d_input_grad_128.wgsl",
    entry: "conv2d_input_grad_128",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Input gradient on 32 x 128 tiles (`common/gemm_32x128.wgsl`), for 32 or
/// fewer input channels per group; `ALIGNED` when the output channels per
/// group are a multiple of 16. Same bindings and immediates.
pub static CONV2D_INPUT_GRAD_32: KernelSpec = KernelSpec {
    file: "conv/conv2d_input_grad_32.wgsl",
    entry: "conv2d_input_grad_32",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Weight gradient, K (the output pixels) split into chunks: bindings input
/// (read, through strides), grad_out (read, through strides), out
/// (read_write, `[splits, C_out, C_in/groups * kH * kW]` partial sums, added
/// by `matmul::SUM_SPLITS`; the weight gradient itself when unsplit).
pub static CONV2D_WEIGHT_GRAD: KernelSpec = KernelSpec {
    file: "conv/conv2d_weight_grad.wgsl",
    entry: "conv2d_weight_grad",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`CONV2D_WEIGHT_GRAD`] on 128 x 128 output tiles (K steps of 8, split
/// chunks still multiples of 16). Same bindings and immediates.
pub static CONV2D_WEIGHT_GRAD_128: KernelSpec = KernelSpec {
    file: "conv/conv2d_weight_grad_128.wgsl",
    entry: "conv2d_weight_grad_128",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 128,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Winograd F(2x2, 3x3) weight transform (`common/winograd_params.wgsl`):
/// bindings weight (read, contiguous `[O, C, 3, 3]`), U (read_write,
/// `[16, C_out, C_in]`). Override `FLIP` = 1 for the input gradient (U of
/// the flipped, transposed weight). Immediates: `WinogradParams`.
pub static WINOGRAD_WEIGHT: KernelSpec = KernelSpec {
    file: "conv/winograd_weight.wgsl",
    entry: "winograd_weight",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Winograd F(2x2, 3x3) input transform: bindings x (read, through
/// strides), V (read_write, `[16, C, tiles]`). Immediates: `WinogradParams`.
pub static WINOGRAD_INPUT: KernelSpec = KernelSpec {
    file: "conv/winograd_input.wgsl",
    entry: "winograd_input",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Winograd F(2x2, 3x3) output transform: bindings M (read, `[16, O,
/// tiles]`), out (read_write, contiguous NCHW), bias (read, dense `[O]`,
/// read only with override `HAS_BIAS` = 1); override `ACT_RELU` = 1 for a
/// ReLU after the bias. Immediates: `WinogradParams`.
pub static WINOGRAD_OUTPUT: KernelSpec = KernelSpec {
    file: "conv/winograd_output.wgsl",
    entry: "winograd_output",
    bindings: &[Read, ReadWrite, Read],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Winograd F(2x2, 3x3) output-gradient transform, for the weight
/// gradient: bindings grad_out (read, through strides), dM (read_write,
/// `[16, C_out, tiles]`). Immediates: `WinogradParams`.
pub static WINOGRAD_GRAD_OUTPUT: KernelSpec = KernelSpec {
    file: "conv/winograd_grad_output.wgsl",
    entry: "winograd_grad_output",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Winograd F(2x2, 3x3) weight-gradient back-transform: bindings dU (read,
/// `[16, C_out, C_in]`), weight gradient (read_write, contiguous
/// `[C_out, C_in, 3, 3]`). Immediates: `WinogradParams`.
pub static WINOGRAD_WEIGHT_GRAD: KernelSpec = KernelSpec {
    file: "conv/winograd_weight_grad.wgsl",
    entry: "winograd_weight_grad",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Depthwise forward (one input channel per group,
/// `common/depthwise_params.wgsl`; overrides `KH`, `KW`, `SH`, `SW`, `DH`,
/// `DW` for the kernel size, stride and dilation, as for the two below): bindings input (read, through strides),
/// weight (read, contiguous), out (read_write, contiguous NCHW), bias
/// (read, dense `[C_out]`, read only with `HAS_BIAS` = 1); `ACT_RELU` = 1
/// for a ReLU after the bias. Immediates: `DepthwiseParams`.
pub static DEPTHWISE_FORWARD: KernelSpec = KernelSpec {
    file: "conv/depthwise_forward.wgsl",
    entry: "depthwise_forward",
    bindings: &[Read, Read, ReadWrite, Read],
    immediate_bytes: 84,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Depthwise input gradient: bindings grad_out (read, through strides),
/// weight (read, contiguous), dx (read_write, contiguous NCHW).
/// Immediates: `DepthwiseParams`.
pub static DEPTHWISE_INPUT_GRAD: KernelSpec = KernelSpec {
    file: "conv/depthwise_input_grad.wgsl",
    entry: "depthwise_input_grad",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 84,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Depthwise weight gradient, one workgroup per (output channel, chunk of
/// output pixels): bindings input (read, through strides), grad_out (read,
/// through strides), partial (read_write, `[chunks, C_out, kh * kw]`, at
/// most 49 taps; added by `matmul::SUM_SPLITS`). Immediates:
/// `DepthwiseParams`.
pub static DEPTHWISE_WEIGHT_GRAD: KernelSpec = KernelSpec {
    file: "conv/depthwise_weight_grad.wgsl",
    entry: "depthwise_weight_grad",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 84,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &CONV2D,
    &CONV2D_128,
    &CONV2D_INPUT_GRAD,
    &CONV2D_INPUT_GRAD_128,
    &CONV2D_INPUT_GRAD_32,
    &CONV2D_WEIGHT_GRAD,
    &CONV2D_WEIGHT_GRAD_128,
    &WINOGRAD_WEIGHT,
    &WINOGRAD_INPUT,
    &WINOGRAD_OUTPUT,
    &WINOGRAD_GRAD_OUTPUT,
    &WINOGRAD_WEIGHT_GRAD,
    &DEPTHWISE_FORWARD,
    &DEPTHWISE_INPUT_GRAD,
    &DEPTHWISE_WEIGHT_GRAD,
];
