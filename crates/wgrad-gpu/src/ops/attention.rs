//! Fused scaled-dot-product attention: one forward dispatch
//! (`kernels/attention/attention_forward.wgsl`) and two backward dispatches
//! (`attention_backward.wgsl`), flash-attention style: scores live in
//! workgroup tiles, never in memory, so the memory an attention needs is
//! its operands, its output and one log-sum-exp per query row, and the
//! backward recomputes the probabilities and score gradients tile by tile.
//! Opt-in ([`set_attention_saved_ds_limit`]): the backward may instead save
//! its score-gradient tiles (`O(T^2)` scratch, the causal half) so that its
//! dq pass is one tile product per tile pair, about 10% faster. Semantics
//! and checks: `wgrad_core::checks::attention`, the same as the CPU
//! reference.
//!
//! q, k and v are read through their strides (any batch strides, broadcast
//! batch dims included; a view whose last dim is not contiguous is copied
//! first), the mask through its broadcast strides (a `[L, S]` mask is read
//! in place for every batch item).

use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_core::checks::attention::{AttentionGeometry, MaskKind, OP};
use wgrad_core::shape::broadcast_strides;
use wgrad_core::{DType, Error, Layout, Result};
use wgrad_kernels::KernelSpec;
use wgrad_kernels::families::attention::{
    ATTENTION_BACKWARD_DKDV, ATTENTION_BACKWARD_DQ, ATTENTION_BACKWARD_DQ_SAVED,
    ATTENTION_BACKWARD_STATS, ATTENTION_FORWARD,
};

use super::attention_layout::{
    dense_empty, dense_view, outer_dims, packed_grads_len, rows_outer_order,
};
use crate::GpuTensor;
use crate::params::{AttentionParams, to_u32};

/// Rows of a workgroup's tile and columns of its output chunk.
const TILE: usize = 64;
/// Query rows per workgroup of `attention_backward_stats` (16 threads each).
const STATS_ROWS: usize = 8;
/// `FLAG_SAVE_DS` of kernels/common/attention.wgsl.
const FLAG_SAVE_DS: u32 = 16;
/// Host-side bits of the flags word that `attention_dispatch` turns into
/// the kernels' `ROWS_OUTER` and `GRADS_AS_INPUTS` pipeline constants
/// (kernels/common/attention.wgsl) and clears.
const FLAG_ROWS_OUTER: u32 = 1 << 30;
const FLAG_GRADS_AS_INPUTS: u32 = 1 << 31;
/// The most bytes the attention backward may spend on saved score-gradient
/// tiles. 0 by default: the fused attention keeps its memory `O(T)` per
/// query row (no `T x T` tensor), as FlashAttention does.
static SAVED_DS_LIMIT: AtomicU64 = AtomicU64::new(0);

/// Lets the attention backward save its score-gradient tiles when they fit
/// in `bytes` (and the device's binding limit), trading `O(T^2)` scratch
/// memory (the causal half: 136 MiB at B 8, H 8, T 1024) for a dq pass of
/// one tile product per tile pair instead of three (H100, causal B8 H8
/// T1024 D64 forward + backward: 2.90 -> 2.65 ms). 0, the default, always
/// recomputes them. Returns the previous limit; process-wide.
pub fn set_attention_saved_ds_limit(bytes: u64) -> u64 {
    SAVED_DS_LIMIT.swap(bytes, Ordering::Relaxed)
}
/// One of q, k, v as the kernels read it: the last dim contiguous, its
/// row stride, view offset and strides over the broadcast batch dims.
struct Operand {
    tensor: GpuTensor,
    row: usize,
    batch: Vec<usize>,
}

/// Error unless every element a view can reach has a 32-bit index.
fn check_reach(t: &GpuTensor) -> Result<()> {
    let reach = t
        .shape()
        .iter()
        .zip(t.strides())
        .try_fold(t.layout.offset(), |acc, (&d, &s)| {
            acc.checked_add(d.saturating_sub(1).checked_mul(s)?)
        });
    match reach {
        Some(r) if r <= u32::MAX as usize => Ok(()),
        _ => Err(Error::invalid(
            OP,
            format!(
                "operand of shape {:?} exceeds the GPU's 32-bit indexing",
                t.shape()
            ),
        )),
    }
}

