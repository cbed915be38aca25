//! How a product is computed: which kernel (32 x 32, 64 x 64 (on 256 or
//! 128 threads), 128 x 64 or 128 x 128 f32 tiles, the skinny and thin
//! kernels, or the tensor cores' 128 x 256) and how many K splits, chosen
//! by shape or forced by [`GpuTensor::matmul_t_variant`].

use wgrad_core::{Error, Result};
use wgrad_kernels::KernelSpec;
use wgrad_kernels::families;

#[cfg(doc)]
use crate::GpuTensor;

/// Workgroups that keep a large GPU busy (e.g. 2 per SM on a 132-SM H200).
/// Products with fewer than half as many output tiles are split along K.
const FILL_GROUPS: usize = 256;

/// The least K per split for which a split 128 x 128 product beats the
/// 64 x 64 kernel (see `plan`).
const LONG_SPLIT_K: usize = 256;
/// The least K for which big tiles that nearly fill the GPU are split in two.
const NEARLY_FILL_SPLIT_K: usize = 1024;
/// Least K per split: shorter chunks spend more on the partial sums than the
/// extra parallelism gains.
const MIN_SPLIT_K: usize = 128;
/// Least multiply-adds (over the whole batch) for the tensor cores: below this,
/// a K split of their few big tiles costs more than it saves (H100: the
/// MLP's [128, 784] x [784, 256] products made its step 0.48 -> 0.58 ms,
/// while [1024, 1024] x [1024, 1024] runs 17 -> 22 TFLOP/s).
const COOP_MIN_MACS: usize = 1 << 28;

/// The most K one split of the 32 x 32 kernel sums before products are
/// split (8 of its K steps; H100, docs/bench/h100-2026-11-27-timeline/matmul_32.txt:
/// W1's [128, 784] x [784, 256] runs at 2.5 TFLOP/s unsplit, 3.1 split 4 ways).
const TINY_SPLIT_K: usize = 256;

/// The longest short side of the skinny kernel (its 16 sums per thread).
pub(super) const SKINNY_SHORT: usize = 16;
/// K range of the skinny kernel: below it most of its 256 threads would
/// have no k to sum; above it each thread's serial share of K costs more
/// than the tiled kernels' split K and partial-sum pass.
const SKINNY_MIN_K: usize = 64;
const SKINNY_MAX_K: usize = 4096;

/// The longest K the thin kernel takes: past it, staging the operands in
/// workgroup memory (the tiled kernels) reads them fewer times.
const THIN_MAX_K: usize = 16;

/// Whether the skinny kernel suits a product with a `short` output side
/// (the shorter of M and N) over `k`.
pub(super) fn skinny_suits(short: usize, k: usize) -> bool {
    short <= SKINNY_SHORT && (SKINNY_MIN_K..=SKINNY_MAX_K).contains(&k)
}

/// The product kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// `matmul_32.wgsl`: 32 x 32 tiles, K summed by 4 thread groups.
    Tile32,
    /// `matmul_64.wgsl`: 64 x 64 tiles.
    Tile64,
    /// `matmul_64_lean.wgsl`: 64 x 64 tiles on 128 threads.
    Tile64Lean,
    /// `matmul_128x64.wgsl`: 128 x 64 tiles (rows x columns).
    Tile128x64,
    /// `matmul_128.wgsl`: 128 x 128 tiles.
    Tile128,
    /// `matmul_coop.wgsl`: 128 x 256 tiles on the tensor cores (f16
    /// operands, f32 sums).
    Coop,
    /// `matmul_skinny.wgsl`: a short output side (at most 16 rows or
    /// columns) whole per workgroup, K shared by its threads.
    Skinny,
    /// `matmul_thin.wgsl`: 32 x 128 tiles computed straight from the
    /// operands, for a short K.
    Thin,
}

impl Kernel {
    /// The kernel named `name` by [`GpuTensor::matmul_t_variant`] (`None`
    /// for "auto"), or an error naming the choices.
    pub(super) fn by_name(name: &str) -> Result<Option<Kernel>> {
        match name {
            "auto" => Ok(None),
            "32" => Ok(Some(Kernel::Tile32)),
            "64" => Ok(Some(Kernel::Tile64)),
            "64lean" => Ok(Some(Kernel::Tile64Lean)),
            "128x64" => Ok(Some(Kernel::Tile128x64)),
            "128" => Ok(Some(Kernel::Tile128)),
            "coop" => Ok(Some(Kernel::Coop)),
            "skinny" => Ok(Some(Kernel::Skinny)),
            "thin" => Ok(Some(Kernel::Thin)),
            _ => Err(Error::invalid(
                "matmul_t",
                format!(
                    "kernel must be \"auto\", \"32\", \"64\", \"64lean\", \"128x64\", \"128\", \"coop\", \"skinny\" or \"thin\", got {name:?}"
                ),
            )),
        }
    }

