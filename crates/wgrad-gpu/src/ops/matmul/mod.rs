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
//! Bias (`linear`, in `linear.rs`): every kernel adds a bias row to the
//! finished sums in its store (the `HAS_BIAS` override, an extra binding);
//! a split product leaves it to `sum_splits.wgsl`, which adds it once after
//! the splits. Either way each output is the product's f32 sum plus the
//! bias rounded once, as `matmul` then `add` computes it.
//!
//! Batch dims: the broadcast batch dims are first simplified (size-1 dims
//! dropped, neighbours merged where both operands step through them as one),
//! then passed as up to 4 dims with per-operand strides (0 where broadcast).
//! With `MAX_RANK` = 6 an operand has at most 4 batch dims, so every product
//! fits the immediate block and no operand ever needs a contiguous copy.

use wgrad_core::checks::matmul::MatmulShape;
use wgrad_core::precision::{MatmulPrecision, matmul_precision};
use wgrad_core::{DType, Error, Layout, MAX_RANK, Result, UnaryOp, checks};

use crate::GpuTensor;
use crate::params::{self, SumSplitsParams};

mod immediates;
mod linear;
mod plan;
mod relu_grad;
mod skinny;
pub(crate) mod sum_splits;

use immediates::immediates;
use plan::{Force, Kernel, plan};
use skinny::SkinnyLayout;

/// Batch dims the kernel's immediate block carries.
const KERNEL_BATCH_DIMS: usize = 4;
// Every product's batch dims must fit the kernel (see the module docs).
const _: () = assert!(MAX_RANK - 2 <= KERNEL_BATCH_DIMS);

