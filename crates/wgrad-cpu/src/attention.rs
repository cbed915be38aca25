//! Scaled dot-product attention on the CPU: the reference for the fused GPU
//! kernels, with the semantics of `wgrad_core::checks::attention`.
//!
//! Each batch item runs independently (over threads when there is enough
//! work), in blocks of [`ROW_BLOCK`] query rows: the block's scores come
//! from one GEMM against all keys, are biased, soft-maxed and dropped out
//! in place, then multiplied into the values with a second GEMM. So the
//! scratch is `ROW_BLOCK x S` per thread, never the whole `L x S` matrix
//! of every item. The forward saves each row's log-sum-exp; the backward
//! recomputes the probabilities from it (as the GPU kernels do) and
//! accumulates the key and value gradients over the row blocks.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use wgrad_core::checks::attention::{AttentionGeometry, MaskKind, OP, dropout_keep};
use wgrad_core::shape::{broadcast_strides, contiguous_strides};
use wgrad_core::{DType, Error, Result, math};

use crate::alloc::{checked_len, try_zeroed, zeroed};
use crate::dense::Dense;
use crate::parallel;
use crate::softmax::{lane_max, lane_sum};
use crate::tensor::{CpuTensor, expect_dtype, internal};

/// Query rows whose scores are held at once.
const ROW_BLOCK: usize = 64;

/// One of q, k, v (or an output gradient) as a dense row-major copy and
/// the element offset of every batch item's `[rows, cols]` matrix.
struct Operand<'a> {
    data: Dense<'a, f32>,
    items: Vec<usize>,
    rows: usize,
    cols: usize,
}

impl<'a> Operand<'a> {
    fn new(t: &'a CpuTensor, g: &AttentionGeometry) -> Result<Self> {
        expect_dtype(OP, t, DType::F32)?;
        let shape = t.shape();
        let nb = shape.len() - 2;
        let strides = contiguous_strides(shape);
        let batch_strides = broadcast_strides(OP, &shape[..nb], &strides[..nb], &g.batch)?;
        Ok(Operand {
            data: t.dense::<f32>(OP)?,
            items: item_offsets(&g.batch, &batch_strides),
            rows: shape[nb],
            cols: shape[nb + 1],
        })
    }

    fn matrix(&self, item: usize) -> Result<ArrayView2<'_, f32>> {
        let start = self.items[item];
        let len = self.rows * self.cols;
        ArrayView2::from_shape((self.rows, self.cols), &self.data[start..start + len])
            .map_err(internal)
    }
}

/// The mask, dense, with its strides broadcast to `[batch..., L, S]`.
enum MaskData<'a> {
    None,
    Boolean(Dense<'a, u32>),
    Additive(Dense<'a, f32>),
}

struct Mask<'a> {
    data: MaskData<'a>,
    items: Vec<usize>,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> Mask<'a> {
    fn new(mask: Option<&'a CpuTensor>, g: &AttentionGeometry) -> Result<Self> {
        let Some(m) = mask else {
            return Ok(Mask {
                data: MaskData::None,
                items: vec![0; g.batch_items()],
                row_stride: 0,
                col_stride: 0,
            });
        };
        let data = match g.mask {
            MaskKind::Boolean => MaskData::Boolean(m.dense::<u32>(OP)?),
            MaskKind::Additive => MaskData::Additive(m.dense::<f32>(OP)?),
            MaskKind::None => MaskData::None,
        };
        let shape = m.shape();
        let target = g.batched(g.q_len, g.kv_len);
        let strides = broadcast_strides(OP, shape, &contiguous_strides(shape), &target)?;
        let nb = g.batch.len();
        Ok(Mask {
            data,
            items: item_offsets(&g.batch, &strides[..nb]),
            row_stride: strides[nb],
            col_stride: strides[nb + 1],
        })
    }

    /// The bias of score `(i, j)` of `item`: the additive value, or 0 /
    /// -inf for a boolean mask (causality is applied by the caller).
    fn bias(&self, item: usize, i: usize, j: usize) -> f32 {
        let at = self.items[item] + i * self.row_stride + j * self.col_stride;
        match &self.data {
            MaskData::None => 0.0,
            MaskData::Boolean(b) if b[at] != 0 => 0.0,
            MaskData::Boolean(_) => f32::NEG_INFINITY,
            MaskData::Additive(a) => a[at],
        }
    }
}