    /// Output tile (rows, columns) per workgroup (the skinny kernel's
    /// depends on the operands: see `SkinnyLayout`; this is its largest).
    pub(super) fn tile(self) -> (usize, usize) {
        match self {
            Kernel::Skinny => (SKINNY_SHORT, SKINNY_SHORT),
            Kernel::Thin => (32, 128),
            Kernel::Tile32 => (32, 32),
            Kernel::Tile64 | Kernel::Tile64Lean => (64, 64),
            Kernel::Tile128x64 => (128, 64),
            Kernel::Tile128 => (128, 128),
            Kernel::Coop => (128, 256),
        }
    }

    pub(super) fn spec(self) -> &'static KernelSpec {
        match self {
            Kernel::Tile32 => &families::matmul::MATMUL_32,
            Kernel::Tile64 => &families::matmul::MATMUL_64,
            Kernel::Tile64Lean => &families::matmul::MATMUL_64_LEAN,
            Kernel::Tile128x64 => &families::matmul::MATMUL_128X64,
            Kernel::Tile128 => &families::matmul::MATMUL_128,
            Kernel::Coop => &families::matmul::MATMUL_COOP,
            Kernel::Skinny => &families::matmul::MATMUL_SKINNY,
            Kernel::Thin => &families::matmul::MATMUL_THIN,
        }
    }
}

/// How a product is computed: the kernel and the number of K splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) kernel: Kernel,
    pub(super) splits: usize,
}

/// A kernel and/or split count forced by [`GpuTensor::matmul_t_variant`]
/// (`None` / 0: chosen by shape).
pub(super) type Force = Option<(Option<Kernel>, usize)>;

