//! Numerically stable softmax and log-softmax along one axis.
//!
//! One dispatch of `kernels/reduce/softmax.wgsl`: each row (a lane along the
//! axis, read through the input's strides) is folded into its maximum and
//! sum of exponentials and written in the same kernel, so the input is read
//! twice and the output written once.

use wgrad_core::shape::{contiguous_strides, normalize_axis};
use wgrad_core::{DType, MAX_RANK, Result};
use wgrad_kernels::families;

use super::reduce::Lanes;
use crate::{GpuTensor, params};

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
        );
        let u = |what, v| params::to_u32(op, what, v);
        let mut words = vec![
            u("row count", rows)?,
            u("axis length", n)?,
            kept.len() as u32,
            u("offset", self.layout.offset())?,
            u("stride", in_axis_stride)?,
            u("stride", out_strides[a])?,
            lanes.lanes as u32,
            lanes.flag(),
        ];
        let mut shape = [0u32; MAX_RANK];
        let mut in_strides = [0u32; MAX_RANK];
        let mut out_str = [0u32; MAX_RANK];
        for (i, &(size, si, so)) in kept.iter().enumerate() {
            shape[i] = u("dimension", size)?;
            in_strides[i] = u("stride", si)?;
            out_str[i] = u("stride", so)?;
        }
        words.extend(shape);
        words.extend(in_strides);
        words.extend(out_str);
        self.kernels().dispatch_groups(
            &families::reduce::SOFTMAX_ROWS,
            &[("LOG", if log { 1.0 } else { 0.0 })],
            &[&self.buffer, &out.buffer],
            params::bytes(&words),
            rows.div_ceil(lanes.rows_per_group()) as u64,
        )?;
        Ok(out)
    }
}
