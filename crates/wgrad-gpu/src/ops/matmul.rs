//! Matrix products with PyTorch `matmul` semantics.
//!
//! One dispatch of a register-tiled kernel per product (two with split K,
//! below): `matmul_64.wgsl` (64 x 64 output tiles) or `matmul_128.wgsl`
//! (128 x 128 tiles, twice the work per workgroup-memory read, for large
//! outputs), chosen by shape in `plan`. Both read the operands through
//! their row/column strides and per-batch strides, so transposed
//! (`matmul_t`), narrowed and broadcast operands are never copied. The
//! output is always contiguous.
//!
//! Split K: when the output has too few tiles to occupy a large GPU but K is
//! long (e.g. the `[128, 784] x [784, 256]` products of a small-batch MLP), K is cut
//! into `splits` chunks computed by separate workgroups into a temporary
//! `[splits, batch, M, N]` buffer, and `sum_splits.wgsl` adds them up.
//!
//! Tensor cores: under `set_float32_matmul_precision("medium")`, on a device
//! with f16 cooperative matrices ([`GpuDevice::has_f16_tensor_cores`]),
//! products go to `matmul_coop.wgsl` (128 x 256 tiles, f16 operands, f32
//! sums) with the same operands, immediates and split-K pass.
//!
//! Batch dims: the broadcast batch dims are first simplified (size-1 dims
//! dropped, neighbours merged where both operands step through them as one),
//! then passed as up to 4 dims with per-operand strides (0 where broadcast).
//! With `MAX_RANK` = 6 an operand has at most 4 batch dims, so every product
//! fits the immediate block and no operand ever needs a contiguous copy.

use wgrad_core::precision::{MatmulPrecision, matmul_precision};
use wgrad_core::{DType, Error, Layout, MAX_RANK, Result, checks};
use wgrad_kernels::KernelSpec;
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{self, MatmulParams, SumSplitsParams};

/// Batch dims the kernel's immediate block carries.
const KERNEL_BATCH_DIMS: usize = 4;
// Every product's batch dims must fit the kernel (see the module docs).
const _: () = assert!(MAX_RANK - 2 <= KERNEL_BATCH_DIMS);

/// Workgroups that keep a large GPU busy (e.g. 2 per SM on a 132-SM H200).
/// Products with fewer than half as many output tiles are split along K.
const FILL_GROUPS: usize = 256;
/// Least K per split: shorter chunks spend more on the partial sums than the
/// extra parallelism gains.
const MIN_SPLIT_K: usize = 128;
/// Split chunks are multiples of both kernels' K step.
const SPLIT_ALIGN: usize = 16;
/// Workgroup memory of `matmul_128.wgsl` (2 operands x 2 buffers x 264 vec4).
const BIG_WORKGROUP_BYTES: u32 = 2 * 2 * 264 * 16;
/// Least multiply-adds (over the whole batch) for the tensor cores: below this,
/// a K split of their few big tiles costs more than it saves (H100: the
/// MLP's [128, 784] x [784, 256] products made its step 0.48 -> 0.58 ms,
/// while [1024, 1024] x [1024, 1024] runs 17 -> 22 TFLOP/s).
const COOP_MIN_MACS: usize = 1 << 28;
/// Workgroup memory of `matmul_coop.wgsl`: the f16 tiles (128 x 40 and
/// 32 x 264 halves) and the f32 edge tiles (8 x 256).
const COOP_WORKGROUP_BYTES: u32 = (128 * 40 + 32 * 264) * 2 + 8 * 256 * 4;

/// The product kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// `matmul_64.wgsl`: 64 x 64 tiles.
    Tile64,
    /// `matmul_128.wgsl`: 128 x 128 tiles.
    Tile128,
    /// `matmul_coop.wgsl`: 128 x 256 tiles on the tensor cores (f16
    /// operands, f32 sums).
    Coop,
}

/// The kernel the automatic plan uses for 64 x 64 tiles.
const SMALL: Kernel = Kernel::Tile64;

impl Kernel {
    /// The kernel named `name` by [`GpuTensor::matmul_t_variant`] (`None`
    /// for "auto"), or an error naming the choices.
    fn by_name(name: &str) -> Result<Option<Kernel>> {
        match name {
            "auto" => Ok(None),
            "64" => Ok(Some(Kernel::Tile64)),
            "128" => Ok(Some(Kernel::Tile128)),
            "coop" => Ok(Some(Kernel::Coop)),
            _ => Err(Error::invalid(
                "matmul_t",
                format!("kernel must be \"auto\", \"64\", \"128\" or \"coop\", got {name:?}"),
            )),
        }
    }