impl Operand {
    /// `t` as read in place, or expanded to the full batch shape and
    /// copied when `materialize` (see [`merge_batch`]).
    fn new(t: &GpuTensor, g: &AttentionGeometry, materialize: bool) -> Result<Self> {
        t.expect_dtype(OP, DType::F32)?;
        let nb = t.rank() - 2;
        let tensor = if materialize {
            t.broadcast_to(&g.batched(t.shape()[nb], t.shape()[nb + 1]))?
                .contiguous()?
        } else if t.strides()[nb + 1] == 1 || t.shape()[nb + 1] <= 1 {
            t.clone()
        } else {
            t.contiguous()?
        };
        check_reach(&tensor)?;
        let nb = tensor.rank() - 2;
        let (shape, strides) = (tensor.shape(), tensor.strides());
        let batch = broadcast_strides(OP, &shape[..nb], &strides[..nb], &g.batch)?;
        Ok(Operand {
            row: strides[nb],
            batch,
            tensor,
        })
    }
}

/// The mask's strides broadcast to `[batch..., L, S]` (read in place), or
/// a contiguous expanded copy's when `materialize`.
fn mask_operand(
    m: &GpuTensor,
    g: &AttentionGeometry,
    materialize: bool,
) -> Result<(GpuTensor, Vec<usize>)> {
    let target = g.batched(g.q_len, g.kv_len);
    let m = if materialize {
        m.broadcast_to(&target)?.contiguous()?
    } else {
        m.clone()
    };
    check_reach(&m)?;
    let strides = broadcast_strides(OP, m.shape(), m.strides(), &target)?;
    Ok((m, strides))
}

/// The batch dims merged into at most two, `(outer, inner)`, as the
/// kernels unravel them: size-1 dims dropped, neighbours merged where
/// every operand's strides allow. Returns the inner size and each
/// operand's `[outer, inner]` strides, or `None` when more than two dims
/// remain (the caller then copies the operands to the full batch shape).
fn merge_batch(batch: &[usize], strides: &[&[usize]]) -> Option<(usize, Vec<[usize; 2]>)> {
    let mut dims: Vec<(usize, Vec<usize>)> = Vec::new();
    for (d, &size) in batch.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let here: Vec<usize> = strides.iter().map(|s| s[d]).collect();
        if let Some(last) = dims.last_mut()
            && last
                .1
                .iter()
                .zip(&here)
                .all(|(&outer, &inner)| outer == inner * size)
        {
            last.0 *= size;
            last.1 = here;
            continue;
        }
        dims.push((size, here));
    }
    let n = strides.len();
    match dims.as_slice() {
        [] => Some((1, vec![[0, 0]; n])),
        [(size, s)] => Some((*size, s.iter().map(|&x| [0, x]).collect())),
        [(_, outer), (size, inner)] => {
            Some((*size, (0..n).map(|i| [outer[i], inner[i]]).collect()))
        }
        _ => None,
    }
}

/// q, k, v (and the mask) as the kernels read them, with the immediates
/// every attention dispatch shares (`blocks`/`chunks` filled per kernel).
struct Prepared {
    q: GpuTensor,
    k: GpuTensor,
    v: GpuTensor,
    mask: Option<GpuTensor>,
    params: AttentionParams,
    /// ROWS_OUTER's outer batch dims, where it is set.
    rows_outer: Option<usize>,
}