/// Element offset of every batch item given the operand's broadcast batch
/// strides (row-major order of the batch shape).
fn item_offsets(batch: &[usize], strides: &[usize]) -> Vec<usize> {
    let mut offsets = vec![0usize];
    for (&size, &stride) in batch.iter().zip(strides) {
        offsets = offsets
            .iter()
            .flat_map(|&o| (0..size).map(move |c| o + c * stride))
            .collect();
    }
    offsets
}

/// The keys query rows `r0..r0 + rows` can see at all: under a causal mask
/// none past the block's last row (its later keys are -inf in every row
/// and get exactly zero weight), so the block's products and loops stop
/// there, as PyTorch's flash kernels skip the masked key blocks.
fn visible_keys(g: &AttentionGeometry, r0: usize, rows: usize) -> usize {
    if g.is_causal {
        g.kv_len.min(r0 + rows)
    } else {
        g.kv_len
    }
}

/// Scores of query rows `r0..r0 + rows` of `item` against its first `cols`
/// keys, biased, in `s` (`rows x cols`): `scale * q . k + bias`, -inf where
/// masked or causal.
#[allow(clippy::too_many_arguments)]
fn biased_scores(
    g: &AttentionGeometry,
    mask: &Mask,
    item: usize,
    q: ArrayView2<f32>,
    k: ArrayView2<f32>,
    r0: usize,
    cols: usize,
    s: &mut [f32],
) -> Result<()> {
    let rows = q.nrows();
    if cols == 0 {
        return Ok(());
    }
    let mut sm = ArrayViewMut2::from_shape((rows, cols), s).map_err(internal)?;
    let keys = k.slice(ndarray::s![..cols, ..]);
    general_mat_mul(g.scale, &q, &keys.t(), 0.0, &mut sm);
    for (r, row) in s.chunks_mut(cols).enumerate() {
        let i = r0 + r;
        if g.is_causal && i + 1 < cols {
            row[i + 1..].fill(f32::NEG_INFINITY);
        }
        if !matches!(mask.data, MaskData::None) {
            let seen = if g.is_causal { (i + 1).min(cols) } else { cols };
            for (j, x) in row[..seen].iter_mut().enumerate() {
                *x += mask.bias(item, i, j);
            }
        }
    }
    Ok(())
}

/// Multiplies every kept weight by `1 / (1 - p)` and zeroes the dropped.
fn apply_dropout(g: &AttentionGeometry, item: usize, i: usize, row: &mut [f32]) {
    if g.dropout_p <= 0.0 {
        return;
    }
    let keep_scale = 1.0 / (1.0 - g.dropout_p);
    for (j, x) in row.iter_mut().enumerate() {
        *x = if dropout_keep(g, item, i, j) {
            *x * keep_scale
        } else {
            0.0
        };
    }
}

/// `items` consecutive chunks of `len` elements of `v` (empty chunks when
/// `len` is 0, unlike `chunks_mut`).
fn split_items(mut v: &mut [f32], items: usize, len: usize) -> Vec<&mut [f32]> {
    let mut out = Vec::with_capacity(items);
    for _ in 0..items {
        let (head, tail) = std::mem::take(&mut v).split_at_mut(len);
        out.push(head);
        v = tail;
    }
    out
}

/// Runs `f` for every batch item with its output chunks and a scratch
/// vector of `scratch_len` floats (one per task, reused by its items:
/// every item overwrites what it reads of it), over threads when `work`
/// is large; the first error wins.
fn for_each_item<T: Send>(
    chunks: Vec<T>,
    work: usize,
    scratch_len: usize,
    f: impl Fn(usize, T, &mut [f32]) -> Result<()> + Sync,
) -> Result<()> {
    if chunks.len() > 1 && parallel::worth_splitting(work) {
        // Rayon calls `init` once per split of the items, not per item.
        let r = chunks.into_par_iter().enumerate().try_for_each_init(
            || zeroed::<f32>(scratch_len),
            |scratch, (i, c)| match scratch {
                Ok(scratch) => f(i, c, scratch),
                Err(e) => Err(e.during(OP)),
            },
        );
        parallel::keep_warm();
        r
    } else {
        let mut scratch = try_zeroed::<f32>(OP, scratch_len)?;
        chunks
            .into_iter()
            .enumerate()
            .try_for_each(|(i, c)| f(i, c, &mut scratch))
    }
}