/// Split chunks are multiples of both kernels' K step.
const SPLIT_ALIGN: usize = 16;
/// Workgroup memory of `matmul_32.wgsl` (2 operands x 2 buffers x 288 vec4).
const TINY_WORKGROUP_BYTES: u32 = 2 * 2 * 288 * 16;
/// Workgroup memory of `matmul_128.wgsl` (2 operands x 2 buffers x 264 vec4).
const BIG_WORKGROUP_BYTES: u32 = 2 * 2 * 264 * 16;
/// Workgroup memory of `matmul_coop.wgsl`: the f16 tiles (128 x 40 and
/// 32 x 264 halves) and the f32 edge tiles (8 x 256).
const COOP_WORKGROUP_BYTES: u32 = (128 * 40 + 32 * 264) * 2 + 8 * 256 * 4;

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

    /// [`matmul_t`](Self::matmul_t) on the f32 kernels whatever the matmul
    /// precision (the Winograd convolutions' products).
    pub(crate) fn matmul_t_f32_sums(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
    ) -> Result<GpuTensor> {
        const OP: &str = "matmul_t";
        let a = checks::matmul::operand_layout(OP, &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout(OP, &other.layout, trans_b)?;
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        let extras = Extras {
            f32_sums: true,
            ..Extras::default()
        };
        self.product(&a, other, &b, &shapes, OP, extras)
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
    /// "32", "64", "64lean" (64 x 64 tiles on 128 threads), "128x64",
    /// "128" (the tile kernels), "skinny", "thin" or "coop" (the
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
        let extras = Extras {
            force,
            f16_operands,
            bias: None,
            row_sums: false,
            relu: false,
            a_relu_mask: None,
            out_relu_mask: None,
            f32_sums: false,
        };
        self.product(&a, other, &b, &shapes, op, extras)
    }

    /// [`matmul_t`](Self::matmul_t) of two matrices, and the row sums of the
    /// left operand (after its transpose): `(A @ B, A @ 1)`, `[m, n]` and
    /// `[m]`. `linear`'s weight and bias gradients (`g^T x` and `g^T 1`).
    /// Where it pays (see `row_sums_pay`) both come out of one pass, B
    /// given a virtual column of ones, as two dense views of one buffer;
    /// otherwise from the product and a sum.
    pub fn matmul_t_with_row_sums(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
    ) -> Result<(GpuTensor, GpuTensor)> {
        self.row_sums_product(other, trans_a, trans_b, None)
    }

    /// [`matmul_t_with_row_sums`](Self::matmul_t_with_row_sums) of A masked
    /// by `relu_mask` (see `relu_grad.rs`), whose layout the caller checked
    /// equals `self`'s.
    fn row_sums_product(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
        relu_mask: Option<&GpuTensor>,
    ) -> Result<(GpuTensor, GpuTensor)> {
        const OP: &str = "matmul_t_with_row_sums";
        if self.rank() != 2 || other.rank() != 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "needs two matrices, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.same_device(OP, other)?;
        self.expect_dtype(OP, DType::F32)?;
        other.expect_dtype(OP, DType::F32)?;
        let a = checks::matmul::operand_layout(OP, &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout(OP, &other.layout, trans_b)?;
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        if !row_sums_pay(shapes.m, shapes.n, shapes.k) {
            let masked = match relu_mask {
                Some(out) => self.unary_backward(out, UnaryOp::Relu)?,
                None => self.clone(),
            };
            let product = masked.matmul_t(other, trans_a, trans_b)?;
            // `masked` may be a fresh tensor: its own layout, transposed.
            let sums = masked.row_sums(&checks::matmul::operand_layout(
                OP,
                &masked.layout,
                trans_a,
            )?)?;
            return Ok((product, sums));
        }
        let extras = Extras {
            row_sums: true,
            a_relu_mask: relu_mask,
            ..Extras::default()
        };
        let flat = self.product(&a, other, &b, &shapes, OP, extras)?;
        let (m, n) = (shapes.m, shapes.n);
        let product = flat
            .narrow(0, 0, m * n)?
            .reshape(&[m as isize, n as isize])?;
        let sums = flat.narrow(0, m * n, m)?;
        Ok((product, sums))
    }

    /// The products `a @ b` of `shapes` (`a` a layout of `self`'s buffer,
    /// `b` of `other`'s, both at least 2-D: 1-D operands already promoted)
    /// into a fresh contiguous tensor of shape `shapes.out`, plus the bias
    /// row of `extras` on every output row.
    fn product(
        &self,
        a: &Layout,
        other: &GpuTensor,
        b: &Layout,
        shapes: &MatmulShape,
        op: &'static str,
        extras: Extras<'_>,
    ) -> Result<GpuTensor> {
        let (m, k, n) = (shapes.m, shapes.k, shapes.n);
        let row_sums = extras.row_sums && shapes.batch.iter().product::<usize>() == 1;
        if extras.row_sums && !row_sums {
            return Err(Error::invalid(op, "row sums need an unbatched product"));
        }
        // With row sums the kernels see one more column (B's ones).
        let n_kernel = n + usize::from(row_sums);
        let out = if row_sums {
            self.empty_like_device(op, &[m * n_kernel], DType::F32)?
        } else {
            self.empty_like_device(op, &shapes.out, DType::F32)?
        };
        if out.numel() == 0 {
            return Ok(out);
        }
        if k == 0 && row_sums {
            out.fill_words(0.0f32.to_bits())?;
            return Ok(out);
        }
        if k == 0 {
            // An empty sum: all zeros (or the bias), and nothing of A or B to read.
            match extras.bias {
                Some(bias) => bias
                    .with_layout(bias.layout.expand(&shapes.out)?)
                    .copy_into(&out)?,
                None => out.fill_words(0.0f32.to_bits())?,
            }
            return if extras.relu {
                out.unary(UnaryOp::Relu)
            } else {
                Ok(out)
            };
        }

        let a = a.expand(&shapes.batched(m, k))?;
        let b = b.expand(&shapes.batched(k, n))?;
        let batch = &shapes.batch;
        let count: usize = batch.iter().product();
        let limits = self.device().limits();
        let big_ok = limits.max_compute_workgroup_storage_size >= BIG_WORKGROUP_BYTES;
        let tiny_ok = limits.max_compute_workgroup_storage_size >= TINY_WORKGROUP_BYTES;
        let coop_ok = self.device().has_f16_tensor_cores()
            && limits.max_compute_workgroup_storage_size >= COOP_WORKGROUP_BYTES;
        if !coop_ok && matches!(extras.force, Some((Some(Kernel::Coop), _))) {
            return Err(Error::invalid(
                op,
                format!(
                    "kernel \"coop\" needs f16 tensor cores (cooperative matrices), which {} lacks",
                    self.device().info().name
                ),
            ));
        }
        // The tensor-core kernel has no ones column.
        let coop = coop_ok
            && !row_sums
            && extras.a_relu_mask.is_none()
            && extras.out_relu_mask.is_none()
            && !extras.f32_sums
            && (extras.f16_operands || matmul_precision() == MatmulPrecision::Medium);
        // Partial sums of all splits must fit one binding.
        let max_floats = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            / 4;
        let max_splits =
            usize::try_from(max_floats / (count * m * n_kernel) as u64).unwrap_or(usize::MAX);
        let plan = plan(
            [count, m, n_kernel, k],
            big_ok,
            tiny_ok,
            coop,
            max_splits,
            extras.force,
        );
        let skinny = if plan.kernel == Kernel::Skinny {
            Some(SkinnyLayout::of(op, &a, &b, m, n_kernel)?)
        } else {
            None
        };
        let tile = skinny.map_or(plan.kernel.tile(), |s| s.tile());
        let k_chunk = k.div_ceil(plan.splits).next_multiple_of(SPLIT_ALIGN);
        // Recount: rounding the chunk up may leave fewer (never empty) splits.
        let splits = k.div_ceil(k_chunk);
        let bias = extras.bias.map(|t| bias_row(op, t)).transpose()?;
        // The tensor-core kernel has no ReLU epilogue: a pass after it.
        let relu_in_kernel = extras.relu && plan.kernel != Kernel::Coop;
        let mut imm = immediates(op, &a, &b, batch, [m, n_kernel, k], tile, k_chunk, splits)?;
        if let Some((_, offset, stride)) = bias {
            (imm.bias_offset, imm.bias_stride) = (offset, stride);
        }
        // Any buffer fills the bias binding of a product without one; a
        // ReLU mask takes it (at most one of the three in a product).
        let binding3 = [
            bias.map(|(t, ..)| t),
            extras.a_relu_mask,
            extras.out_relu_mask,
        ];
        if binding3.iter().flatten().count() > 1 || (extras.out_relu_mask.is_some() && row_sums) {
            return Err(Error::invalid(
                op,
                "two epilogues of binding 3 in one product",
            ));
        }
        let bias_tensor = binding3.into_iter().flatten().next().unwrap_or(self);
        if let Some(mask) = extras.out_relu_mask {
            imm.bias_offset = params::to_u32(op, "offset", mask.layout.offset())?;
        }
        // Walk each staged slice along the operand's unit-stride index so
        // neighbouring threads read neighbouring addresses. With split K the
        // bias waits for the sum of the splits (sum_splits adds it once).
        let r = a.rank();
        let mut constants = vec![
            (
                "A_M_FAST",
                flag(a.strides()[r - 2] == 1 && a.strides()[r - 1] != 1),
            ),
            (
                "B_K_FAST",
                flag(b.strides()[r - 2] == 1 && b.strides()[r - 1] != 1),
            ),
            ("HAS_BIAS", flag(bias.is_some() && splits == 1)),
            ("ONES_COLUMN", flag(row_sums)),
            ("ACT_RELU", flag(relu_in_kernel && splits == 1)),
            ("A_RELU_MASK", flag(extras.a_relu_mask.is_some())),
            (
                "OUT_RELU_MASK",
                flag(extras.out_relu_mask.is_some() && splits == 1),
            ),
        ];
        if let Some(skinny) = skinny {
            constants.extend(skinny.constants());
        }
        let spec = plan.kernel.spec();
        let part = if splits > 1 {
            Some(self.empty_like_device(op, &[splits * count * m * n_kernel], DType::F32)?)
        } else {
            None
        };
        let target = part.as_ref().unwrap_or(&out);
        self.kernels().dispatch_groups(
            spec,
            &constants,
            &[
                &self.buffer,
                &other.buffer,
                &target.buffer,
                &bias_tensor.buffer,
            ],
            &imm,
            u64::from(imm.groups),
        )?;
        if let Some(part) = part {
            let numel = count * m * n_kernel;
            let sum = SumSplitsParams {
                numel: params::to_u32(op, "output element count", numel)?,
                splits: params::to_u32(op, "split count", splits)?,
                n: params::to_u32(op, "columns", n_kernel)?,
                bias_offset: imm.bias_offset,
                bias_stride: imm.bias_stride,
            };
            sum_splits::dispatch(
                self,
                &[
                    ("HAS_BIAS", flag(bias.is_some())),
                    ("ACT_RELU", flag(relu_in_kernel)),
                    ("OUT_RELU_MASK", flag(extras.out_relu_mask.is_some())),
                ],
                [&part, &out, bias_tensor],
                &sum,
            )?;
        }
        if extras.relu && !relu_in_kernel {
            return out.unary(UnaryOp::Relu);
        }
        Ok(out)
    }
}

/// Whether B's ones column is cheaper than a separate row-sum pass: when
/// it fits in the last column tile (N not a multiple of the 64-wide tiles,
/// so of neither kernel's), or when the tile column it adds (at most 128
/// wide) costs fewer than 2^26 multiply-adds, a few microseconds, about
/// what the pass's dispatch and read of A cost (the MLPs' and the CNN's
/// layers; not T2's, whose long K makes the column cost more).
fn row_sums_pay(m: usize, n: usize, k: usize) -> bool {
    const PASS_MACS: usize = 1 << 26;
    !n.is_multiple_of(64) || m.saturating_mul(k).saturating_mul(128) <= PASS_MACS
}

/// What a product may do besides `a @ b`.
#[derive(Clone, Copy, Debug, Default)]
struct Extras<'a> {
    /// A kernel and/or split count to use instead of the shape's plan.
    force: Force,
    /// Every operand value is a float16 value (the tensor cores are exact).
    f16_operands: bool,
    /// A 1-D F32 `[n]` view (stride 0 for one value) added to every output
    /// row after the sum (`linear`), on the operands' device.
    bias: Option<&'a GpuTensor>,
    /// Also the row sums of A (unbatched products only): the output buffer
    /// holds the `[m, n]` product followed by the `[m]` sums (the kernels'
    /// ONES_COLUMN).
    row_sums: bool,
    /// ReLU on the output after the bias (a `Linear` followed by `ReLU`):
    /// in the store or the split-K sum (ACT_RELU); a separate pass after
    /// the tensor-core kernel, which has no such epilogue.
    relu: bool,
    /// A fused `Linear` + ReLU's output, laid out as A's source: A is
    /// masked by ReLU's gradient as it loads (A_RELU_MASK; never with a
    /// bias; keeps the product off the tensor-core kernel).
    a_relu_mask: Option<&'a GpuTensor>,
    /// A ReLU's output, contiguous with the product's shape: each output
    /// is zeroed where it is +0.0 (OUT_RELU_MASK; never with a bias, row
    /// sums or `a_relu_mask`; keeps the product off the tensor-core kernel).
    out_relu_mask: Option<&'a GpuTensor>,
    /// Keep the product on the f32 kernels whatever the matmul precision
    /// (a convolution's Winograd product, which the implicit-GEMM
    /// convolutions it stands in for never put on the tensor cores).
    f32_sums: bool,
}

/// The bias view `t` with the offset and column stride the kernels index it
/// by, checked to fit their 32-bit arithmetic.
fn bias_row<'a>(op: &'static str, t: &'a GpuTensor) -> Result<(&'a GpuTensor, u32, u32)> {
    params::to_u32(op, "bias extent", t.layout.span_end())?;
    let stride = t.layout.strides().first().copied().unwrap_or(0);
    Ok((
        t,
        params::to_u32(op, "offset", t.layout.offset())?,
        params::to_u32(op, "stride", stride)?,
    ))
}

/// An override constant's value for a 0/1 flag.
fn flag(on: bool) -> f64 {
    if on { 1.0 } else { 0.0 }
}
