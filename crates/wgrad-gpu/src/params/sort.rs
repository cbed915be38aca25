//! Immediates of `kernels/sort/`, `kernels/scan/` and the samplers of
//! `kernels/random/` (randint, bernoulli, multinomial).

use super::immediates;

immediates! {
    /// `SortParams` of `sort/sort_rows.wgsl` and `sort/sort_global.wgsl`.
    SortParams {
        /// Rows sorted.
        rows: u32,
        /// Elements per row.
        n: u32,
        /// Distance between neighbours of a row.
        inner: u32,
        /// Element offset of the source.
        offset: u32,
        /// `n` rounded up to a power of two.
        padded: u32,
        /// 1: descending.
        descending: u32,
        /// Network stage (`sort_tiles`: 0 = whole tiles).
        k: u32,
        /// Network step (`sort_step`).
        j: u32,
    }
}

immediates! {
    /// `ScanParams` of `scan/scan.wgsl` and `scan/scan_carry.wgsl`.
    ScanParams {
        /// Rows scanned.
        rows: u32,
        /// Elements per row.
        n: u32,
        /// Distance between neighbours of a row.
        inner: u32,
        /// Element offset of the source.
        offset: u32,
        /// Blocks of `SCAN_BLOCK` elements per row.
        blocks: u32,
        /// 1: scan from the end of each row.
        reverse: u32,
    }
}

immediates! {
    /// `RandintParams` of `random/randint.wgsl`.
    RandintParams {
        /// Elements to write.
        numel: u32,
        /// First key of the seed.
        key0: u32,
        /// Second key of the seed.
        key1: u32,
        /// Bits of the i32 low end.
        low: u32,
        /// `high - low` (0: all 2^32 values).
        range: u32,
    }
}

immediates! {
    /// `BernoulliParams` of `random/bernoulli.wgsl`.
    BernoulliParams {
        /// Elements to write.
        numel: u32,
        /// First key of the seed.
        key0: u32,
        /// Second key of the seed.
        key1: u32,
        /// Element offset of the dense probabilities.
        offset: u32,
    }
}

immediates! {
    /// `MultinomialParams` of `random/multinomial*.wgsl`.
    MultinomialParams {
        /// Rows of weights.
        rows: u32,
        /// Categories per row.
        cats: u32,
        /// Samples per row.
        num_samples: u32,
        /// 1: with replacement.
        replacement: u32,
        /// First key of the seed.
        key0: u32,
        /// Second key of the seed.
        key1: u32,
        /// Element offset of the dense weights (or CDF).
        offset: u32,
    }
}