fn prepare(
    g: &AttentionGeometry,
    q: &GpuTensor,
    k: &GpuTensor,
    v: &GpuTensor,
    mask: Option<&GpuTensor>,
) -> Result<Prepared> {
    let build = |materialize: bool| -> Result<Option<Prepared>> {
        let (qo, ko, vo) = (
            Operand::new(q, g, materialize)?,
            Operand::new(k, g, materialize)?,
            Operand::new(v, g, materialize)?,
        );
        let m = mask.map(|m| mask_operand(m, g, materialize)).transpose()?;
        let nb = g.batch.len();
        let mask_batch = m.as_ref().map_or(vec![0; nb], |(_, s)| s[..nb].to_vec());
        let Some((inner, merged)) =
            merge_batch(&g.batch, &[&qo.batch, &ko.batch, &vo.batch, &mask_batch])
        else {
            return Ok(None);
        };
        let u = |what, v| to_u32(OP, what, v);
        let pair =
            |s: [usize; 2]| -> Result<[u32; 2]> { Ok([u("stride", s[0])?, u("stride", s[1])?]) };
        let mut flags = 0u32;
        if g.is_causal {
            flags |= 1;
        }
        match g.mask {
            MaskKind::Boolean => flags |= 2,
            MaskKind::Additive => flags |= 4,
            MaskKind::None => {}
        }
        if g.dropout_p > 0.0 {
            flags |= 8;
        }
        // q's rows further apart than its inner batch items (q split out
        // of a [B, T, 3 C] projection and viewed as [B, H, T, D]): the
        // dense tensors take that order too, so that the caller's
        // transposes back to [B, T, H, D] copy nothing.
        let rows_outer = if inner > 1 && merged[0][1] > 0 && qo.row > merged[0][1] {
            outer_dims(&g.batch, inner)
        } else {
            None
        };
        if rows_outer.is_some() {
            flags |= FLAG_ROWS_OUTER;
        }
        // Outputs are indexed as (item * rows + row) * cols + col in 32 bits.
        for shape in [
            g.output_shape(),
            g.batched(g.q_len, g.head_dim),
            g.batched(g.kv_len, g.head_dim),
            g.batched(g.kv_len, g.v_dim),
        ] {
            u("element count", shape.iter().product())?;
        }
        let (mask_row, mask_col, mask_offset) = match &m {
            Some((t, s)) => (s[nb], s[nb + 1], t.layout.offset()),
            None => (0, 0, 0),
        };
        let params = AttentionParams {
            q_len: u("query length", g.q_len)?,
            kv_len: u("key length", g.kv_len)?,
            head_dim: u("feature size", g.head_dim)?,
            v_dim: u("value feature size", g.v_dim)?,
            scale: g.scale,
            flags,
            dropout_p: g.dropout_p,
            key0: g.dropout_keys[0],
            key1: g.dropout_keys[1],
            blocks: 0,
            chunks: 0,
            items: u("batch items", g.batch_items())?,
            inner: u("batch size", inner)?,
            q_row: u("stride", qo.row)?,
            k_row: u("stride", ko.row)?,
            v_row: u("stride", vo.row)?,
            mask_row: u("stride", mask_row)?,
            mask_col: u("stride", mask_col)?,
            q_offset: u("offset", qo.tensor.layout.offset())?,
            k_offset: u("offset", ko.tensor.layout.offset())?,
            v_offset: u("offset", vo.tensor.layout.offset())?,
            mask_offset: u("offset", mask_offset)?,
            q_batch: pair(merged[0])?,
            k_batch: pair(merged[1])?,
            v_batch: pair(merged[2])?,
            mask_batch: pair(merged[3])?,
        };
        Ok(Some(Prepared {
            q: qo.tensor,
            k: ko.tensor,
            v: vo.tensor,
            mask: m.map(|(t, _)| t),
            params,
            rows_outer,
        }))
    };
    match build(false)? {
        Some(p) => Ok(p),
        None => build(true)?.ok_or_else(|| Error::invalid(OP, "batch dims could not be merged")),
    }
}

/// Checks that every operand is on `q`'s device.
fn same_device(q: &GpuTensor, others: &[Option<&GpuTensor>]) -> Result<()> {
    others
        .iter()
        .flatten()
        .try_for_each(|t| q.same_device(OP, t))
}

impl GpuTensor {
    /// One dispatch of an attention kernel over `blocks x chunks x items`
    /// workgroups (nothing when that is 0).
    fn attention_dispatch(
        spec: &'static KernelSpec,
        mut p: AttentionParams,
        blocks: usize,
        chunks: usize,
        buffers: [&GpuTensor; 8],
    ) -> Result<()> {
        let groups = blocks * chunks * p.items as usize;
        if groups == 0 {
            return Ok(());
        }
        p.blocks = to_u32(OP, "block count", blocks)?;
        p.chunks = to_u32(OP, "chunk count", chunks)?;
        to_u32(OP, "workgroup count", groups)?;
        let set = |bit: u32| if p.flags & bit != 0 { 1.0 } else { 0.0 };
        let constants = [
            ("ROWS_OUTER", set(FLAG_ROWS_OUTER)),
            ("GRADS_AS_INPUTS", set(FLAG_GRADS_AS_INPUTS)),
        ];
        p.flags &= !(FLAG_ROWS_OUTER | FLAG_GRADS_AS_INPUTS);
        let bufs = buffers.map(|t| &t.buffer);
        buffers[0]
            .kernels()
            .dispatch_groups(spec, &constants, &bufs, &p, groups as u64)
    }

