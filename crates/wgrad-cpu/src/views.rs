//! View ops (no copy: they only change the layout) plus `contiguous`,
//! `reshape` of non-contiguous tensors and `concat`, which do copy.

use bytemuck::Zeroable;
use ndarray::{ArrayViewD, Axis, Slice};
use wgrad_core::shape::{check_rank, infer_reshape, normalize_axis};
use wgrad_core::{Element, Error, Layout, Result};

use crate::tensor::CpuTensor;

impl CpuTensor {
    /// Reshape with at most one `-1`; a view when the tensor is contiguous,
    /// otherwise a contiguous copy first (like `torch.reshape`).
    pub fn reshape(&self, shape: &[isize]) -> Result<Self> {
        if self.numel() == 0 {
            // `Layout::is_contiguous` rejects some empty layouts (a 0 dim
            // makes the expected strides 0); an empty view needs no data.
            let target = infer_reshape("reshape", self.shape(), shape)?;
            return Ok(self.with_layout(Layout::contiguous(&target)));
        }
        match self.layout.reshape(shape)? {
            Some(layout) => Ok(self.with_layout(layout)),
            None => {
                let dense = self.contiguous_for("reshape")?;
                match dense.layout.reshape(shape)? {
                    Some(layout) => Ok(dense.with_layout(layout)),
                    None => Err(Error::invalid(
                        "reshape",
                        format!("copy of shape {:?} is not contiguous", self.shape()),
                    )),
                }
            }
        }
    }

    /// Swaps axes `a` and `b` (a view).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout.transpose(a, b)?))
    }

    /// Reorders axes: output axis `i` is input axis `dims[i]` (a view).
    pub fn permute(&self, dims: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout.permute(dims)?))
    }

    /// Keeps `len` elements of `axis` starting at `start` (a view).
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Self> {
        Ok(self.with_layout(self.layout.narrow(axis, start, len)?))
    }

    /// Broadcasts to `shape`: size-1 and missing leading dims repeat with
    /// stride 0 (a view).
    pub fn expand(&self, shape: &[usize]) -> Result<Self> {
        Ok(self.with_layout(self.layout.expand(shape)?))
    }

    /// Alias of [`CpuTensor::expand`].
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Self> {
        self.expand(shape)
    }

    /// Inserts a size-1 axis at `axis` (in `-(rank+1)..=rank`; a view).
    pub fn unsqueeze(&self, axis: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout.unsqueeze(axis)?))
    }

    /// Removes the size-1 axis `axis` (a view).
    pub fn squeeze(&self, axis: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout.squeeze(axis)?))
    }

    /// The tensor itself if already dense row-major, else a row-major copy.
    pub fn contiguous(&self) -> Result<Self> {
        self.contiguous_for("contiguous")
    }

    /// [`CpuTensor::contiguous`] with errors naming `op`.
    pub(crate) fn contiguous_for(&self, op: &'static str) -> Result<Self> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        with_dtype!(op, self.dtype(), T => {
            Self::from_vec(self.to_vec_for::<T>(op)?, self.shape())
        })
    }

    /// Joins tensors along `axis`. All must have the same dtype and rank and
    /// equal sizes on every other axis.
    pub fn concat(tensors: &[&CpuTensor], axis: isize) -> Result<Self> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("concat", "needs at least one tensor"))?;
        let rank = first.rank();
        let a = normalize_axis("concat", axis, rank)?;
        for t in &tensors[1..] {
            if t.dtype() != first.dtype() {
                return Err(Error::DTypeMismatch {
                    op: "concat",
                    expected: first.dtype(),
                    got: t.dtype(),
                });
            }
            let same = t.rank() == rank
                && t.shape()
                    .iter()
                    .zip(first.shape())
                    .enumerate()
                    .all(|(i, (x, y))| i == a || x == y);
            if !same {
                return Err(Error::ShapeMismatch {
                    op: "concat",
                    lhs: first.shape().to_vec(),
                    rhs: t.shape().to_vec(),
                });
            }
        }
        with_dtype!("concat", first.dtype(), T => concat_typed::<T>(tensors, a))
    }
}

/// Copies each tensor into its slab of a fresh output along `axis`.
fn concat_typed<T: Element + Zeroable>(tensors: &[&CpuTensor], axis: usize) -> Result<CpuTensor> {
    const OP: &str = "concat";
    let views = tensors
        .iter()
        .map(|t| t.view::<T>())
        .collect::<Result<Vec<ArrayViewD<'_, T>>>>()?;
    let mut shape = tensors[0].shape().to_vec();
    shape[axis] = tensors
        .iter()
        .try_fold(0usize, |n, t| n.checked_add(t.shape()[axis]))
        .ok_or_else(|| Error::invalid(OP, "the joined axis is longer than a usize"))?;
    check_rank(OP, &shape)?;
    CpuTensor::build(OP, &shape, |mut out| {
        let mut start = 0;
        for v in &views {
            let len = v.len_of(Axis(axis));
            out.slice_axis_mut(Axis(axis), Slice::from(start..start + len))
                .assign(v);
            start += len;
        }
    })
}