/// The kernel and K split for `count` products of `[m, k] x [k, n]`.
/// `big_ok` / `tiny_ok`: the device has the 128 x 128 / 32 x 32 kernel's
/// workgroup memory;
/// `coop`: products may run on the tensor cores (precision "medium" on a
/// device that has them);
/// `max_splits`: how many `[count, m, n]` partial results fit one binding;
/// `force`: a kernel and/or split count to use instead.
pub(super) fn plan(
    [count, m, n, k]: [usize; 4],
    big_ok: bool,
    tiny_ok: bool,
    coop: bool,
    max_splits: usize,
    force: Force,
) -> Plan {
    let (force_kernel, force_splits) = force.unwrap_or((None, 0));
    let tiles = |(tm, tn): (usize, usize)| count * m.div_ceil(tm) * n.div_ceil(tn);
    // The most K splits that keep `tiles` workgroups within a full GPU.
    // Rounded down: a few workgroups past it start a whole second round of
    // the 128 kernel (H100, T2's [1152, 384] weight gradient: 27 tiles split
    // 10 ways, 270 workgroups, ran at 21.3 TFLOP/s; 8 ways, 216, at 25.0).
    let filling_splits = |tiles: usize| {
        (FILL_GROUPS / tiles)
            .min(k / MIN_SPLIT_K)
            .min(max_splits)
            .max(1)
    };
    // Big tiles that fill three quarters of the GPU but not all of it, over
    // a long K (T2's [8192, 384] products over K = 1152 or 1536): split in
    // two, they beat the 64 kernel's unsplit tiles (H100: 26.4-28.7 against
    // 24.5-25.5 TFLOP/s; over K = 384 they do not).
    let big_tiles_nearly_fill = || {
        let big = tiles((128, 128));
        4 * big >= 3 * FILL_GROUPS && big < FILL_GROUPS && k >= NEARLY_FILL_SPLIT_K
    };
    let splits_for = |t: (usize, usize)| {
        if force_splits != 0 {
            force_splits
        } else if t == (32, 32) {
            // Split only long K: a split costs the partial sums' pass.
            k.div_ceil(TINY_SPLIT_K).min(filling_splits(tiles(t)))
        } else if t == (128, 128) && big_tiles_nearly_fill() {
            2
        } else if 2 * tiles(t) <= FILL_GROUPS {
            filling_splits(tiles(t))
        } else {
            1
        }
    };
    // The 128 kernel where its edge tiles waste at most 25% more than the 64
    // kernel's (so not for skinny outputs such as N = 10) and its tiles
    // alone fill the GPU. Where they would need a K split to do so, the 64
    // kernel's 4 times as many tiles do better without one (H200,
    // docs/bench/matmul.txt: the MLP products [1024, 1024 or 784, 784 or
    // 1024] run at 16-22 TFLOP/s unsplit on 64 x 64 tiles against 13-20
    // with 128 x 128 tiles split 4-5 ways plus the partial sums' pass).
    let padded = |t: usize| m.next_multiple_of(t) * n.next_multiple_of(t);
    // Long-K products with small outputs (weight gradients: [out, in] over
    // K = batch x tokens, T2's [1152, 384] over 8192), whose 64 x 64 tiles
    // alone leave the GPU part idle: the 128 kernel split until it fills the
    // GPU, with at least LONG_SPLIT_K per split, beats the 64 kernel split
    // fewer ways or not at all (H100, T2: those products as a batch of
    // 128 x 128 tiles plus a sum took 14.2 ms of matmul per step; on 64 x 64
    // tiles, split 3 ways or unsplit on 144 workgroups, 17.6).
    let big_tiles_fill = || {
        let big = tiles((128, 128));
        // Judged by the splits that would reach a full GPU (the plan then
        // takes one fewer where they would pass it).
        let reaching = FILL_GROUPS.div_ceil(big);
        big >= FILL_GROUPS
            || big_tiles_nearly_fill()
            || (tiles((64, 64)) < FILL_GROUPS
                && reaching <= max_splits
                && k / reaching >= LONG_SPLIT_K)
    };
    let kernel = if let Some(kernel) = force_kernel {
        kernel
    } else if skinny_suits(m.min(n), k) {
        // A short side of at most 16 (classifier heads and their
        // gradients): the tiled kernels would pad it to 32-128 and split K
        // with a second pass (H100: W2's [1024, 1024] x [1024, 10] took
        // 20.4 + 9.6 us that way).
        Kernel::Skinny
    } else if k <= THIN_MAX_K {
        // A short K (a classifier head's input gradient, K = 10): the cost
        // is writing the output, which needs no staging (H100: W2's
        // [1024, 10] x [10, 1024] took 20 us on 64 x 64 tiles).
        Kernel::Thin
    } else if coop
        && k >= 32
        && count * m * n * k >= COOP_MIN_MACS
        && m.next_multiple_of(128) * n.next_multiple_of(256) <= 2 * m * n
    {
        // Tensor cores for large products whose 128 x 256 tiles waste at
        // most half the work (so not for skinny outputs such as N = 10,
        // nor the small MLP's products, which stay f32).
        Kernel::Coop
    } else if big_ok && 4 * padded(128) <= 5 * padded(64) && big_tiles_fill() {
        Kernel::Tile128
    } else if tiles((128, 128)) < FILL_GROUPS
        && tiles((128, 64)) >= FILL_GROUPS
        && 4 * m.next_multiple_of(128) <= 5 * m.next_multiple_of(64)
    {
        // Outputs the 128 x 128 tiles leave part idle but 128 x 64 tiles
        // fill unsplit: fewer workgroup-memory reads per FMA than the 64
        // kernel's (H100, docs/bench/h100-2026-11-27-timeline/sweep_128x64.txt:
        // 1536^3 21.1 against 19.1 TFLOP/s, 2048 x 1024 x 1024 27.4 against
        // 24.0, T2's [8192, 384] x [384, 384] 23.2 against 21.3; where they
        // do not fill the GPU, as 1024^3's 128, the 64 kernel stays ahead).
        Kernel::Tile128x64
    } else if tiny_ok && 2 * tiles((64, 64)) <= FILL_GROUPS {
        // Products the 64 kernel would split to fill the GPU: 4 times as
        // many 32 x 32 tiles, each a quarter of the K steps per workgroup
        // (one tile's K step costs its latency, not its FMAs).
        Kernel::Tile32
    } else if tiles((64, 64)) > FILL_GROUPS {
        // More 64 x 64 tiles than the 256-thread kernel runs at once (2 per
        // SM): the lean kernel's 128-thread workgroups fit more per SM and
        // read workgroup memory a third less per FMA (H200,
        // docs/bench/h200-2026-11-28-session12/sweep_rule.txt: 272-384 tiles
        // 17.9-23.1 against 15.6-17.6 TFLOP/s, the CNN's fc1 gradients
        // [128, 9216] over K = 128 14.0 against 12.2; at 240-256 tiles the
        // 256-thread kernel's 16 warps per SM stay ahead, 1024^3 23.8
        // against 21.6).
        Kernel::Tile64Lean
    } else {
        Kernel::Tile64
    };
    // The skinny and thin kernels are never split.
    let splits = if matches!(kernel, Kernel::Skinny | Kernel::Thin) {
        1
    } else {
        splits_for(kernel.tile())
    };
    Plan { kernel, splits }
}

