//! Immediates of `kernels/pool/*.wgsl`.

use super::immediates;

immediates! {
    /// `Pool2dParams` of every `pool/*.wgsl` kernel (2-D pooling and its
    /// gradients over `[N, C, H, W]`).
    Pool2dParams {
        /// Threads: output elements (forward) or input elements (backward).
        numel: u32,
        /// Channels `C`.
        channels: u32,
        /// Input height.
        in_h: u32,
        /// Input width.
        in_w: u32,
        /// Output height.
        out_h: u32,
        /// Output width.
        out_w: u32,
        /// Window height.
        kernel_h: u32,
        /// Window width.
        kernel_w: u32,
        /// Vertical stride.
        stride_h: u32,
        /// Horizontal stride.
        stride_w: u32,
        /// Padding above and below.
        pad_h: u32,
        /// Padding left and right.
        pad_w: u32,
        /// Vertical dilation.
        dilation_h: u32,
        /// Horizontal dilation.
        dilation_w: u32,
        /// Avg: 1 to divide by the window cut to the padded input.
        count_include_pad: u32,
        /// Avg: `divisor_override`, 0 for none.
        divisor: u32,
        /// Offset of the strided operand read per window (input or output gradient).
        x_offset: u32,
        /// Its `[N, C, H, W]` strides.
        x_strides: [u32; 4],
        /// Offset of the I32 indices (max backward only).
        i_offset: u32,
        /// Their `[N, C, Ho, Wo]` strides.
        i_strides: [u32; 4],
    }
}
