//! Index-driven writes (PyTorch semantics): `index_add`, `scatter_add`,
//! `scatter`, `index_put` and boolean indexing (`masked_select`).
//!
//! `index_add` and `scatter_add` are the storage ops of the same names
//! with a graph node (`Op::IndexAdd`, `Op::ScatterAdd`); `scatter` and
//! `index_put` are composed from them, a write count and `where_cond`, so
//! they run on either device and differentiate through those rules.
//! `masked_select` finds each selected element's output slot with a
//! prefix sum (`cumsum`) of the mask and gathers with `index_select`.

use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, checks, shape};

use crate::graph::Op;
use crate::ops::structure::{as_isize, bool_mask};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Integer values that f32 holds exactly (running counts, positions,
/// wrapped indices).
const F32_EXACT: usize = 1 << 24;

/// The gradients of `base.index_add(axis, index, source)`: the base's is
/// `g`, the source's the slices of `g` it was added into.
pub(crate) fn index_add_grads(
    g: &Storage,
    axis: isize,
    index: &Storage,
) -> Result<Vec<Option<Storage>>> {
    Ok(vec![Some(g.clone()), Some(g.index_select(axis, index)?)])
}

/// The gradients of `base.scatter_add(axis, index, src)`: the base's is
/// `g`; the src's is `g` gathered at the targets, zero where `src` is
/// larger than the index (that part was never added).
pub(crate) fn scatter_add_grads(
    g: &Storage,
    axis: isize,
    index: &Storage,
    src_shape: &[usize],
) -> Result<Vec<Option<Storage>>> {
    let mut part = g.gather(axis, index)?;
    let device = g.device();
    for (a, &want) in src_shape.iter().enumerate() {
        let have = part.shape()[a];
        if have < want {
            let mut pad_shape = part.shape().to_vec();
            pad_shape[a] = want - have;
            let pad = Storage::full(&pad_shape, 0.0, DType::F32, &device)?;
            part = Storage::concat(&[&part, &pad], a as isize)?;
        }
    }
    Ok(vec![Some(g.clone()), Some(part)])
}

/// I32 indices into a dim of size `n` with negative ones counted from the
/// end (Python's `x[-1]`), computed on the device in f32 (exact for dims
/// up to 2^24; larger dims take the indices as they are).
fn wrap_negative(index: &Tensor, n: usize) -> Result<Tensor> {
    if n > F32_EXACT {
        return Ok(index.clone());
    }
    let f = index.cast(DType::F32)?;
    let wrapped = Tensor::where_cond(&f.lt_scalar(0.0)?, &f.add_scalar(n as f32)?, &f)?;
    wrapped.cast(DType::I32)
}

/// Index writes (out of place, differentiable in the base and the
/// source): `index_add`, `scatter_add`, `scatter`, `index_put`, and
/// boolean indexing with `masked_select`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let base = Tensor::zeros(&[3], &cpu)?;
/// let index = Tensor::from_vec(vec![0i32, 2, 0], &[3], &cpu)?;
/// let src = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], &cpu)?;
/// assert_eq!(base.index_add(0, &index, &src)?.to_vec_f32()?, [4.0, 0.0, 2.0]);
/// assert_eq!(base.scatter_add(0, &index, &src)?.to_vec_f32()?, [4.0, 0.0, 2.0]);
/// let mask = src.ge_scalar(2.0)?;
/// assert_eq!(src.masked_select(&mask)?.to_vec_f32()?, [2.0, 3.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.Tensor.index_add(dim, index, source)`: a copy of `self` with
    /// slice `i` of `source` along `dim` added to slice `index[i]`
    /// (repeated indices accumulate). F32 `self` and `source`, 1-D I32
    /// `index` with one entry per slice of `source`; `source` has `self`'s
    /// shape except on `dim`. Differentiable in `self` and `source`.
    pub fn index_add(&self, dim: isize, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let idx = index.storage();
        let out = self.storage().index_add(dim, &idx, &source.storage())?;
        Ok(Tensor::record(
            out,
            Op::IndexAdd {
                axis: dim,
                index: idx,
            },
            &[self, source],
        ))
    }

    /// `torch.Tensor.scatter_add(dim, index, src)`: a copy of `self` with
    /// `src[p]` added at `p` with its `dim` coordinate replaced by
    /// `index[p]`, for every position `p` of `index` (repeats accumulate).
    /// `index` (I32), `src` and `self` share one rank; `index` is no larger
    /// than `src` anywhere and than `self` off `dim`. F32; differentiable in
    /// `self` and `src`.
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let idx = index.storage();
        let out = self.storage().scatter_add(dim, &idx, &src.storage())?;
        Ok(Tensor::record(
            out,
            Op::ScatterAdd {
                axis: dim,
                index: idx,
            },
            &[self, src],
        ))
    }

    /// `torch.Tensor.scatter(dim, index, src)`: a copy of `self` with
    /// `src[p]` written (not added) at `p` with its `dim` coordinate
    /// replaced by `index[p]`; shapes as for
    /// [`scatter_add`](Self::scatter_add). Where several positions target
    /// one element PyTorch leaves the winner unspecified; here the element
    /// gets the mean of the values written to it (equal values give that
    /// value). F32; differentiable in `self` (zero gradient where written)
    /// and `src`.
    pub fn scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "scatter";
        if self.dtype().is_half() && src.dtype() == self.dtype() {
            // Computed in F32 (exact: writes and means of 16-bit values),
            // rounded back to the tensor's dtype.
            let out = self.float()?.scatter(dim, index, &src.float()?)?;
            return out.cast(self.dtype());
        }
        checks::expect_dtype(OP, DType::F32, self.dtype())?;
        checks::expect_dtype(OP, DType::F32, src.dtype())?;
        checks::expect_dtype(OP, DType::I32, index.dtype())?;
        checks::index_add::scatter_add(OP, dim, &self.shape(), &index.shape(), &src.shape())?;
        let device = self.device();
        let ones = Storage::full(&index.shape(), 1.0, DType::F32, &device)?;
        let zeros = Storage::full(&self.shape(), 0.0, DType::F32, &device)?;
        let count = zeros.scatter_add(dim, &index.storage(), &ones)?;
        let summed = Tensor::from_storage_leaf(zeros).scatter_add(dim, index, src)?;
        written_or_kept(self, &Tensor::from_storage_leaf(count), &summed)
    }

    /// `self.index_put((index,), values, accumulate)`: PyTorch's
    /// `x[index] = values` (or `x[index] += values` with `accumulate`)
    /// along dim 0. `index` is 1-D I32, negative entries count from the
    /// end; `values` broadcasts to `[index.len(), *self.shape[1..]]`.
    /// Without `accumulate`, rows named twice get the mean of their values
    /// (PyTorch leaves the winner unspecified). F32; differentiable in
    /// `self` and `values`.
    pub fn index_put(&self, index: &Tensor, values: &Tensor, accumulate: bool) -> Result<Tensor> {
        const OP: &str = "index_put";
        let s = self.shape();
        if s.is_empty() {
            return Err(Error::invalid(
                OP,
                "needs a tensor of at least 1 dim to index along dim 0, got a 0-d tensor",
            ));
        }
        if self.dtype().is_half() && values.dtype() == self.dtype() {
            // As `scatter`: in F32, rounded back to the tensor's dtype.
            let out = self
                .float()?
                .index_put(index, &values.float()?, accumulate)?;
            return out.cast(self.dtype());
        }
        checks::expect_dtype(OP, DType::F32, self.dtype())?;
        checks::expect_dtype(OP, DType::F32, values.dtype())?;
        checks::expect_dtype(OP, DType::I32, index.dtype())?;
        checks::indexing::index_1d(OP, &index.shape())?;
        let mut target = s.to_vec();
        target[0] = index.shape()[0];
        let fits = shape::broadcast_shapes(OP, &values.shape(), &target).is_ok_and(|b| b == target);
        if !fits {
            return Err(Error::invalid(
                OP,
                format!(
                    "values of shape {:?} do not broadcast to the indexed shape {target:?} \
                     (index of length {} into a tensor of shape {:?})",
                    values.shape(),
                    target[0],
                    &s[..]
                ),
            ));
        }
        let values = values.expand(&target)?;
        let index = wrap_negative(index, s[0])?;
        if accumulate {
            return self.index_add(0, &index, &values);
        }
        let device = self.device();
        let ones = Storage::full(&[target[0]], 1.0, DType::F32, &device)?;
        let mut count_shape = vec![1usize; s.len()];
        count_shape[0] = s[0];
        let count = Storage::full(&[s[0]], 0.0, DType::F32, &device)?
            .index_add(0, &index.storage(), &ones)?
            .reshape(&as_isize(&count_shape))?;
        let zeros = Tensor::full(&s, 0.0, DType::F32, &device)?;
        let summed = zeros.index_add(0, &index, &values)?;
        written_or_kept(self, &Tensor::from_storage_leaf(count), &summed)
    }

    /// `torch.masked_select`: the elements of `self` where `mask` is true,
    /// as a 1-D tensor in row-major order (`self` and `mask` broadcast
    /// together). `mask` is U32 (as comparisons make it) or I32 (nonzero =
    /// true); any dtype for `self`, differentiable for F32.
    ///
    /// The output's length depends on the data, so this op reads back ONE
    /// value, the number of selected elements (like PyTorch, which
    /// synchronizes with the GPU here too); everything else stays on the
    /// device. At most 2^24 elements (the prefix sum runs in f32).
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        const OP: &str = "masked_select";
        let mask = bool_mask(OP, mask)?;
        let shape = shape::broadcast_shapes(OP, &self.shape(), &mask.shape())?;
        let n = shape::checked_numel(OP, &shape)?;
        if n > F32_EXACT {
            return Err(Error::invalid(
                OP,
                format!("at most 2^24 elements are supported, got shape {shape:?}"),
            ));
        }
        let flat = self.expand(&shape)?.reshape(&[-1])?;
        if n == 0 {
            return Ok(flat);
        }
        let device = self.device();
        let hit = mask
            .storage()
            .expand(&shape)?
            .reshape(&[-1])?
            .cast(DType::I32)?
            .compare_scalar(CompareOp::Ne, 0.0)?;
        // Inclusive running count of selected elements (the scan is exact in
        // f32 below 2^24).
        let running = hit.cast(DType::F32)?.cumsum(0, false)?;
        // The one readback: how many elements are selected.
        let count = running.narrow(0, n - 1, 1)?.to_vec::<f32>()?;
        let count = count.first().copied().unwrap_or(0.0) as usize;
        // A stable partition: selected element p goes to slot running[p] - 1,
        // unselected p to count + (p - running[p]) (its rank among the
        // unselected), so every slot is written exactly once (no atomic
        // contention) and the first `count` slots hold the selection.
        let positions = Storage::arange(0.0, n as f64, 1.0, DType::F32, &device)?;
        let unselected_slot = positions.binary(&running, BinaryOp::Sub)?.binary_scalar(
            BinaryOp::Add,
            count as f32,
            false,
        )?;
        let slot = Storage::where_cond(
            &hit,
            &running.binary_scalar(BinaryOp::Sub, 1.0, false)?,
            &unselected_slot,
        )?
        .cast(DType::I32)?;
        let source = Storage::full(&[n], 0.0, DType::F32, &device)?
            .scatter_add(0, &slot, &positions)?
            .narrow(0, 0, count)?
            .cast(DType::I32)?;
        flat.index_select(0, &Tensor::from_storage_leaf(source))
    }
}

/// `written / count` where `count > 0`, else `kept`: the write of
/// `scatter`/`index_put` given the per-element write count and the sum of
/// the values written (`count` broadcasts to `kept`).
fn written_or_kept(kept: &Tensor, count: &Tensor, summed: &Tensor) -> Result<Tensor> {
    let mask = count.gt_scalar(0.0)?;
    let written = summed.div(&count.maximum_scalar(1.0)?)?;
    Tensor::where_cond(&mask, &written, kept)
}
