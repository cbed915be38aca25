//! View and joining ops.

use wgrad_core::{Error, Result};

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Shapes and views: `reshape`, `flatten`, `transpose`/`t`, `permute`,
/// `narrow`, `expand`, `unsqueeze`/`squeeze` share the data (no copy, as
/// PyTorch's views); `contiguous` copies only a strided tensor; `cat`
/// joins; `to` moves to another device.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::arange(0.0, 6.0, 1.0, wgrad_autograd::DType::F32, &Device::Cpu)?;
/// let m = x.reshape(&[2, -1])?; // [[0, 1, 2], [3, 4, 5]]
/// assert_eq!(m.shape(), [2, 3]);
/// assert_eq!(m.t()?.contiguous()?.to_vec_f32()?, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
/// assert_eq!(m.narrow(1, 1, 2)?.to_vec_f32()?, [1.0, 2.0, 4.0, 5.0]);
/// assert_eq!(m.unsqueeze(0)?.shape(), [1, 2, 3]);
/// assert_eq!(m.unsqueeze(0)?.squeeze(0)?.shape(), [2, 3]);
/// assert_eq!(m.permute(&[1, 0])?.shape(), [3, 2]);
/// let row = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2], &Device::Cpu)?;
/// assert_eq!(row.expand(&[3, 2])?.to_vec_f32()?, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
/// assert_eq!(Tensor::cat(&[&m, &m], 0)?.shape(), [4, 3]);
/// assert_eq!(m.unsqueeze(0)?.flatten(1)?.shape(), [1, 6]);
/// // `to` copies to another device (here the CPU itself: no copy).
/// assert_eq!(m.to(&Device::Cpu)?.device().to_string(), "cpu");
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// Reshape (one dim may be -1); a view when possible, like `torch.reshape`.
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        let input = self.storage();
        let out = input.reshape(shape)?;
        // A view (sharing data and version with `self`, as PyTorch's
        // reshape returns one) whenever strides can express the new shape.
        let is_view = input.is_contiguous() || input.layout().reshape(shape)?.is_some();
        Ok(if is_view {
            Tensor::record_view(out, Op::Reshape, self)
        } else {
            Tensor::record(out, Op::Reshape, &[self])
        })
    }
    /// Flattens all dims from `start` on into one (`torch.flatten(x,
    /// start_dim)`); a 0-d tensor becomes shape `[1]`. Dims before `start`
    /// may be 0 (an empty batch stays empty: `[0, 1, 28, 28]` -> `[0, 784]`
    /// for `start = 1`).
    pub fn flatten(&self, start: usize) -> Result<Tensor> {
        let shape = self.shape();
        if shape.is_empty() && start == 0 {
            return self.reshape(&[1]);
        }
        if start >= shape.len() {
            return Err(Error::BadAxis {
                op: "flatten",
                axis: isize::try_from(start).unwrap_or(isize::MAX),
                rank: shape.len(),
            });
        }
        let mut target: Vec<isize> = shape[..start].iter().map(|&d| d as isize).collect();
        target.push(shape[start..].iter().product::<usize>() as isize);
        self.reshape(&target)
    }
    /// Swaps axes `a` and `b` (`torch.transpose`), a view sharing the data;
    /// negative axes count from the end, out of range is [`Error::BadAxis`].
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        let out = self.storage().transpose(a, b)?;
        Ok(Tensor::record_view(out, Op::Transpose(a, b), self))
    }
    /// Transpose of the last two dims (`torch.Tensor.t`, `.T` of a
    /// matrix); a 0-d or 1-D tensor comes back as itself, as in PyTorch.
    pub fn t(&self) -> Result<Tensor> {
        if self.shape().len() < 2 {
            return Ok(self.clone());
        }
        self.transpose(-2, -1)
    }
    /// Reorders axes so output axis `i` is input axis `dims[i]`
    /// (`torch.permute`), a view; `dims` must name every axis exactly once.
    pub fn permute(&self, dims: &[isize]) -> Result<Tensor> {
        let out = self.storage().permute(dims)?;
        Ok(Tensor::record_view(out, Op::Permute(dims.to_vec()), self))
    }
    /// Keeps `len` elements of `axis` from `start` on (`torch.narrow`), a
    /// view; `start + len` past the axis is an error. The gradient is
    /// zero outside the slice.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Tensor> {
        let out = self.storage().narrow(axis, start, len)?;
        Ok(Tensor::record_view(out, Op::Narrow { axis, start }, self))
    }
    /// Broadcasts to `shape` (`torch.Tensor.expand`), a view: size-1 and
    /// missing leading dims repeat with stride 0, others must match. The
    /// gradient is summed over the repeats.
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        let out = self.storage().expand(shape)?;
        Ok(Tensor::record_view(out, Op::Expand, self))
    }
    /// Same as [`expand`](Self::expand) (`torch.broadcast_to`).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        self.expand(shape)
    }
    /// Inserts a size-1 axis at `axis` in `-(rank+1)..=rank`
    /// (`torch.unsqueeze`), a view.
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor> {
        let out = self.storage().unsqueeze(axis)?;
        Ok(Tensor::record_view(out, Op::Unsqueeze(axis), self))
    }
    /// Removes axis `axis` if it has size 1 (`torch.squeeze(x, dim)`), a
    /// view; like PyTorch, any other size leaves the shape unchanged.
    pub fn squeeze(&self, axis: isize) -> Result<Tensor> {
        let out = self.storage().squeeze(axis)?;
        Ok(Tensor::record_view(out, Op::Squeeze(axis), self))
    }
    /// A dense row-major tensor (`torch.Tensor.contiguous`): a view of this
    /// one when it already is, else a copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        let input = self.storage();
        let out = input.contiguous()?;
        Ok(if input.is_contiguous() {
            Tensor::record_view(out, Op::Contiguous, self)
        } else {
            Tensor::record(out, Op::Contiguous, &[self])
        })
    }
    /// Concatenates along `axis` (like `torch.cat`). As in PyTorch, 1-D
    /// empty tensors (shape `[0]`, e.g. `torch.tensor([])` starting an
    /// accumulator) are skipped whatever the others' rank and `axis`.
    pub fn cat(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        let legacy_empty = |t: &&Tensor| t.shape() == [0];
        if tensors.iter().any(legacy_empty) && !tensors.iter().all(legacy_empty) {
            let kept: Vec<&Tensor> = tensors
                .iter()
                .copied()
                .filter(|t| !legacy_empty(t))
                .collect();
            let out = Tensor::cat(&kept, axis)?.storage();
            // Recorded with every input, as PyTorch does: the result
            // requires grad when a skipped empty input does (it gets an
            // empty gradient, see the Concat rule).
            return Ok(Tensor::record(out, Op::Concat { axis }, tensors));
        }
        let storages: Vec<Storage> = tensors.iter().map(|t| t.storage()).collect();
        let refs: Vec<&Storage> = storages.iter().collect();
        let out = Storage::concat(&refs, axis)?;
        Ok(Tensor::record(out, Op::Concat { axis }, tensors))
    }
    /// Copies to `device` (differentiable: the gradient moves back).
    pub fn to(&self, device: &crate::Device) -> Result<Tensor> {
        if self.device().same(device) {
            return Ok(self.clone());
        }
        let out = self.storage().to_device(device)?;
        Ok(Tensor::record(out, Op::ToDevice, &[self]))
    }
}
