//! Numerically stable softmax and log-softmax along one axis.
//!
//! One dispatch of `kernels/reduce/softmax.wgsl`: each row (a lane along the
//! axis, read through the input's strides) is folded into its maximum and
//! sum of exponentials and written in the same kernel, so the input is read
//! twice (the second time mostly from L2) and the output written once. A
//! few long rows, which would leave most workgroups idle, take
//! `softmax_split.wgsl` instead: per-chunk partials, then a write pass.
//!
//! Keeping rows in workgroup memory between the two reads was tried and
//! was 2.5x slower on an H200 ([4096, 4096]: 0.21 against 0.08 ms; the same
//! kernel with the 18 KiB cache declared but unused was as slow, so it is
//! the occupancy that suffers), as was a per-thread array of 16 values.

use wgrad_core::shape::{contiguous_strides, normalize_axis};
use wgrad_core::{DType, Error, MAX_RANK, Result};
use wgrad_kernels::families;

use super::reduce::{Lanes, TARGET_GROUPS};
use crate::GpuTensor;
use crate::params::{self, SoftmaxParams, SoftmaxSplitParams};

/// Elements per thread the softmax kernel aims at. Its tree has log2(lanes)
/// barrier steps, so short rows get fewer threads each (H200, [65536, 1000]:
/// 16 per thread 0.28 ms against 0.51 ms at 4; 32 was 7% slower than 16).
const SOFTMAX_PER_THREAD: usize = 16;
/// Threads strided rows are spread over. Softmax has no second pass to add
/// parallelism for short strided rows, so it wants more than the reductions
/// (H200: [4096, 4096] over dim 0, 0.093 ms against 0.116 ms at 1 << 16).
const ROW_FAST_TARGET_THREADS: usize = 1 << 18;
/// Rows are split when they fill fewer than 1 / this of `TARGET_GROUPS`.
const SPLIT_BELOW_FRACTION: usize = 4;
/// Fewest elements per thread in a chunk of a split row.
const SPLIT_MIN_PER_THREAD: usize = 32;
/// Most chunks per row: softmax_write merges all of its row's partials, so
/// its cost grows with the chunk count.
const MAX_SPLIT_CHUNKS: usize = 64;

impl GpuTensor {
    /// `exp(x - max) / sum(exp(x - max))` along `axis`; F32 only.
    pub fn softmax(&self, axis: isize) -> Result<GpuTensor> {
        self.softmax_impl("softmax", axis, false)
    }

    /// `x - max - ln(sum(exp(x - max)))` along `axis`; F32 only. Stays
    /// finite where `softmax(...).log()` would underflow to `-inf`.
    pub fn log_softmax(&self, axis: isize) -> Result<GpuTensor> {
        self.softmax_impl("log_softmax", axis, true)
    }

    fn softmax_impl(&self, op: &'static str, axis: isize, log: bool) -> Result<GpuTensor> {
        self.expect_dtype(op, DType::F32)?;
        let a = normalize_axis(op, axis, self.rank())?;
        let out = self.empty_like_device(op, self.shape(), DType::F32)?;
        if self.numel() == 0 {
            return Ok(out);
        }
        let n = self.shape()[a];
        let rows = self.numel() / n;
        let out_strides = contiguous_strides(self.shape());

        // The other dims, in order, as (size, input stride, output stride);
        // size-1 dims are dropped and neighbours that are contiguous in both
        // input and output merged, to keep the kernel's unravelling short.
        let mut kept: Vec<(usize, usize, usize)> = Vec::new();
        for d in (0..self.rank()).filter(|&d| d != a) {
            let (size, si, so) = (self.shape()[d], self.strides()[d], out_strides[d]);
            if size == 1 {
                continue;
            }
            match kept.last_mut() {
                Some(last) if last.1 == si * size && last.2 == so * size => {
                    *last = (last.0 * size, si, so);
                }
                _ => kept.push((size, si, so)),
            }
        }

        let in_axis_stride = self.strides()[a];
        let lanes = Lanes::choose(
            rows,
            n,
            n == 1 || in_axis_stride == 1,
            kept.last().is_some_and(|k| k.1 == 1),
            SOFTMAX_PER_THREAD,
            ROW_FAST_TARGET_THREADS,
        );
        let groups = rows.div_ceil(lanes.rows_per_group());
        // Split only when the groups would leave most of the GPU idle: the
        // split reads the input once more (H200: [4096, 4096] over dim 0 in
        // 512 groups, 0.093 ms unsplit against 0.111 ms split in two).
        let chunks = if groups * SPLIT_BELOW_FRACTION < TARGET_GROUPS {
            let by_occupancy = TARGET_GROUPS.div_ceil(groups);
            let by_work = n / (lanes.lanes * SPLIT_MIN_PER_THREAD);
            by_occupancy.min(by_work).clamp(1, MAX_SPLIT_CHUNKS)
        } else {
            1
        };
        // Rounding the chunk length up can leave fewer non-empty chunks.
        let chunk_len = n.div_ceil(chunks);
        let chunks = n.div_ceil(chunk_len);

        let u = |what, v| params::to_u32(op, what, v);
        if kept.len() > MAX_RANK {
            return Err(Error::invalid(
                op,
                format!("rank {} exceeds {MAX_RANK}", kept.len()),
            ));
        }
        let mut p = SoftmaxParams {
            rows: u("row count", rows)?,
            n: u("axis length", n)?,
            kept_rank: kept.len() as u32,
            offset: u("offset", self.layout.offset())?,
            in_axis_stride: u("stride", in_axis_stride)?,
            out_axis_stride: u("stride", out_strides[a])?,
            lanes: lanes.lanes as u32,
            flags: lanes.flag(),
            shape: [0; MAX_RANK],
            in_strides: [0; MAX_RANK],
            out_strides: [0; MAX_RANK],
        };
        for (i, &(size, si, so)) in kept.iter().enumerate() {
            p.shape[i] = u("dimension", size)?;
            p.in_strides[i] = u("stride", si)?;
            p.out_strides[i] = u("stride", so)?;
        }
        let constants = [("LOG", if log { 1.0 } else { 0.0 })];

        if chunks == 1 {
            self.kernels().dispatch_groups(
                &families::reduce::SOFTMAX_ROWS,
                &constants,
                &[&self.buffer, &out.buffer],
                &p,
                groups as u64,
            )?;
            return Ok(out);
        }

        // Few long rows: (max, sum) per chunk, then every chunk combines its
        // row's partials and writes its elements.
        let virtual_rows = rows * chunks;
        u("partial row count", 2 * virtual_rows)?;
        let stats = self.empty_like_device(op, &[2 * virtual_rows], DType::F32)?;
        let split: SoftmaxSplitParams =
            p.split(u("chunk count", chunks)?, u("chunk length", chunk_len)?);
        let split_groups = virtual_rows.div_ceil(lanes.rows_per_group()) as u64;
        self.kernels().dispatch_groups(
            &families::reduce::SOFTMAX_PARTIAL,
            &constants,
            &[&self.buffer, &self.buffer, &stats.buffer],
            &split,
            split_groups,
        )?;
        self.kernels().dispatch_groups(
            &families::reduce::SOFTMAX_WRITE,
            &constants,
            &[&self.buffer, &stats.buffer, &out.buffer],
            &split,
            split_groups,
        )?;
        Ok(out)
    }
}
