//! Structure ops (PyTorch semantics): masks (`masked_fill`, `tril`, `triu`),
//! joining and splitting (`stack`, `split`, `split_with_sizes`, `chunk`,
//! `unbind`), picking (`select`, `slice`) and rearranging (`repeat`,
//! `flip`, `roll`).
//!
//! Everything is composed from views, `cat`, `index_select`, `arange`,
//! `compare` and `where_cond`, so each op runs on either device without a
//! readback and differentiates through those ops' rules. The one op of its
//! own is the strided view of `slice` with a step (`Op::Slice`). Triangle
//! masks and flip indices are made on the device with `arange` (nothing is
//! uploaded per call but the arange parameters).

use wgrad_core::{CompareOp, DType, Error, Result, shape};
use wgrad_gpu::GpuTensor;

use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// A mask for `where`: U32 as the comparison ops make it, or I32 (nonzero
/// is true). Float masks are rejected, as PyTorch rejects non-bool masks.
pub(crate) fn bool_mask(op: &'static str, mask: &Tensor) -> Result<Tensor> {
    match mask.dtype() {
        DType::U32 => Ok(mask.clone()),
        DType::I32 => mask.ne_scalar(0.0),
        got => Err(Error::DTypeMismatch {
            op,
            expected: DType::U32,
            got,
        }),
    }
}

/// `mask ? a : b` (broadcast together) for any dtype: F32 goes through
/// `where_cond` (differentiable); other dtypes stack `[b, a]` on a new last
/// axis and gather with the 0/1 mask, which every dtype supports.
pub(crate) fn where_any(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype().is_float() && b.dtype().is_float() {
        return Tensor::where_cond(mask, a, b);
    }
    const OP: &str = "where";
    let shape = shape::broadcast_shapes(OP, &mask.shape(), &a.shape())?;
    let shape = shape::broadcast_shapes(OP, &shape, &b.shape())?;
    // Masks may hold any nonzero value for true; gather needs exactly 0/1.
    let pick = mask
        .cast(DType::I32)?
        .ne_scalar(0.0)?
        .cast(DType::I32)?
        .expand(&shape)?
        .unsqueeze(-1)?;
    let both = Tensor::stack(&[&b.expand(&shape)?, &a.expand(&shape)?], -1)?;
    both.gather(-1, &pick)?.squeeze(-1)
}

/// Python's slice-bound clamping: a negative bound counts from the end,
/// and the result is clamped into `0..=size`; `None` is the default.
fn clamp_bound(bound: Option<isize>, default: usize, size: usize) -> usize {
    match bound {
        None => default,
        Some(b) if b < 0 => size.saturating_sub(b.unsigned_abs()),
        Some(b) => b.unsigned_abs().min(size),
    }
}

/// The gradient of `x[start::step]` along `axis`: zeros of the input's
/// shape with `g` added at the picked positions (the picks never repeat).
pub(crate) fn slice_backward(
    g: &Storage,
    in_shape: &[usize],
    axis: isize,
    start: usize,
    step: usize,
) -> Result<Storage> {
    let device = g.device();
    let base = Storage::full(in_shape, 0.0, DType::F32, &device)?;
    let a = shape::normalize_axis("slice", axis, in_shape.len())?;
    let len = g.shape()[a];
    if len == 0 {
        return Ok(base);
    }
    let index = Storage::arange(
        start as f64,
        (start + len * step) as f64,
        step as f64,
        DType::I32,
        &device,
    )?;
    base.index_add(a as isize, &index, g)
}

/// The gradient of `narrow(axis, start, len)`: `g` placed at `start` along
/// `axis` of zeros shaped like the input ([`place_windows`]).
pub(crate) fn narrow_backward(
    g: &Storage,
    in_shape: &[usize],
    axis: isize,
    start: usize,
) -> Result<Storage> {
    let ax = shape::normalize_axis("narrow", axis, in_shape.len())?;
    place_windows(in_shape, ax, &[(start, g)])
}

