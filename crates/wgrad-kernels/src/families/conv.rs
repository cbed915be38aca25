//! `kernels/conv/`: 2-D convolutions as implicit GEMMs (no im2col buffer)
//! on 64 x 64 register-tiled output tiles (`common/conv_gemm.wgsl`, the
//! tiling of `matmul_64.wgsl`), the operand patches gathered while the
//! tiles load, on a grid of `groups` workgroups of 256 threads, folded
//! past 65535. The forward and weight gradient take the `ConvParams`
//! immediates (`common/conv_params.wgsl`, 128 bytes).

use crate::spec::Access::{Read, ReadWrite};
use crate::spec::{Elem, KernelSpec};

/// Forward convolution, no bias. Bindings: input (read, through strides),
/// weight (read, contiguous), out (read_write, contiguous NCHW). Override
/// `ALIGNED` = 1 when the input channels per group are a multiple of 16.
pub static CONV2D: KernelSpec = KernelSpec {
    file: "conv/conv2d.wgsl",
    entry: "conv2d",
    bindings: &[Read, Read, ReadWrite],
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

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[&CONV2D, &CONV2D_INPUT_GRAD, &CONV2D_WEIGHT_GRAD];
