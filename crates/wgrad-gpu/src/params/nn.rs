//! Immediates of `kernels/nn/*.wgsl`.

use super::immediates;

immediates! {
    /// `CrossEntropyParams` of `nn/cross_entropy.wgsl` and
    /// `nn/cross_entropy_backward.wgsl`.
    CrossEntropyParams {
        /// Rows (samples).
        rows: u32,
        /// Classes.
        n: u32,
        /// Offset of the logits.
        x_offset: u32,
        /// Row stride of the logits.
        x_row_stride: u32,
        /// Column stride of the logits.
        x_col_stride: u32,
        /// Offset of the targets.
        t_offset: u32,
        /// Stride of the targets.
        t_stride: u32,
        /// Threads per row.
        lanes: u32,
        /// Label smoothing (f32 bits).
        smoothing: u32,
        /// The ignored class (i32 bits).
        ignore_index: u32,
        /// Offset of the upstream gradient (backward only).
        g_offset: u32,
        /// Stride of the upstream gradient (backward only).
        g_stride: u32,
        /// The divisor's element (backward with `HAS_DIVISOR` only).
        d_offset: u32,
    }
}

immediates! {
    /// `CheckParams` of `nn/check_unit_interval.wgsl`.
    CheckParams {
        /// Elements to check.
        numel: u32,
        /// Offset of the first.
        offset: u32,
    }
}

immediates! {
    /// `LossMeanParams` of `nn/cross_entropy_mean.wgsl`.
    LossMeanParams {
        /// Samples.
        rows: u32,
        /// Offset of the (contiguous) losses.
        l_offset: u32,
        /// Offset of the targets.
        t_offset: u32,
        /// Stride of the targets.
        t_stride: u32,
        /// The ignored class (i32 bits).
        ignore_index: u32,
    }
}

immediates! {
    /// `LayerNormParams` of `nn/layer_norm*.wgsl` (declared once in
    /// `common/layer_norm.wgsl`).
    LayerNormParams {
        /// Rows (the product of the dims before `normalized_shape`).
        rows: u32,
        /// Elements per row (the product of `normalized_shape`).
        cols: u32,
        /// Epsilon (f32 bits).
        eps: u32,
        /// Threads per row (a power of two up to 256).
        lanes: u32,
        /// 1: a weight is bound; 2: a bias is bound.
        flags: u32,
        /// Rows each parameter-gradient workgroup sums.
        row_block: u32,
        /// Column blocks of 256 (parameter gradients).
        col_blocks: u32,
        /// Unused (the block is whole 16-byte rows).
        pad: u32,
    }
}