#[cfg(test)]
mod tests {
    use super::{Kernel, Plan, plan};

    #[test]
    fn plans_by_shape() {
        let pick = |shape: [usize; 4], big_ok, max_splits, force| {
            let Plan { kernel, splits } = plan(shape, big_ok, true, false, max_splits, force);
            (kernel.tile().0, splits)
        };
        let auto = |count, m, n, k| pick([count, m, n, k], true, usize::MAX, None);
        let pick_kernel = |shape| plan(shape, true, true, false, usize::MAX, None).kernel;
        // Large outputs: 128 x 128 tiles, no split.
        assert_eq!(auto(1, 4096, 4096, 4096), (128, 1));
        assert_eq!(auto(1, 2048, 2048, 2048), (128, 1));
        // MLP-sized outputs (64 or 56 big tiles, 256 or 208 small ones):
        // small tiles fill the GPU without a split.
        assert_eq!(auto(1, 1024, 1024, 1024), (64, 1));
        assert_eq!(auto(1, 1024, 1024, 784), (64, 1));
        assert_eq!(auto(1, 1024, 784, 1024), (64, 1));
        // More 64 x 64 tiles than 2 per SM, too few 128 x 128 ones: the
        // lean 64 x 64 kernel; at 256 tiles the 256-thread one.
        assert_eq!(pick_kernel([1, 1536, 1024, 512]), Kernel::Tile64Lean);
        assert_eq!(pick_kernel([1, 128, 9216, 128]), Kernel::Tile64Lean);
        assert_eq!(pick_kernel([1, 1024, 1024, 1024]), Kernel::Tile64);
        assert_eq!(pick_kernel([1, 960, 1024, 512]), Kernel::Tile64);
        // A side of at most 16 over 64 <= K <= 4096: the skinny kernel,
        // unsplit; not over a shorter or longer K.
        assert_eq!(pick_kernel([1, 128, 10, 256]), Kernel::Skinny);
        assert_eq!(auto(1, 1024, 10, 1024), (16, 1));
        assert_eq!(pick_kernel([1, 10, 1025, 1024]), Kernel::Skinny);
        assert_eq!(pick_kernel([1, 1024, 1, 4096]), Kernel::Skinny);
        assert_eq!(pick_kernel([1, 1024, 10, 32]), Kernel::Tile32);
        // K of at most 16: the thin kernel, unsplit, whatever the output.
        assert_eq!(auto(1, 1024, 1024, 10), (32, 1));
        assert_eq!(pick_kernel([1, 1024, 1024, 10]), Kernel::Thin);
        assert_eq!(pick_kernel([4, 128, 10, 16]), Kernel::Thin);
        assert_eq!(pick_kernel([1, 1024, 1024, 17]), Kernel::Tile64);
        assert_eq!(pick_kernel([1, 16, 64, 8192]), Kernel::Tile32);
        assert_eq!(pick_kernel([1, 17, 1024, 1024]), Kernel::Tile32);
        // Outputs of few 64 x 64 tiles (small): 32 x 32 tiles, split only
        // past 256 of K.
        assert_eq!(auto(1, 128, 32, 256), (32, 1));
        assert_eq!(auto(1, 128, 256, 784), (32, 4));
        assert_eq!(auto(1, 64, 64, 64), (32, 1));
        assert_eq!(auto(1, 512, 512, 512), (32, 1));
        // Many small tiles over a batch: 128 x 64 where they fill the GPU.
        assert_eq!(auto(32, 256, 256, 64), (128, 1));
        assert_eq!(pick_kernel([32, 256, 256, 64]), Kernel::Tile128x64);
        assert_eq!(pick_kernel([1, 1536, 1536, 1536]), Kernel::Tile128x64);
        assert_eq!(pick_kernel([1, 2048, 1024, 1024]), Kernel::Tile128x64);
        assert_eq!(pick_kernel([1, 8192, 384, 384]), Kernel::Tile128x64);
        // Not where 128 x 64 tiles would leave the GPU part idle (1024^3),
        // nor where 128 x 128 tiles fill it.
        assert_eq!(pick_kernel([1, 1024, 1024, 1024]), Kernel::Tile64);
        assert_eq!(pick_kernel([1, 2048, 2048, 2048]), Kernel::Tile128);
        // The automatic cases of the parity test odd_sizes_every_variant_relative_norm.
        assert_eq!(auto(2, 1024, 640, 512), (64, 1));
        assert_eq!(auto(1, 130, 140, 1000), (32, 4));
        assert_eq!(auto(3, 260, 250, 256), (32, 1));
        // Long K, small output (T2's weight gradients): 128 x 128 tiles split
        // until they fill the GPU.
        // never past it.
        assert_eq!(auto(1, 1152, 384, 8192), (128, 9));
        assert_eq!(auto(1, 1024, 384, 8192), (128, 10));
        assert_eq!(auto(1, 1536, 384, 8192), (128, 7));
        assert_eq!(auto(1, 384, 1536, 8192), (128, 7));
        assert_eq!(auto(1, 384, 384, 8192), (128, 28));
        // Big tiles that nearly fill the GPU over a long K (T2's [8192, 384]
        // outputs): split in two; over a short K, 128 x 64 tiles.
        assert_eq!(auto(1, 8192, 384, 1536), (128, 2));
        assert_eq!(auto(32, 256, 384, 1152), (128, 2));
        assert_eq!(auto(1, 8192, 384, 384), (128, 1));
        // No 128 kernel without its workgroup memory; splits capped by memory.
        assert_eq!(pick([1, 4096, 4096, 4096], false, 1, None), (64, 1));
        assert_eq!(pick([1, 128, 128, 8192], true, 2, None), (32, 2));
        // No 32 kernel without its workgroup memory.
        let Plan { kernel, splits } = plan([1, 128, 32, 256], true, false, false, usize::MAX, None);
        assert_eq!((kernel, splits), (Kernel::Tile64, 2));
        // Forced variants: the other choice is made for the forced one.
        let forced = |shape, force| pick(shape, true, usize::MAX, Some(force));
        let (t64, t128) = (Some(Kernel::Tile64), Some(Kernel::Tile128));
        assert_eq!(forced([1, 4096, 4096, 4096], (t64, 0)), (64, 1));
        assert_eq!(forced([1, 1024, 1024, 1024], (t64, 0)), (64, 1));
        assert_eq!(forced([1, 1024, 1024, 1024], (None, 2)), (64, 2));
        assert_eq!(forced([1, 1024, 1024, 1024], (t128, 0)), (128, 4));
        assert_eq!(
            plan(
                [1, 64, 64, 64],
                true,
                true,
                false,
                9,
                Some((Some(Kernel::Tile64), 3))
            ),
            Plan {
                kernel: Kernel::Tile64,
                splits: 3
            }
        );
    }

