//! Immediates of `kernels/attention/*.wgsl`.

use super::immediates;

immediates! {
    /// `AttentionParams` of `common/attention.wgsl`.
    AttentionParams {
        /// Query length `L`.
        q_len: u32,
        /// Key / value length `S`.
        kv_len: u32,
        /// Query / key features `E`.
        head_dim: u32,
        /// Value features `Ev`.
        v_dim: u32,
        /// Factor on `q . k`.
        scale: f32,
        /// `FLAG_*` bits (causal, boolean mask, additive mask, dropout).
        flags: u32,
        /// Dropout probability.
        dropout_p: f32,
        /// First dropout key.
        key0: u32,
        /// Second dropout key.
        key1: u32,
        /// 64-row blocks per item.
        blocks: u32,
        /// 64-column output chunks per block.
        chunks: u32,
        /// Batch items.
        items: u32,
        /// Size of the inner of the two merged batch dims.
        inner: u32,
        /// Query row stride.
        q_row: u32,
        /// Key row stride.
        k_row: u32,
        /// Value row stride.
        v_row: u32,
        /// Mask stride over query rows (0 = broadcast).
        mask_row: u32,
        /// Mask stride over keys (0 = broadcast).
        mask_col: u32,
        /// Element offset of the query view.
        q_offset: u32,
        /// Element offset of the key view.
        k_offset: u32,
        /// Element offset of the value view.
        v_offset: u32,
        /// Element offset of the mask view.
        mask_offset: u32,
        /// Query strides over the (outer, inner) batch dims (0 = broadcast).
        q_batch: [u32; 2],
        /// Key batch strides.
        k_batch: [u32; 2],
        /// Value batch strides.
        v_batch: [u32; 2],
        /// Mask batch strides.
        mask_batch: [u32; 2],
    }
}