/// Zeros of `shape` with each `(start, part)` written at `start` along
/// `axis`: the gradient of narrow windows of one input. The windows are
/// disjoint, in order, of one device and dtype. Windows that cover the axis
/// are concatenated (one copy each); otherwise on the GPU one fill and one
/// copy per window, on the CPU the zero pads and windows concatenated.
pub(crate) fn place_windows(
    shape: &[usize],
    axis: usize,
    parts: &[(usize, &Storage)],
) -> Result<Storage> {
    let end = |&(start, part): &(usize, &Storage)| start + part.shape()[axis];
    let Some(&(_, first)) = parts.first() else {
        return Err(Error::invalid("backward", "no window gradients to place"));
    };
    let covered = parts[0].0 == 0
        && parts.windows(2).all(|p| end(&p[0]) == p[1].0)
        && parts.last().map(end) == Some(shape[axis]);
    if covered {
        // Windows a fused kernel already wrote side by side into one
        // buffer (the fused attention's dq, dk and dv of a split qkv
        // projection): that buffer is the gradient, nothing to copy.
        let gpu: Option<Vec<&GpuTensor>> = parts
            .iter()
            .map(|&(_, part)| match part {
                Storage::Gpu(g) => Some(g),
                _ => None,
            })
            .collect();
        if let Some(joined) = gpu.and_then(|g| GpuTensor::joined_windows(&g, axis)) {
            return Ok(Storage::Gpu(joined));
        }
        let refs: Vec<&Storage> = parts.iter().map(|&(_, part)| part).collect();
        return Storage::concat(&refs, axis as isize);
    }
    if let Storage::Gpu(g) = first {
        let out = GpuTensor::full(g.device(), shape, 0.0, g.dtype())?;
        for &(start, part) in parts {
            let Storage::Gpu(part) = part else {
                return Err(Error::invalid(
                    "backward",
                    "window gradients on different devices",
                ));
            };
            if part.numel() > 0 {
                out.narrow(axis as isize, start, part.shape()[axis])?
                    .write_view(part)?;
            }
        }
        return Ok(Storage::Gpu(out));
    }
    let pad = |n: usize| -> Result<Storage> {
        let mut s = shape.to_vec();
        s[axis] = n;
        Storage::full(&s, 0.0, first.dtype(), &first.device())
    };
    let mut pieces = Vec::new();
    let mut at = 0;
    for part in parts {
        if part.0 > at {
            pieces.push(pad(part.0 - at)?);
        }
        pieces.push(part.1.clone());
        at = end(part);
    }
    if shape[axis] > at {
        pieces.push(pad(shape[axis] - at)?);
    }
    let refs: Vec<&Storage> = pieces.iter().collect();
    Storage::concat(&refs, axis as isize)
}