impl CpuTensor {
    /// The attention output `[batch..., L, Ev]` and each query row's
    /// log-sum-exp of its biased scores `[batch..., L]` (`-inf` for a row
    /// with every key masked), for the backward.
    pub fn attention_forward(
        q: &CpuTensor,
        k: &CpuTensor,
        v: &CpuTensor,
        mask: Option<&CpuTensor>,
        g: &AttentionGeometry,
    ) -> Result<(CpuTensor, CpuTensor)> {
        let (qo, ko, vo) = (
            Operand::new(q, g)?,
            Operand::new(k, g)?,
            Operand::new(v, g)?,
        );
        let mask = Mask::new(mask, g)?;
        let (l, s, ev) = (g.q_len, g.kv_len, g.v_dim);
        let mut out = try_zeroed::<f32>(OP, checked_len(OP, &g.output_shape())?)?;
        let mut lse = try_zeroed::<f32>(OP, checked_len(OP, &g.lse_shape())?)?;
        if l > 0 {
            let items = g.batch_items();
            let chunks: Vec<_> = split_items(&mut out, items, l * ev)
                .into_iter()
                .zip(split_items(&mut lse, items, l))
                .collect();
            let work = g.batch_items() * l * s * (g.head_dim + ev);
            for_each_item(chunks, work, ROW_BLOCK.min(l) * s, |item, (o, lse), p| {
                let (qm, km, vm) = (qo.matrix(item)?, ko.matrix(item)?, vo.matrix(item)?);
                for r0 in (0..l).step_by(ROW_BLOCK) {
                    let rows = ROW_BLOCK.min(l - r0);
                    let cols = visible_keys(g, r0, rows);
                    let mut ob =
                        ArrayViewMut2::from_shape((rows, ev), &mut o[r0 * ev..(r0 + rows) * ev])
                            .map_err(internal)?;
                    if cols == 0 {
                        // No key at all: zero outputs, -inf log-sum-exps.
                        lse[r0..r0 + rows].fill(f32::NEG_INFINITY);
                        ob.fill(0.0);
                        continue;
                    }
                    let p = &mut p[..rows * cols];
                    let qb = qm.slice(ndarray::s![r0..r0 + rows, ..]);
                    biased_scores(g, &mask, item, qb, km, r0, cols, p)?;
                    for r in 0..rows {
                        let row = &mut p[r * cols..(r + 1) * cols];
                        let m = lane_max(row);
                        if m == f32::NEG_INFINITY {
                            row.fill(0.0);
                            lse[r0 + r] = f32::NEG_INFINITY;
                            continue;
                        }
                        row.iter_mut().for_each(|x| *x = math::exp(*x - m));
                        let sum = lane_sum(row);
                        lse[r0 + r] = m + sum.ln();
                        let inv = 1.0 / sum;
                        row.iter_mut().for_each(|x| *x *= inv);
                        apply_dropout(g, item, r0 + r, row);
                    }
                    let pm = ArrayView2::from_shape((rows, cols), &*p).map_err(internal)?;
                    let values = vm.slice(ndarray::s![..cols, ..]);
                    general_mat_mul(1.0, &pm, &values, 0.0, &mut ob);
                }
                Ok(())
            })?;
        }
        Ok((
            CpuTensor::from_vec(out, &g.output_shape())?,
            CpuTensor::from_vec(lse, &g.lse_shape())?,
        ))
    }