    /// Output tile (rows, columns) per workgroup.
    fn tile(self) -> (usize, usize) {
        match self {
            Kernel::Tile64 => (64, 64),
            Kernel::Tile128 => (128, 128),
            Kernel::Coop => (128, 256),
        }
    }

    fn spec(self) -> &'static KernelSpec {
        match self {
            Kernel::Tile64 => &families::matmul::MATMUL_64,
            Kernel::Tile128 => &families::matmul::MATMUL_128,
            Kernel::Coop => &families::matmul::MATMUL_COOP,
        }
    }
}

/// How a product is computed: the kernel and the number of K splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    kernel: Kernel,
    splits: usize,
}

/// A kernel and/or split count forced by [`GpuTensor::matmul_t_variant`]
/// (`None` / 0: chosen by shape).
type Force = Option<(Option<Kernel>, usize)>;

impl GpuTensor {
    /// `torch.matmul`: 1-D operands are promoted to matrices (`[k]` ->
    /// `[1, k]` on the left, `[k, 1]` on the right) and the added dim is
    /// removed from the result; leading (batch) dims broadcast. Both f32.
    pub fn matmul(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.matmul_named(other, "matmul", None, false)
    }

    /// `matmul` of `self` and `other` after swapping the last two dims of
    /// `self` (if `trans_a`) and/or `other` (if `trans_b`). The swap only
    /// changes strides; nothing is copied. Transposed operands need at least
    /// 2 dims.
    pub fn matmul_t(&self, other: &GpuTensor, trans_a: bool, trans_b: bool) -> Result<GpuTensor> {
        self.matmul_t_forced(other, trans_a, trans_b, None, false)
    }

    /// [`matmul_t`](Self::matmul_t) of F32 operands whose values are all
    /// float16 values (widened F16 tensors): rounding them to f16 changes
    /// nothing, so large products may run on the f16 tensor cores (f32
    /// accumulation) whatever the matmul precision, with the numbers of
    /// the f32 kernels up to summation order. How F16 products (autocast's
    /// and `model.half()`'s) reach the tensor cores.
    pub fn matmul_t_f16_operands(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
    ) -> Result<GpuTensor> {
        self.matmul_t_forced(other, trans_a, trans_b, None, true)
    }

    /// [`matmul_t`](Self::matmul_t) with the kernel forced, for benchmarks
    /// and tests of each variant: `kernel` is "auto" (chosen by shape),
    /// "64" or "128" (the 64 x 64 / 128 x 128 tile kernels) or "coop" (the
    /// tensor-core kernel, whatever the matmul precision; an error where
    /// the device has no f16 tensor cores); `splits` is the number of K splits (0 chooses
    /// by shape; it is capped so that every split has at least one K step).
    #[doc(hidden)]
    pub fn matmul_t_variant(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
        kernel: &str,
        splits: usize,
    ) -> Result<GpuTensor> {
        let kernel = Kernel::by_name(kernel)?;
        self.matmul_t_forced(other, trans_a, trans_b, Some((kernel, splits)), false)
    }