/// Structure ops: masks (`masked_fill`, `tril`, `triu`), joining and
/// splitting (`stack`, `split`, `chunk`, `unbind`), picking (`select`,
/// `slice` with Python's bounds and a step) and rearranging (`repeat`,
/// `flip`, `roll`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let m = Tensor::ones(&[3, 3], &cpu)?;
/// assert_eq!(m.tril(0)?.to_vec_f32()?, [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]);
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5], &cpu)?;
/// assert_eq!(x.slice(0, Some(1), None, 2)?.to_vec_f32()?, [2.0, 4.0]); // x[1::2]
/// assert_eq!(x.select(0, -1)?.item()?, 5.0); // x[-1]
/// let parts = x.chunk(2, 0)?;
/// assert_eq!(parts.len(), 2);
/// assert_eq!(parts[1].to_vec_f32()?, [4.0, 5.0]);
/// assert_eq!(Tensor::stack(&[&x, &x], 0)?.shape(), [2, 5]);
/// assert_eq!(x.flip(&[0])?.to_vec_f32()?, [5.0, 4.0, 3.0, 2.0, 1.0]);
/// assert_eq!(x.roll(&[1], &[0])?.to_vec_f32()?, [5.0, 1.0, 2.0, 3.0, 4.0]);
/// let big = x.gt_scalar(3.0)?;
/// assert_eq!(x.masked_fill(&big, 0.0)?.to_vec_f32()?, [1.0, 2.0, 3.0, 0.0, 0.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.Tensor.masked_fill`: `value` where `mask` is true, `self`
    /// elsewhere. `mask` (U32 as the comparisons make it, or I32 with
    /// nonzero = true) and `self` broadcast together, as in PyTorch's
    /// out-of-place op (a `[3]` input with a `[2, 3]` mask gives `[2, 3]`);
    /// the output has `self`'s dtype. The gradient is 0 where filled.
    pub fn masked_fill(&self, mask: &Tensor, value: f64) -> Result<Tensor> {
        const OP: &str = "masked_fill";
        let mask = bool_mask(OP, mask)?;
        shape::broadcast_shapes(OP, &self.shape(), &mask.shape())?;
        let fill = Tensor::full(&[], value, self.dtype(), &self.device())?;
        where_any(&mask, &fill, self)
    }

    /// `torch.tril`: keeps the elements on and below the `diagonal`-th
    /// diagonal of the last two dims (0 = main, positive above, negative
    /// below), zeroing the rest; batched over leading dims. Any dtype; the
    /// gradient passes where kept.
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("tril", diagonal, CompareOp::Le)
    }

    /// `torch.triu`: keeps the elements on and above the `diagonal`-th
    /// diagonal of the last two dims, zeroing the rest (see [`tril`](Self::tril)).
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("triu", diagonal, CompareOp::Ge)
    }

    /// Keeps element `(i, j)` of the last two dims where `j (keep) i + diagonal`.
    fn triangle(&self, op: &'static str, diagonal: i64, keep: CompareOp) -> Result<Tensor> {
        let s = self.shape();
        if s.len() < 2 {
            return Err(Error::invalid(
                op,
                format!("input tensor must have at least 2 dimensions, got shape {s:?}"),
            ));
        }
        let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
        let device = self.device();
        let mask = if rows == 0 || cols == 0 {
            Tensor::full(&[rows, cols], 0.0, DType::U32, &device)?
        } else {
            // Diagonals past either edge act like the edge; clamping keeps
            // the I32 arange in range.
            let d = diagonal.clamp(-(rows as i64), cols as i64) as f64;
            let shifted_rows = Tensor::arange(d, d + rows as f64, 1.0, DType::I32, &device)?
                .reshape(&[rows as isize, 1])?;
            let cols = Tensor::arange(0.0, cols as f64, 1.0, DType::I32, &device)?;
            cols.compare(&shifted_rows, keep)?
        };
        let zero = Tensor::full(&[], 0.0, self.dtype(), &device)?;
        where_any(&mask, self, &zero)
    }

    /// `torch.stack`: joins equally shaped tensors along a new axis `dim`
    /// (in `-(rank+1)..=rank`). Differentiable; an empty list or unequal
    /// shapes are errors naming the shapes.
    pub fn stack(tensors: &[&Tensor], dim: isize) -> Result<Tensor> {
        const OP: &str = "stack";
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid(OP, "expects a non-empty list of tensors"))?;
        let s0 = first.shape();
        for (i, t) in tensors.iter().enumerate().skip(1) {
            if t.shape()[..] != s0[..] {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "expects each tensor to be equal size, but got {:?} at entry 0 and {:?} \
                         at entry {i}",
                        &s0[..],
                        &t.shape()[..]
                    ),
                ));
            }
        }
        let d = shape::normalize_axis(OP, dim, s0.len() + 1)? as isize;
        let parts = tensors
            .iter()
            .map(|t| t.unsqueeze(d))
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&parts.iter().collect::<Vec<_>>(), d)
    }

    /// `torch.split(self, split_size, dim)`: views of `split_size` elements
    /// along `dim`, the last one smaller if the size does not divide. A
    /// zero `split_size` is only allowed for an empty dim.
    pub fn split(&self, split_size: usize, dim: isize) -> Result<Vec<Tensor>> {
        const OP: &str = "split";
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        let n = self.shape()[d];
        if split_size == 0 && n != 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "split_size can only be 0 if the dimension size is 0, but dim {dim} of \
                     shape {:?} has size {n}",
                    self.shape()
                ),
            ));
        }
        let mut sizes = Vec::new();
        let mut start = 0;
        while start < n {
            let len = split_size.min(n - start);
            sizes.push(len);
            start += len;
        }
        if sizes.is_empty() {
            sizes.push(0);
        }
        self.split_parts(d, &sizes)
    }

    /// `torch.split(self, sizes, dim)` with explicit sizes (views); they
    /// must sum to the size of `dim`.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: isize) -> Result<Vec<Tensor>> {
        const OP: &str = "split_with_sizes";
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        let n = self.shape()[d];
        let total = sizes.iter().try_fold(0usize, |acc, &s| acc.checked_add(s));
        if total != Some(n) {
            return Err(Error::invalid(
                OP,
                format!(
                    "split sizes {sizes:?} must sum exactly to {n}, the size of dim {dim} of \
                     shape {:?}",
                    self.shape()
                ),
            ));
        }
        self.split_parts(d, sizes)
    }

    fn split_parts(&self, axis: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
        let mut start = 0;
        let mut parts = Vec::with_capacity(sizes.len());
        for &len in sizes {
            parts.push(self.narrow(axis as isize, start, len)?);
            start += len;
        }
        Ok(parts)
    }

    /// `torch.chunk`: `chunks` views along `dim` of `ceil(size / chunks)`
    /// elements each (the last smaller; fewer chunks when the size runs
    /// out, e.g. 5 elements in 4 chunks give sizes 2, 2, 1). An empty dim
    /// gives `chunks` empty views, as in PyTorch.
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        const OP: &str = "chunk";
        if chunks == 0 {
            return Err(Error::invalid(
                OP,
                "chunks must be greater than 0, got 0".to_string(),
            ));
        }
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        let n = self.shape()[d];
        if n == 0 {
            return self.split_parts(d, &vec![0; chunks]);
        }
        self.split(n.div_ceil(chunks), d as isize)
    }

    /// `torch.unbind`: every index along `dim` as a view without that dim.
    pub fn unbind(&self, dim: isize) -> Result<Vec<Tensor>> {
        let d = shape::normalize_axis("unbind", dim, self.rank())?;
        (0..self.shape()[d])
            .map(|i| self.select(d as isize, i as isize))
            .collect()
    }

    /// `torch.select`: index `index` of `dim` (negative counts from the
    /// end), a view with that dim removed. Out of range is
    /// [`Error::IndexOutOfRange`].
    pub fn select(&self, dim: isize, index: isize) -> Result<Tensor> {
        const OP: &str = "select";
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        let n = self.shape()[d];
        let i = if index < 0 {
            index.checked_add(n as isize)
        } else {
            Some(index)
        };
        match i {
            Some(i) if i >= 0 && (i as usize) < n => {
                self.narrow(d as isize, i as usize, 1)?.squeeze(d as isize)
            }
            _ => Err(Error::IndexOutOfRange {
                op: OP,
                index: index as i64,
                size: n,
            }),
        }
    }

    /// Python's `x[.., start:end:step]` along `dim`: `start`/`end` may be
    /// negative (from the end) or `None` (the ends), and are clamped into
    /// the dim as Python does; `step` must be positive. A view: step 1 is
    /// `narrow`, a larger step a strided view. Differentiable (zero
    /// gradient where not picked).
    pub fn slice(
        &self,
        dim: isize,
        start: Option<isize>,
        end: Option<isize>,
        step: usize,
    ) -> Result<Tensor> {
        const OP: &str = "slice";
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        if step == 0 {
            return Err(Error::invalid(OP, "slice step must be positive, got 0"));
        }
        let n = self.shape()[d];
        let s = clamp_bound(start, 0, n);
        let e = clamp_bound(end, n, n);
        let len = if e > s { (e - s).div_ceil(step) } else { 0 };
        if step == 1 || len <= 1 {
            return self.narrow(d as isize, s.min(n), len);
        }
        let out = self.storage().narrow_step(d as isize, s, len, step)?;
        Ok(Tensor::record_view(
            out,
            Op::Slice {
                axis: d as isize,
                start: s,
                step,
            },
            self,
        ))
    }

    /// `torch.Tensor.repeat`: tiles the tensor `repeats[i]` times along
    /// dim `i`; with more repeats than dims, the tensor is first viewed
    /// with leading size-1 dims (so `[3].repeat([2, 2])` is `[2, 6]`).
    /// Fewer repeats than dims is an error. Differentiable (the gradient
    /// sums over the copies).
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        const OP: &str = "repeat";
        let s = self.shape();
        if repeats.len() < s.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "the number of repeat dims ({repeats:?}) can not be smaller than the number \
                     of dims of the tensor (shape {:?})",
                    &s[..]
                ),
            ));
        }
        let mut shape = vec![1usize; repeats.len() - s.len()];
        shape.extend_from_slice(&s);
        let target: Option<Vec<usize>> = shape
            .iter()
            .zip(repeats)
            .map(|(&d, &r)| d.checked_mul(r))
            .collect();
        let target = target.ok_or_else(|| {
            Error::invalid(OP, format!("repeating {shape:?} by {repeats:?} overflows"))
        })?;
        shape::checked_numel(OP, &target)?;
        let mut out = self.reshape(&as_isize(&shape))?;
        // One axis at a time, viewed as [before, 1, size, after] so the rank
        // never passes 4 (an interleaved [r0, s0, r1, s1, ..] view could
        // pass the rank limit).
        for (ax, &r) in repeats.iter().enumerate() {
            if r == 1 {
                continue;
            }
            let before: usize = shape[..ax].iter().product();
            let after: usize = shape[ax + 1..].iter().product();
            let size = shape[ax];
            let tiled = out
                .reshape(&as_isize(&[before, 1, size, after]))?
                .expand(&[before, r, size, after])?;
            shape[ax] = size * r;
            out = tiled.reshape(&as_isize(&shape))?;
        }
        Ok(out)
    }

    /// `torch.flip`: reverses the order along each of `dims` (a copy;
    /// repeated dims are an error). Differentiable.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        const OP: &str = "flip";
        if dims.is_empty() || self.rank() == 0 {
            shape::normalize_axes(OP, dims, self.rank())?;
            return Ok(self.clone());
        }
        let axes = shape::normalize_axes(OP, dims, self.rank())?;
        let mut out = self.clone();
        for a in axes {
            let n = self.shape()[a];
            if n < 2 {
                continue;
            }
            let reversed = Tensor::arange(n as f64 - 1.0, -1.0, -1.0, DType::I32, &self.device())?;
            out = out.index_select(a as isize, &reversed)?;
        }
        Ok(out)
    }

    /// `torch.roll`: shifts elements along each of `dims` by the matching
    /// `shifts` entry (negative shifts go left), wrapping around. With no
    /// `dims`, the tensor is rolled as if flattened by the single shift
    /// and keeps its shape. Differentiable.
    pub fn roll(&self, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
        const OP: &str = "roll";
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::invalid(
                    OP,
                    format!("with no dims, expects exactly one shift, got shifts {shifts:?}"),
                ));
            }
            let flat = self.reshape(&[-1])?;
            return flat.roll(shifts, &[0])?.reshape(&as_isize(&self.shape()));
        }
        if shifts.len() != dims.len() {
            return Err(Error::invalid(
                OP,
                format!("shifts {shifts:?} and dims {dims:?} must have the same length"),
            ));
        }
        let mut out = self.clone();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = shape::normalize_axis(OP, dim, self.rank())?;
            let n = self.shape()[d];
            if n == 0 {
                continue;
            }
            let k = shift.rem_euclid(n as isize) as usize;
            if k == 0 {
                continue;
            }
            let tail = out.narrow(d as isize, n - k, k)?;
            let head = out.narrow(d as isize, 0, n - k)?;
            out = Tensor::cat(&[&tail, &head], d as isize)?;
        }
        Ok(out)
    }
}

pub(crate) fn as_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}