    /// Gradients of q, k and v (each in the broadcast batch shape:
    /// `[batch..., L, E]`, `[batch..., S, E]`, `[batch..., S, Ev]`) given
    /// the forward's output and log-sum-exp and the output gradient.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        q: &CpuTensor,
        k: &CpuTensor,
        v: &CpuTensor,
        mask: Option<&CpuTensor>,
        out: &CpuTensor,
        lse: &CpuTensor,
        grad_out: &CpuTensor,
        g: &AttentionGeometry,
    ) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
        let (qo, ko, vo) = (
            Operand::new(q, g)?,
            Operand::new(k, g)?,
            Operand::new(v, g)?,
        );
        let (oo, go) = (Operand::new(out, g)?, Operand::new(grad_out, g)?);
        expect_dtype(OP, lse, DType::F32)?;
        let lse = lse.dense::<f32>(OP)?;
        if lse.len() != g.batch_items() * g.q_len {
            return Err(Error::invalid(OP, "saved log-sum-exp has the wrong size"));
        }
        let mask = Mask::new(mask, g)?;
        let (l, s, e, ev) = (g.q_len, g.kv_len, g.head_dim, g.v_dim);
        let dq_shape = g.batched(l, e);
        let dk_shape = g.batched(s, e);
        let dv_shape = g.batched(s, ev);
        let mut dq = try_zeroed::<f32>(OP, checked_len(OP, &dq_shape)?)?;
        let mut dk = try_zeroed::<f32>(OP, checked_len(OP, &dk_shape)?)?;
        let mut dv = try_zeroed::<f32>(OP, checked_len(OP, &dv_shape)?)?;
        if l > 0 && s > 0 {
            let items = g.batch_items();
            let chunks: Vec<_> = split_items(&mut dq, items, l * e)
                .into_iter()
                .zip(split_items(&mut dk, items, s * e))
                .zip(split_items(&mut dv, items, s * ev))
                .collect();
            let work = g.batch_items() * l * s * (2 * e + 2 * ev);
            let keep_scale = 1.0 / (1.0 - g.dropout_p);
            let block = ROW_BLOCK.min(l) * s;
            for_each_item(
                chunks,
                work,
                2 * block,
                |item, ((dqi, dki), dvi), scratch| {
                    let (qm, km, vm) = (qo.matrix(item)?, ko.matrix(item)?, vo.matrix(item)?);
                    let (om, gm) = (oo.matrix(item)?, go.matrix(item)?);
                    let mut dkm = ArrayViewMut2::from_shape((s, e), dki).map_err(internal)?;
                    let mut dvm = ArrayViewMut2::from_shape((s, ev), dvi).map_err(internal)?;
                    let (p, dp) = scratch.split_at_mut(block);
                    for r0 in (0..l).step_by(ROW_BLOCK) {
                        let rows = ROW_BLOCK.min(l - r0);
                        let cols = visible_keys(g, r0, rows);
                        let mut dqb =
                            ArrayViewMut2::from_shape((rows, e), &mut dqi[r0 * e..(r0 + rows) * e])
                                .map_err(internal)?;
                        if cols == 0 {
                            dqb.fill(0.0);
                            continue;
                        }
                        let (p, dp) = (&mut p[..rows * cols], &mut dp[..rows * cols]);
                        let rs = ndarray::s![r0..r0 + rows, ..];
                        let ks = ndarray::s![..cols, ..];
                        let (keys, values) = (km.slice(ks), vm.slice(ks));
                        biased_scores(g, &mask, item, qm.slice(rs), km, r0, cols, p)?;
                        // dP = dO . V^T, before dropout's mask and scale.
                        let mut dpm =
                            ArrayViewMut2::from_shape((rows, cols), &mut *dp).map_err(internal)?;
                        general_mat_mul(1.0, &gm.slice(rs), &values.t(), 0.0, &mut dpm);
                        for r in 0..rows {
                            let i = r0 + r;
                            let row_lse = lse[item * l + i];
                            let (prow, dprow) = (
                                &mut p[r * cols..(r + 1) * cols],
                                &mut dp[r * cols..(r + 1) * cols],
                            );
                            if row_lse == f32::NEG_INFINITY {
                                prow.fill(0.0);
                                dprow.fill(0.0);
                                continue;
                            }
                            let delta: f32 = (0..ev).map(|c| gm[[i, c]] * om[[i, c]]).sum();
                            if g.dropout_p <= 0.0 {
                                // prow becomes the weight (for dV), dprow the
                                // score gradient dS.
                                for (x, d) in prow.iter_mut().zip(dprow.iter_mut()) {
                                    let pij = math::exp(*x - row_lse);
                                    *x = pij;
                                    *d = pij * (*d - delta);
                                }
                                continue;
                            }
                            for j in 0..cols {
                                let pij = math::exp(prow[j] - row_lse);
                                let (pd, dpij) = if dropout_keep(g, item, i, j) {
                                    (pij * keep_scale, dprow[j] * keep_scale)
                                } else {
                                    (0.0, 0.0)
                                };
                                // prow becomes the dropped-out weight (for dV),
                                // dprow the score gradient dS.
                                prow[j] = pd;
                                dprow[j] = pij * (dpij - delta);
                            }
                        }
                        let pm = ArrayView2::from_shape((rows, cols), &*p).map_err(internal)?;
                        let dsm = ArrayView2::from_shape((rows, cols), &*dp).map_err(internal)?;
                        let mut dv_seen = dvm.slice_mut(ks);
                        general_mat_mul(1.0, &pm.t(), &gm.slice(rs), 1.0, &mut dv_seen);
                        let mut dk_seen = dkm.slice_mut(ks);
                        general_mat_mul(g.scale, &dsm.t(), &qm.slice(rs), 1.0, &mut dk_seen);
                        general_mat_mul(g.scale, &dsm, &keys, 0.0, &mut dqb);
                    }
                    Ok(())
                },
            )?;
        }
        Ok((
            CpuTensor::from_vec(dq, &dq_shape)?,
            CpuTensor::from_vec(dk, &dk_shape)?,
            CpuTensor::from_vec(dv, &dv_shape)?,
        ))
    }
}