    fn matmul_t_forced(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
        force: Force,
        f16_operands: bool,
    ) -> Result<GpuTensor> {
        const OP: &str = "matmul_t";
        let a = checks::matmul::operand_layout(OP, &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout(OP, &other.layout, trans_b)?;
        self.with_layout(a)
            .matmul_named(&other.with_layout(b), OP, force, f16_operands)
    }

    /// `f16_operands`: every operand value is a float16 value, so the
    /// tensor cores are exact on them whatever the matmul precision.
    fn matmul_named(
        &self,
        other: &GpuTensor,
        op: &'static str,
        force: Force,
        f16_operands: bool,
    ) -> Result<GpuTensor> {
        self.same_device(op, other)?;
        self.expect_dtype(op, DType::F32)?;
        other.expect_dtype(op, DType::F32)?;
        let shapes = checks::matmul::matmul(op, self.shape(), other.shape())?;
        let (m, k, n) = (shapes.m, shapes.k, shapes.n);
        let a = if self.rank() == 1 {
            self.layout.unsqueeze(0)?
        } else {
            self.layout.clone()
        };
        let b = if other.rank() == 1 {
            other.layout.unsqueeze(-1)?
        } else {
            other.layout.clone()
        };
        let out = self.empty_like_device(op, &shapes.out, DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        if k == 0 {
            // An empty sum: all zeros, and nothing of A or B to read.
            out.fill_words(0.0f32.to_bits())?;
            return Ok(out);
        }

        let a = a.expand(&shapes.batched(m, k))?;
        let b = b.expand(&shapes.batched(k, n))?;
        let batch = &shapes.batch;
        let count: usize = batch.iter().product();
        let limits = self.device().limits();
        let big_ok = limits.max_compute_workgroup_storage_size >= BIG_WORKGROUP_BYTES;
        let coop_ok = self.device().has_f16_tensor_cores()
            && limits.max_compute_workgroup_storage_size >= COOP_WORKGROUP_BYTES;
        if !coop_ok && matches!(force, Some((Some(Kernel::Coop), _))) {
            return Err(Error::invalid(
                op,
                format!(
                    "kernel \"coop\" needs f16 tensor cores (cooperative matrices), which {} lacks",
                    self.device().info().name
                ),
            ));
        }
        let coop = coop_ok && (f16_operands || matmul_precision() == MatmulPrecision::Medium);
        // Partial sums of all splits must fit one binding.
        let max_floats = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            / 4;
        let max_splits = usize::try_from(max_floats / (count * m * n) as u64).unwrap_or(usize::MAX);
        let plan = plan([count, m, n, k], big_ok, coop, max_splits, force);
        let k_chunk = k.div_ceil(plan.splits).next_multiple_of(SPLIT_ALIGN);
        // Recount: rounding the chunk up may leave fewer (never empty) splits.
        let splits = k.div_ceil(k_chunk);
        let imm = immediates(
            op,
            &a,
            &b,
            batch,
            [m, n, k],
            plan.kernel.tile(),
            k_chunk,
            splits,
        )?;
        // Walk each staged slice along the operand's unit-stride index so
        // neighbouring threads read neighbouring addresses.
        let r = a.rank();
        let constants = [
            (
                "A_M_FAST",
                flag(a.strides()[r - 2] == 1 && a.strides()[r - 1] != 1),
            ),
            (
                "B_K_FAST",
                flag(b.strides()[r - 2] == 1 && b.strides()[r - 1] != 1),
            ),
        ];
        let spec = plan.kernel.spec();
        let part = if splits > 1 {
            Some(self.empty_like_device(op, &[splits * count * m * n], DType::F32)?)
        } else {
            None
        };
        let target = part.as_ref().unwrap_or(&out);
        self.kernels().dispatch_groups(
            spec,
            &constants,
            &[&self.buffer, &other.buffer, &target.buffer],
            &imm,
            u64::from(imm.groups),
        )?;
        if let Some(part) = part {
            let numel = count * m * n;
            let sum = SumSplitsParams {
                numel: params::to_u32(op, "output element count", numel)?,
                splits: params::to_u32(op, "split count", splits)?,
            };
            self.kernels().dispatch_1d(
                &families::matmul::SUM_SPLITS,
                &[],
                &[&part.buffer, &out.buffer],
                &sum,
                numel as u64,
            )?;
        }
        Ok(out)
    }
}

/// An override constant's value for a 0/1 flag.
fn flag(on: bool) -> f64 {
    if on { 1.0 } else { 0.0 }
}

/// The kernel and K split for `count` products of `[m, k] x [k, n]`.
/// `big_ok`: the device has the 128 x 128 kernel's workgroup memory;
/// `coop`: products may run on the tensor cores (precision "medium" on a
/// device that has them);
/// `max_splits`: how many `[count, m, n]` partial results fit one binding;
/// `force`: a kernel and/or split count to use instead.
fn plan(
    [count, m, n, k]: [usize; 4],
    big_ok: bool,
    coop: bool,
    max_splits: usize,
    force: Force,
) -> Plan {
    let (force_kernel, force_splits) = force.unwrap_or((None, 0));
    let tiles = |(tm, tn): (usize, usize)| count * m.div_ceil(tm) * n.div_ceil(tn);
    let splits_for = |t: (usize, usize)| {
        if force_splits != 0 {
            force_splits
        } else if 2 * tiles(t) <= FILL_GROUPS {
            FILL_GROUPS
                .div_ceil(tiles(t))
                .min(k / MIN_SPLIT_K)
                .min(max_splits)
                .max(1)
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
    let kernel = if let Some(kernel) = force_kernel {
        kernel
    } else if coop
        && k >= 32
        && count * m * n * k >= COOP_MIN_MACS
        && m.next_multiple_of(128) * n.next_multiple_of(256) <= 2 * m * n
    {
        // Tensor cores for large products whose 128 x 256 tiles waste at
        // most half the work (so not for skinny outputs such as N = 10,
        // nor the small MLP's products, which stay f32).
        Kernel::Coop
    } else if big_ok && 4 * padded(128) <= 5 * padded(64) && tiles((128, 128)) >= FILL_GROUPS {
        Kernel::Tile128
    } else {
        SMALL
    };
    let splits = splits_for(kernel.tile());
    Plan { kernel, splits }
}

/// The kernel's immediate block for `a` (`batch + [m, k]`) times `b`
/// (`batch + [k, n]`), both already expanded to the broadcast batch, with
/// output tiles of `tile_m x tile_n` and K cut into `splits` chunks of `k_chunk`.
#[allow(clippy::too_many_arguments)]
fn immediates(
    op: &'static str,
    a: &Layout,
    b: &Layout,
    batch: &[usize],
    [m, n, k]: [usize; 3],
    (tile_m, tile_n): (usize, usize),
    k_chunk: usize,
    splits: usize,
) -> Result<MatmulParams> {
    // Every index the kernel forms stays below the operands' span ends and
    // the output's (or partial sums') element count; all must fit its 32-bit
    // arithmetic.
    params::to_u32(op, "operand extent", a.span_end())?;
    params::to_u32(op, "operand extent", b.span_end())?;
    let count: usize = batch.iter().product();
    params::to_u32(op, "output element count", splits * count * m * n)?;

    let dims = simplify_batch(
        batch,
        &a.strides()[..batch.len()],
        &b.strides()[..batch.len()],
    );
    let tiles_n = n.div_ceil(tile_n);
    let tiles_mn = tiles_n * m.div_ceil(tile_m);
    let groups = params::to_u32(op, "workgroup count", tiles_mn * count * splits)?;

    // Right-aligned: unused leading dims are size 1 with stride 0.
    let pad = KERNEL_BATCH_DIMS.checked_sub(dims.len()).ok_or_else(|| {
        Error::invalid(
            op,
            format!("{} batch dims exceed {KERNEL_BATCH_DIMS}", dims.len()),
        )
    })?;
    let mut batch = [1u32; KERNEL_BATCH_DIMS];
    let mut a_bstrides = [0u32; KERNEL_BATCH_DIMS];
    let mut b_bstrides = [0u32; KERNEL_BATCH_DIMS];
    for (i, &(size, sa, sb)) in dims.iter().enumerate() {
        let what = "batch size or stride";
        batch[pad + i] = params::to_u32(op, what, size)?;
        a_bstrides[pad + i] = params::to_u32(op, what, sa)?;
        b_bstrides[pad + i] = params::to_u32(op, what, sb)?;
    }
    let r = a.rank();
    Ok(MatmulParams {
        m: params::to_u32(op, "rows", m)?,
        n: params::to_u32(op, "columns", n)?,
        k: params::to_u32(op, "inner size", k)?,
        tiles_n: params::to_u32(op, "tile count", tiles_n)?,
        tiles_mn: params::to_u32(op, "tile count", tiles_mn)?,
        groups,
        a_offset: params::to_u32(op, "offset", a.offset())?,
        b_offset: params::to_u32(op, "offset", b.offset())?,
        a_rs: params::to_u32(op, "stride", a.strides()[r - 2])?,
        a_cs: params::to_u32(op, "stride", a.strides()[r - 1])?,
        b_rs: params::to_u32(op, "stride", b.strides()[r - 2])?,
        b_cs: params::to_u32(op, "stride", b.strides()[r - 1])?,
        batch,
        a_bstrides,
        b_bstrides,
        // Unsplit chunks are K itself (>= 1 here: K = 0 never dispatches).
        k_chunk: params::to_u32(op, "inner size", k_chunk.min(k))?,
        batches: params::to_u32(op, "batch count", count)?,
    })
}

/// Batch dims as `(size, a_stride, b_stride)`, row-major like the output,
/// with size-1 dims dropped and neighbours merged where both operands step
/// through them as one dim. The output is contiguous, so merging never
/// changes the order of the batch matrices. At most `KERNEL_BATCH_DIMS`.
fn simplify_batch(
    batch: &[usize],
    a_strides: &[usize],
    b_strides: &[usize],
) -> Vec<(usize, usize, usize)> {
    let mut dims: Vec<(usize, usize, usize)> = Vec::with_capacity(batch.len());
    for ((&size, &sa), &sb) in batch.iter().zip(a_strides).zip(b_strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(outer) if outer.1 == sa * size && outer.2 == sb * size => {
                *outer = (outer.0 * size, sa, sb);
            }
            _ => dims.push((size, sa, sb)),
        }
    }
    dims
}

#[cfg(test)]
mod tests {
    use super::{Kernel, Plan, plan, simplify_batch};

    #[test]
    fn plans_by_shape() {
        let pick = |shape: [usize; 4], big_ok, max_splits, force| {
            let Plan { kernel, splits } = plan(shape, big_ok, false, max_splits, force);
            (kernel.tile().0, splits)
        };
        let auto = |count, m, n, k| pick([count, m, n, k], true, usize::MAX, None);
        // Large outputs: 128 x 128 tiles, no split.
        assert_eq!(auto(1, 4096, 4096, 4096), (128, 1));
        assert_eq!(auto(1, 2048, 2048, 2048), (128, 1));
        // MLP-sized outputs (64 or 56 big tiles, 256 or 208 small ones):
        // small tiles fill the GPU without a split.
        assert_eq!(auto(1, 1024, 1024, 1024), (64, 1));
        assert_eq!(auto(1, 1024, 1024, 784), (64, 1));
        assert_eq!(auto(1, 1024, 784, 1024), (64, 1));
        // Skinny (N = 10), small or short-K outputs: 64 x 64 tiles.
        assert_eq!(auto(1, 128, 10, 256), (64, 2));
        assert_eq!(auto(1, 128, 256, 784), (64, 6));
        assert_eq!(auto(1, 64, 64, 64), (64, 1));
        assert_eq!(auto(1, 512, 512, 512), (64, 4));
        assert_eq!(auto(32, 256, 256, 64), (64, 1));
        // The automatic cases of the parity test odd_sizes_every_variant_relative_norm.
        assert_eq!(auto(2, 1024, 640, 512), (64, 1));
        assert_eq!(auto(1, 130, 140, 1000), (64, 7));
        assert_eq!(auto(3, 260, 250, 256), (64, 2));
        // No 128 kernel without its workgroup memory; splits capped by memory.
        assert_eq!(pick([1, 4096, 4096, 4096], false, 1, None), (64, 1));
        assert_eq!(pick([1, 512, 512, 4096], true, 2, None), (64, 2));
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
        let kernel = |shape| plan(shape, true, true, usize::MAX, None).kernel;
        assert_eq!(kernel([1, 4096, 4096, 4096]), Kernel::Coop);
        assert_eq!(kernel([1, 1024, 1024, 1024]), Kernel::Coop);
        assert_eq!(kernel([1, 8192, 1152, 384]), Kernel::Coop);
        assert_eq!(kernel([1, 1024, 1024, 784]), Kernel::Coop);
        // Skinny outputs, tiny K and small products stay on the f32 kernels.
        assert_eq!(kernel([1, 128, 10, 256]), Kernel::Tile64);
        assert_eq!(kernel([1, 1024, 1024, 16]), Kernel::Tile64);
        assert_eq!(kernel([1, 128, 256, 784]), Kernel::Tile64);
        // The whole batch counts: T2's [32, 256, 384] x [384, 1152] products.
        assert_eq!(kernel([32, 256, 1152, 384]), Kernel::Coop);
        assert_eq!(kernel([8, 1024, 768, 64]), Kernel::Coop);
        assert_ne!(kernel([2, 128, 256, 784]), Kernel::Coop);
        // Few tiles: split along K like the f32 kernels.
        let Plan { kernel, splits } = plan([1, 128, 256, 1 << 14], true, true, usize::MAX, None);
        assert_eq!((kernel, splits), (Kernel::Coop, 128));
    }

    #[test]
    fn batch_dims_merge_when_both_operands_allow() {
        // Contiguous a, broadcast b: both merge (b's strides are all 0).
        assert_eq!(
            simplify_batch(&[2, 3, 4], &[12 * 5, 4 * 5, 5], &[0, 0, 0]),
            vec![(24, 5, 0)]
        );
        // Alternating broadcast cannot merge; size-1 dims vanish.
        assert_eq!(
            simplify_batch(&[2, 1, 3], &[6, 6, 0], &[0, 0, 4]),
            vec![(2, 6, 0), (3, 0, 4)]
        );
        assert!(simplify_batch(&[1, 1], &[0, 0], &[0, 0]).is_empty());
    }
}