    /// The attention output `[batch..., L, Ev]` and each query row's
    /// log-sum-exp `[batch..., L]` (`-inf` where every key is masked).
    pub fn attention_forward(
        q: &GpuTensor,
        k: &GpuTensor,
        v: &GpuTensor,
        mask: Option<&GpuTensor>,
        g: &AttentionGeometry,
    ) -> Result<(GpuTensor, GpuTensor)> {
        same_device(q, &[Some(k), Some(v), mask])?;
        let prep = prepare(g, q, k, v, mask)?;
        let p = prep.params;
        let out = dense_empty(q, &g.output_shape(), prep.rows_outer)?;
        let lse = q.empty_like_device(OP, &g.lse_shape(), DType::F32)?;
        let (qt, kt, vt) = (&prep.q, &prep.k, &prep.v);
        let m = prep.mask.as_ref().unwrap_or(qt);
        Self::attention_dispatch(
            &ATTENTION_FORWARD,
            p,
            g.q_len.div_ceil(TILE),
            g.v_dim.div_ceil(TILE).max(1),
            [qt, kt, vt, m, qt, qt, &out, &lse],
        )?;
        Ok((out, lse))
    }

    /// Gradients of q, k and v, each dense in the broadcast batch shape
    /// (`[batch..., L, E]`, `[batch..., S, E]`, `[batch..., S, Ev]`;
    /// contiguous, or rows outside the inner batch dims as q's),
    /// given the forward's output and log-sum-exp and the output gradient.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        q: &GpuTensor,
        k: &GpuTensor,
        v: &GpuTensor,
        mask: Option<&GpuTensor>,
        out: &GpuTensor,
        lse: &GpuTensor,
        grad_out: &GpuTensor,
        g: &AttentionGeometry,
    ) -> Result<(GpuTensor, GpuTensor, GpuTensor)> {
        same_device(
            q,
            &[Some(k), Some(v), mask, Some(out), Some(lse), Some(grad_out)],
        )?;
        for t in [out, grad_out] {
            if t.shape() != g.output_shape().as_slice() {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: t.shape().to_vec(),
                    rhs: g.output_shape(),
                });
            }
        }
        let prep = prepare(g, q, k, v, mask)?;
        let p = prep.params;
        // delta_i = dO_i . O_i, the softmax backward's row term, next to
        // each row's log-sum-exp: [items, L, 2], one dispatch.
        let dense = prep.rows_outer;
        let dout = dense_view(grad_out, dense)?;
        let (out, lse) = (dense_view(out, dense)?, lse.contiguous()?);
        let stats = q.empty_like_device(OP, &[g.batch_items() * g.q_len * 2], DType::F32)?;
        Self::attention_dispatch(
            &ATTENTION_BACKWARD_STATS,
            p,
            g.q_len.div_ceil(STATS_ROWS),
            1,
            [&out, &lse, &out, &out, &dout, &out, &stats, &stats],
        )?;
        let (qt, kt, vt) = (&prep.q, &prep.k, &prep.v);
        let m = prep.mask.as_ref().unwrap_or(qt);
        let q_blocks = g.q_len.div_ceil(TILE);
        let kv_blocks = g.kv_len.div_ceil(TILE);
        let dq_chunks = g.head_dim.div_ceil(TILE);
        let dkdv_chunks = g.head_dim.max(g.v_dim).div_ceil(TILE);
        // The score-gradient tiles the dk/dv pass computes anyway, saved
        // for the dq pass (one tile product per tile pair instead of
        // three: docs/BENCHMARKS.md, "Fused attention"); causal: only the
        // tiles on or under the diagonal.
        let tiles = if g.is_causal {
            q_blocks * (q_blocks + 1) / 2
        } else {
            q_blocks * kv_blocks
        };
        // At least one vec2 (the dq pass reads the tiles as vec2s).
        let ds_floats = (g.batch_items() * tiles * TILE * TILE).max(2);
        let limits = q.device().limits();
        let max_bytes = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            .min(SAVED_DS_LIMIT.load(Ordering::Relaxed))
            .min(u64::from(u32::MAX));
        let save_ds = (ds_floats as u64) * 4 <= max_bytes;
        // The dk/dv and dq passes into dk, dv and dq (out0 and out1 of
        // each pass); saving the dS tiles, dk and dv share one buffer.
        let passes = |mut pp: AttentionParams,
                      dk: &GpuTensor,
                      dv: &GpuTensor,
                      dq: &GpuTensor|
         -> Result<()> {
            let ds = if save_ds {
                pp.flags |= FLAG_SAVE_DS;
                Some(q.empty_like_device(OP, &[ds_floats], DType::F32)?)
            } else {
                None
            };
            // Saving the dS tiles, they take the dk/dv pass's out1.
            let dkdv = [qt, kt, vt, m, &dout, &stats, dk, ds.as_ref().unwrap_or(dv)];
            Self::attention_dispatch(&ATTENTION_BACKWARD_DKDV, pp, kv_blocks, dkdv_chunks, dkdv)?;
            match &ds {
                Some(ds) => {
                    let saved = [kt, kt, kt, kt, kt, ds, dq, dq];
                    Self::attention_dispatch(
                        &ATTENTION_BACKWARD_DQ_SAVED,
                        pp,
                        q_blocks,
                        dq_chunks,
                        saved,
                    )
                }
                None => {
                    let recompute = [qt, kt, vt, m, &dout, &stats, dq, dq];
                    Self::attention_dispatch(
                        &ATTENTION_BACKWARD_DQ,
                        pp,
                        q_blocks,
                        dq_chunks,
                        recompute,
                    )
                }
            }
        };
        if let Some(len) = packed_grads_len(qt, kt, vt) {
            // q, k and v split out of one projection: their gradients fill
            // one buffer laid out as it (see GRADS_AS_INPUTS).
            let grads = q.empty_like_device(OP, &[len], DType::F32)?;
            let mut pp = p;
            pp.flags |= FLAG_GRADS_AS_INPUTS;
            passes(pp, &grads, &grads, &grads)?;
            let like = |t: &GpuTensor| grads.with_layout(t.layout.clone());
            return Ok((like(qt), like(kt), like(vt)));
        }
        let dq = dense_empty(q, &g.batched(g.q_len, g.head_dim), dense)?;
        if !save_ds {
            let dk = dense_empty(q, &g.batched(g.kv_len, g.head_dim), dense)?;
            let dv = dense_empty(q, &g.batched(g.kv_len, g.v_dim), dense)?;
            passes(p, &dk, &dv, &dq)?;
            return Ok((dq, dk, dv));
        }
        // dk and dv in one buffer (the kernels have no binding left).
        let (nk, nv) = (
            g.batched(g.kv_len, g.head_dim).iter().product::<usize>(),
            g.batched(g.kv_len, g.v_dim).iter().product::<usize>(),
        );
        let grads = q.empty_like_device(OP, &[(nk + nv).max(1)], DType::F32)?;
        passes(p, &grads, &grads, &dq)?;
        let part = |start: usize, len: usize, shape: Vec<usize>| -> Result<GpuTensor> {
            let layout = Layout::contiguous(&[(nk + nv).max(1)]).narrow(0, start, len)?;
            let (order, inverse) = match dense {
                Some(outer) => rows_outer_order(shape.len(), outer),
                None => (
                    (0..shape.len() as isize).collect(),
                    (0..shape.len() as isize).collect(),
                ),
            };
            let stored: Vec<isize> = order.iter().map(|&d| shape[d as usize] as isize).collect();
            let t = grads.with_layout(layout).reshape(&stored)?;
            Ok(t.with_layout(t.layout.permute(&inverse)?))
        };
        let dk = part(0, nk, g.batched(g.kv_len, g.head_dim))?;
        let dv = part(nk, nv, g.batched(g.kv_len, g.v_dim))?;
        Ok((dq, dk, dv))
    }
}