    #[test]
    fn tensor_cores_take_the_products_their_tiles_fit() {
        let kernel = |shape| plan(shape, true, true, true, usize::MAX, None).kernel;
        assert_eq!(kernel([1, 4096, 4096, 4096]), Kernel::Coop);
        assert_eq!(kernel([1, 1024, 1024, 1024]), Kernel::Coop);
        assert_eq!(kernel([1, 8192, 1152, 384]), Kernel::Coop);
        assert_eq!(kernel([1, 1024, 1024, 784]), Kernel::Coop);
        // Skinny outputs, tiny K and small products stay on the f32 kernels.
        assert_eq!(kernel([1, 128, 10, 256]), Kernel::Skinny);
        assert_eq!(kernel([1, 1024, 1024, 16]), Kernel::Thin);
        assert_eq!(kernel([1, 128, 256, 784]), Kernel::Tile32);
        // The whole batch counts: T2's [32, 256, 384] x [384, 1152] products.
        assert_eq!(kernel([32, 256, 1152, 384]), Kernel::Coop);
        assert_eq!(kernel([8, 1024, 768, 64]), Kernel::Coop);
        assert_ne!(kernel([2, 128, 256, 784]), Kernel::Coop);
        // Few tiles: split along K like the f32 kernels.
        let Plan { kernel, splits } =
            plan([1, 128, 256, 1 << 14], true, true, true, usize::MAX, None);
        assert_eq!((kernel, splits), (Kernel::Coop, 128));
    }
}
