//! `concat`: joins tensors along an axis, one strided copy per input.

use wgrad_core::{Result, checks};
use wgrad_kernels::families;

use crate::{GpuTensor, params};

impl GpuTensor {
    /// Joins `tensors` along `axis` (`torch.cat`). All must have the same
    /// dtype (any), device and rank, and equal sizes on every other axis.
    /// Inputs may be strided views; each is copied straight into its slice
    /// of the contiguous output (one dispatch per non-empty input).
    pub fn concat(tensors: &[&GpuTensor], axis: isize) -> Result<GpuTensor> {
        const OP: &str = "concat";
        let first = checks::concat::first(OP, tensors)?;
        let a = checks::concat::axis(OP, first.shape(), axis)?;
        for t in &tensors[1..] {
            first.same_device(OP, t)?;
            t.expect_dtype(OP, first.dtype)?;
            checks::concat::same_except_axis(OP, first.shape(), a, t.shape())?;
        }
        let out_shape = checks::concat::joined_shape(
            OP,
            first.shape(),
            a,
            tensors.iter().map(|t| t.shape()[a]),
        )?;
        let out = first.empty_like_device(OP, &out_shape, first.dtype)?;
        let mut start = 0;
        for t in tensors {
            let len = t.shape()[a];
            if t.numel() > 0 {
                let dst = out.layout.narrow(a as isize, start, len)?;
                // [numel, rank, src_off, dst_off, shape, src_strides, dst_strides]:
                // exactly the kernel's CopyViewParams.
                let words = params::strided(OP, t.shape(), &[&t.layout, &dst])?;
                first.kernels().dispatch_1d(
                    &families::movement::COPY_TO_VIEW,
                    &[],
                    &[&t.buffer, &out.buffer],
                    params::bytes(&words),
                    t.numel() as u64,
                )?;
            }
            start += len;
        }
        Ok(out)
    }
}
