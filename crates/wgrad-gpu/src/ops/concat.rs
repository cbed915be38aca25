//! `concat`: joins tensors along an axis, one strided copy per input.

use wgrad_core::{Layout, Result, checks};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::CopyViewParams;

impl GpuTensor {
    /// Joins `tensors` along `axis` (`torch.cat`). All must have the same
    /// dtype (any, the 16-bit floats included), device and rank, and equal sizes on every other axis.
    /// Inputs may be strided views; each is copied straight into its slice
    /// of the contiguous output (one dispatch per non-empty input).
    pub fn concat(tensors: &[&GpuTensor], axis: isize) -> Result<GpuTensor> {
        const OP: &str = "concat";
        let (a, out_shape) = checks::concat::inputs(
            OP,
            tensors,
            axis,
            GpuTensor::shape,
            GpuTensor::dtype,
            |first, t| first.same_device(OP, t),
        )?;
        let first = tensors[0];
        let out = first.empty_like_device(OP, &out_shape, first.dtype)?;
        // A 16-bit slice may begin or end inside a word that the next input
        // also writes: the half kernel writes half-words atomically.
        let copy = if first.dtype.is_half() {
            &families::movement::COPY_HALF_TO_VIEW
        } else {
            &families::movement::COPY_TO_VIEW
        };
        let mut start = 0;
        for t in tensors {
            let len = t.shape()[a];
            if t.numel() > 0 {
                let dst = out.layout.narrow(a as isize, start, len)?;
                let p = CopyViewParams::new(OP, t.shape(), &t.layout, &dst)?;
                first.kernels().dispatch_1d(
                    copy,
                    &[],
                    &[&t.buffer, &out.buffer],
                    &p,
                    t.numel() as u64,
                )?;
            }
            start += len;
        }
        Ok(out)
    }

    /// The dense tensor whose windows along `axis` `tensors` are, in order
    /// and covering it (a view of their buffer, nothing copied), or `None`
    /// where they are not such windows of one buffer or anything else
    /// holds that buffer. For gradients (the backward of a split, whose
    /// parts a fused kernel wrote into one buffer): [`concat`](Self::concat)
    /// always copies, as `torch.cat` does, since its result must not alias
    /// its inputs.
    pub fn joined_windows(tensors: &[&GpuTensor], axis: usize) -> Option<GpuTensor> {
        let first = tensors.first()?;
        // Only the windows hold the buffer: the result can alias no one else's data.
        if first.buffer.handles() != tensors.len() {
            return None;
        }
        let mut shape = first.shape().to_vec();
        shape[axis] = tensors
            .iter()
            .map(|t| t.shape().get(axis).copied())
            .sum::<Option<usize>>()?;
        let base = Layout::contiguous(&shape);
        let offset = first.layout.offset();
        let whole =
            Layout::from_parts("joined_windows", shape, base.strides().to_vec(), offset).ok()?;
        let mut start = 0;
        for t in tensors {
            let len = t.shape().get(axis).copied()?;
            let window = whole.narrow(axis as isize, start, len).ok()?;
            if t.buffer.id() != first.buffer.id() || t.dtype != first.dtype || t.layout != window {
                return None;
            }
            start += len;
        }
        Some(first.with_layout(whole))
    }
}
