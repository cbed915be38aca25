//! Immediates of `kernels/conv/*.wgsl` (`common/conv_params.wgsl`).

use super::immediates;

immediates! {
    /// `ConvParams` of `conv/conv2d.wgsl`, `conv/conv2d_input_grad.wgsl` and
    /// `conv/conv2d_weight_grad.wgsl`: one implicit GEMM per channel group.
    ConvParams {
        /// Input height.
        in_h: u32,
        /// Input width.
        in_w: u32,
        /// Output height.
        out_h: u32,
        /// Output width.
        out_w: u32,
        /// Input channels per group.
        cin_g: u32,
        /// Output channels per group.
        cout_g: u32,
        /// Kernel width.
        kw: u32,
        /// Kernel height times width.
        khkw: u32,
        /// Vertical stride.
        stride_h: u32,
        /// Horizontal stride.
        stride_w: u32,
        /// Zero rows before the input (bottom padding never enters the index math).
        pad_top: u32,
        /// Zero columns before the input.
        pad_left: u32,
        /// Vertical dilation.
        dil_h: u32,
        /// Horizontal dilation.
        dil_w: u32,
        /// GEMM rows.
        m: u32,
        /// GEMM columns.
        n: u32,
        /// GEMM inner size.
        k: u32,
        /// K per split (a multiple of 16); K itself when not split.
        k_chunk: u32,
        /// Output tiles along N.
        tiles_n: u32,
        /// Output tiles of one GEMM.
        tiles_mn: u32,
        /// Workgroups: `tiles_mn` times the channel groups times the splits.
        groups: u32,
        /// Channel groups.
        conv_groups: u32,
        /// The input's element offset.
        x_offset: u32,
        /// The output gradient's element offset.
        dy_offset: u32,
        /// The input's N, C, H, W strides.
        x_strides: [u32; 4],
        /// The output gradient's N, C, H, W strides.
        dy_strides: [u32; 4],
    }
}

immediates! {
    /// `ConvInputGradParams` of `conv/conv2d_input_grad.wgsl`: one stride
    /// phase of the input gradient, an implicit GEMM per channel group.
    ConvInputGradParams {
        /// Input height.
        in_h: u32,
        /// Input width.
        in_w: u32,
        /// Output height.
        out_h: u32,
        /// Output width.
        out_w: u32,
        /// Input channels per group (GEMM rows).
        cin_g: u32,
        /// Output channels per group.
        cout_g: u32,
        /// Kernel width.
        kw: u32,
        /// Kernel height times width.
        khkw: u32,
        /// Vertical stride.
        stride_h: u32,
        /// Horizontal stride.
        stride_w: u32,
        /// `(h0 + pad_top - i0 * dil_h) / stride_h`: the output-gradient row
        /// of the phase's first pixel and first tap.
        base_h: i32,
        /// The same for columns.
        base_w: i32,
        /// `i_step * dil_h / stride_h`: output-gradient rows per tap step.
        step_h: u32,
        /// The same for columns.
        step_w: u32,
        /// GEMM columns: batch times the phase's rows times its columns.
        n: u32,
        /// GEMM inner size: the phase's taps times `cout_g`.
        k: u32,
        /// Output tiles along N.
        tiles_n: u32,
        /// Output tiles of one GEMM.
        tiles_mn: u32,
        /// Workgroups: `tiles_mn` times the channel groups.
        groups: u32,
        /// Channel groups.
        conv_groups: u32,
        /// The output gradient's element offset.
        dy_offset: u32,
        /// The phase's first input row.
        h0: u32,
        /// The phase's first input column.
        w0: u32,
        /// The phase's rows (`h0`, `h0 + stride_h`, ...).
        rows: u32,
        /// The phase's columns.
        cols: u32,
        /// The phase's first tap: `i0 | j0 << 16`.
        tap0: u32,
        /// Its tap steps: `i_step | j_step << 16`.
        tap_step: u32,
        /// Its taps along the width.
        n_tj: u32,
        /// The output gradient's N, C, H, W strides.
        dy_strides: [u32; 4],
    }
}

immediates! {
    /// `WinogradParams` of `conv/winograd_weight.wgsl`,
    /// `conv/winograd_input.wgsl` and `conv/winograd_output.wgsl`
    /// (`common/winograd_params.wgsl`).
    WinogradParams {
        /// The input's channels (U's and V's columns / rows).
        channels: u32,
        /// Input height.
        in_h: u32,
        /// Input width.
        in_w: u32,
        /// Zero rows above the input.
        pad_top: u32,
        /// Zero columns left of the input.
        pad_left: u32,
        /// Tile rows: ceil(out_h / 2).
        tiles_h: u32,
        /// Tile columns: ceil(out_w / 2).
        tiles_w: u32,
        /// Tiles: batch * tiles_h * tiles_w.
        tiles: u32,
        /// The output's channels (U's and M's rows).
        out_channels: u32,
        /// Output height.
        out_h: u32,
        /// Output width.
        out_w: u32,
        /// Threads this dispatch runs.
        total: u32,
        /// The input's element offset.
        x_offset: u32,
        /// The input's N, C, H, W strides.
        x_strides: [u32; 4],
    }
}

immediates! {
    /// `DepthwiseParams` of `conv/depthwise_forward.wgsl`,
    /// `conv/depthwise_input_grad.wgsl` and `conv/depthwise_weight_grad.wgsl`
    /// (`common/depthwise_params.wgsl`; the kernel size, stride and
    /// dilation are pipeline constants).
    DepthwiseParams {
        /// Batch size.
        batch: u32,
        /// Input channels (the groups).
        channels: u32,
        /// Output channels per input channel.
        mult: u32,
        /// Input height.
        in_h: u32,
        /// Input width.
        in_w: u32,
        /// Output height.
        out_h: u32,
        /// Output width.
        out_w: u32,
        /// Zero rows above the input.
        pad_top: u32,
        /// Zero columns left of the input.
        pad_left: u32,
        /// Threads (forward, input gradient) or workgroups (weight gradient).
        total: u32,
        /// Weight gradient: output pixels per workgroup.
        chunk: u32,
        /// The input's element offset.
        x_offset: u32,
        /// The output gradient's element offset.
        dy_offset: u32,
        /// The input's N, C, H, W strides.
        x_strides: [u32; 4],
        /// The output gradient's N, C, H, W strides.
        dy_strides: [u32; 4],
    }
}
