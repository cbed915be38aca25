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
/// `windows` (at least one; `structure::place_windows` writes disjoint
/// ones) and whose other uses summed to `dense`.
pub(super) fn assemble(
    shape: &[usize],
    dense: Option<Storage>,
    mut windows: Vec<Window>,
) -> Result<Storage> {
    windows.sort_by_key(|w| (w.axis, w.start));
    let axis = windows.first().map_or(0, |w| w.axis);
    let disjoint = windows.iter().all(|w| w.axis == axis)
        && windows.windows(2).all(|p| p[0].end() <= p[1].start);
    let summed = if disjoint {
        let parts: Vec<(usize, &Storage)> = windows.iter().map(|w| (w.start, &w.grad)).collect();
        structure::place_windows(shape, axis, &parts)?
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
