//! Gradients of `narrow` windows, assembled once per input. `split`,
//! `chunk` and `unbind` cut a tensor into windows along one axis (a
//! transformer's fused q/k/v projection into q, k and v): summing each
//! window's gradient as a zero-padded copy of the whole input costs a fill,
//! a copy and a full-size add per window. Kept apart until the input's turn
//! in the walk, disjoint windows on one axis become one tensor: concatenated
//! when they cover the axis (one copy each), otherwise copied into one
//! zeroed tensor (GPU) or concatenated with zero pads (CPU). Anything else
//! (overlapping windows, several axes) is summed as before. The values are
//! those of the padded sum (each element is its window's gradient plus
//! zeros), bit for bit but for the sign of a zero.

use wgrad_core::{BinaryOp, Result};

use crate::ops::structure;
use crate::storage::Storage;

/// The gradient of one `narrow(axis, start, len)` output.
pub(super) struct Window {
    /// The axis, normalized.
    pub(super) axis: usize,
    pub(super) start: usize,
    pub(super) grad: Storage,
}

impl Window {
    fn end(&self) -> usize {
        self.start + self.grad.shape()[self.axis]
    }
}

/// The gradient of an input of shape `shape` whose narrowed windows got
/// `windows` (at least one) and whose other uses summed to `dense`.
pub(super) fn assemble(
    shape: &[usize],
    dense: Option<Storage>,
    mut windows: Vec<Window>,
) -> Result<Storage> {
    windows.sort_by_key(|w| (w.axis, w.start));
    let axis = windows[0].axis;
    let disjoint = windows.iter().all(|w| w.axis == axis)
        && windows.windows(2).all(|p| p[0].end() <= p[1].start);
    let summed = if windows.len() > 1 && disjoint {
        disjoint_windows(shape, axis, &windows)?
    } else {
        let mut sum: Option<Storage> = None;
        for w in &windows {
            let padded = structure::narrow_backward(&w.grad, shape, w.axis as isize, w.start)?;
            sum = Some(match sum {
                Some(s) => s.binary(&padded, BinaryOp::Add)?,
                None => padded,
            });
        }
        sum.ok_or_else(|| wgrad_core::Error::invalid("backward", "no window gradients"))?
    };
    match dense {
        Some(d) => d.binary(&summed, BinaryOp::Add),
        None => Ok(summed),
    }
}

/// Disjoint windows on `axis`, in order, as one tensor of `shape`.
fn disjoint_windows(shape: &[usize], axis: usize, windows: &[Window]) -> Result<Storage> {
    let first = &windows[0].grad;
    let covered = windows[0].start == 0
        && windows.windows(2).all(|p| p[0].end() == p[1].start)
        && windows[windows.len() - 1].end() == shape[axis];
    if covered {
        let parts: Vec<&Storage> = windows.iter().map(|w| &w.grad).collect();
        return Storage::concat(&parts, axis as isize);
    }
    if let Storage::Gpu(g) = first {
        // One fill and one copy per window (pads would cost a fill and a
        // copy each).
        let out = wgrad_gpu::GpuTensor::full(g.device(), shape, 0.0, g.dtype())?;
        for w in windows {
            let Storage::Gpu(part) = &w.grad else {
                return Err(wgrad_core::Error::invalid(
                    "backward",
                    "window gradients on different devices",
                ));
            };
            let len = w.grad.shape()[axis];
            if part.numel() == 0 {
                continue;
            }
            out.narrow(axis as isize, w.start, len)?.write_view(part)?;
        }
        return Ok(Storage::Gpu(out));
    }
    let pad = |n: usize| -> Result<Storage> {
        let mut s = shape.to_vec();
        s[axis] = n;
        Storage::full(&s, 0.0, first.dtype(), &first.device())
    };
    let mut parts = Vec::new();
    let mut at = 0;
    for w in windows {
        if w.start > at {
            parts.push(pad(w.start - at)?);
        }
        parts.push(w.grad.clone());
        at = w.end();
    }
    if shape[axis] > at {
        parts.push(pad(shape[axis] - at)?);
    }
    let refs: Vec<&Storage> = parts.iter().collect();
    Storage::concat(&refs, axis as isize)
}
