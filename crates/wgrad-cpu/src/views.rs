//! View ops (no copy: they only change the layout) plus `contiguous`,
//! `reshape` of non-contiguous tensors and `concat`, which do copy.

use bytemuck::Zeroable;
use ndarray::{ArrayViewD, ArrayViewMutD, Axis, IxDyn, Slice};
use wgrad_core::shape::infer_reshape;
use wgrad_core::{Element, Error, Layout, Result, checks};

use crate::alloc::{self, During, checked_len};
use crate::parallel;
use crate::tensor::{CpuTensor, internal};

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

    wgrad_core::layout_methods!();

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
        const OP: &str = "concat";
        let (a, shape) = checks::concat::inputs(
            OP,
            tensors,
            axis,
            CpuTensor::shape,
            CpuTensor::dtype,
            |_, _| Ok(()),
        )?;
        let dtype = tensors[0].dtype();
        with_dtype!(OP, dtype, T => concat_typed::<T>(tensors, a, &shape))
    }
}

/// Copies each tensor into its slab of a fresh output of `shape` along
/// `axis`. With `outer` the product of the dims before `axis` and `inner`
/// of those after, output row `o` (of `outer`) is every input's row `o`
/// (`len_i * inner` elements) in turn: when every input is dense, rows copy
/// as whole slices and large outputs split their rows over threads; other
/// inputs are read through strided views (never copied first).
fn concat_typed<T: Element + Zeroable>(
    tensors: &[&CpuTensor],
    axis: usize,
    shape: &[usize],
) -> Result<CpuTensor> {
    const OP: &str = "concat";
    let n = checked_len(OP, shape)?;
    let mut out = alloc::for_overwrite::<T>(n).during(OP)?;
    let inner: usize = shape[axis + 1..].iter().product();
    let dense = tensors
        .iter()
        .map(|t| {
            Ok(t.contiguous_slice::<T>()?
                .map(|s| (s, t.shape()[axis] * inner)))
        })
        .collect::<Result<Option<Vec<_>>>>()?;
    if let Some(parts) = dense {
        let row: usize = parts.iter().map(|(_, block)| block).sum();
        if row > 0 {
            parallel::for_each_row(&mut out, row, n, |o, dst| {
                let mut at = 0;
                for (src, block) in &parts {
                    dst[at..at + block].copy_from_slice(&src[o * block..(o + 1) * block]);
                    at += block;
                }
            });
        }
        return CpuTensor::from_vec(out, shape);
    }
    let views = tensors
        .iter()
        .map(|t| t.view::<T>())
        .collect::<Result<Vec<ArrayViewD<'_, T>>>>()?;
    let mut array = ArrayViewMutD::from_shape(IxDyn(shape), &mut out).map_err(internal)?;
    let mut start = 0;
    for v in &views {
        let len = v.len_of(Axis(axis));
        array
            .slice_axis_mut(Axis(axis), Slice::from(start..start + len))
            .assign(v);
        start += len;
    }
    CpuTensor::from_vec(out, shape)
}
