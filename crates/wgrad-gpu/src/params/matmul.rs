//! Immediates of `kernels/matmul/*.wgsl`.

use super::immediates;

immediates! {
    /// `MatmulParams` of `matmul/matmul_32.wgsl`, `matmul_64.wgsl`, `matmul_128.wgsl` and `matmul_coop.wgsl`
    /// (declared once in `common/matmul_params.wgsl`).
    MatmulParams {
        /// Rows of the output.
        m: u32,
        /// Columns of the output.
        n: u32,
        /// The inner (summed) size.
        k: u32,
        /// Output tiles along N.
        tiles_n: u32,
        /// Output tiles of one matrix (`tiles_n` times the tiles along M).
        tiles_mn: u32,
        /// Workgroups: `tiles_mn` times the batch count times the splits.
        groups: u32,
        /// Offset of A.
        a_offset: u32,
        /// Offset of B.
        b_offset: u32,
        /// A row (m) stride.
        a_rs: u32,
        /// A column (k) stride.
        a_cs: u32,
        /// B row (k) stride.
        b_rs: u32,
        /// B column (n) stride.
        b_cs: u32,
        /// Up to 4 batch dims, right-aligned (unused leading dims: size 1).
        batch: [u32; 4],
        /// A's batch strides (0 where unused or broadcast).
        a_bstrides: [u32; 4],
        /// B's batch strides (0 where unused or broadcast).
        b_bstrides: [u32; 4],
        /// K per split (a multiple of 16); K itself when not split.
        k_chunk: u32,
        /// Number of batch matrices (product of `batch`).
        batches: u32,
        /// The bias element of output column 0 (read with `HAS_BIAS` only).
        bias_offset: u32,
        /// The bias element step per output column (0: one value for all).
        bias_stride: u32,
    }
}

immediates! {
    /// `SumParams` of `matmul/sum_splits.wgsl`.
    SumSplitsParams {
        /// Elements of the output.
        numel: u32,
        /// Partial products to add per element.
        splits: u32,
        /// Output columns (the bias index of element `i` is `i % n`).
        n: u32,
        /// The bias element of output column 0 (read with `HAS_BIAS` only).
        bias_offset: u32,
        /// The bias element step per output column.
        bias_stride: u32,
    }
}
