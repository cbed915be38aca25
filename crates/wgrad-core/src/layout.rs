//! Strided views: shape, strides and offset over a flat buffer.
//!
//! View operations (transpose, permute, narrow, expand, reshape of a
//! contiguous tensor) only compute a new [`Layout`]; no data moves.

use crate::shape::{
    self, broadcast_strides, check_rank, checked_numel, contiguous_strides, infer_reshape,
    normalize_axis, numel,
};
use crate::{Error, Result};

/// Shape, strides (in elements) and starting offset (in elements) of a view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl Layout {
    /// A contiguous row-major layout starting at element 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// A layout from its parts (no validation beyond rank agreement).
    pub fn from_parts(
        op: &'static str,
        shape: Vec<usize>,
        strides: Vec<usize>,
        offset: usize,
    ) -> Result<Self> {
        if shape.len() != strides.len() {
            return Err(Error::invalid(
                op,
                format!("shape {shape:?} and strides {strides:?} differ in rank"),
            ));
        }
        Ok(Layout {
            shape,
            strides,
            offset,
        })
    }

    /// The dims of the view (`Tensor.shape` in PyTorch).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Step between neighbours along each dim, in elements (`Tensor.stride()`).
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    /// Index of the view's first element in the buffer, in elements
    /// (`Tensor.storage_offset()`).
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Number of dims (`Tensor.dim()`); 0 for a scalar.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements, the product of the dims (`Tensor.numel()`); 1 for
    /// a scalar, 0 if any dim is 0.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Whether elements are laid out densely in row-major order (size-1 dims
    /// may have any stride).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true; // nothing to lay out
        }
        let mut expected = 1;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// One past the highest element offset this view touches (0 if empty).
    pub fn span_end(&self) -> usize {
        if self.numel() == 0 {
            return self.offset;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(&d, &s)| (d - 1) * s)
                .sum::<usize>()
            + 1
    }

    /// Swaps two axes (a 0-d tensor accepts `0`/`-1` and stays as it is).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Self> {
        if shape::is_scalar_axis(a, self.rank()) && shape::is_scalar_axis(b, self.rank()) {
            return Ok(self.clone());
        }
        let a = normalize_axis("transpose", a, self.rank())?;
        let b = normalize_axis("transpose", b, self.rank())?;
        let mut out = self.clone();
        out.shape.swap(a, b);
        out.strides.swap(a, b);
        Ok(out)
    }

    /// Reorders axes: output axis `i` is input axis `dims[i]`.
    pub fn permute(&self, dims: &[isize]) -> Result<Self> {
        let rank = self.rank();
        if dims.len() != rank {
            return Err(Error::invalid(
                "permute",
                format!(
                    "expected {rank} dims for shape {:?}, got {dims:?}",
                    self.shape
                ),
            ));
        }
        let mut seen = vec![false; rank];
        let mut out = Layout {
            shape: Vec::with_capacity(rank),
            strides: Vec::with_capacity(rank),
            offset: self.offset,
        };
        for &d in dims {
            let d = normalize_axis("permute", d, rank)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::invalid(
                    "permute",
                    format!("dims {dims:?} repeat axis {d}"),
                ));
            }
            out.shape.push(self.shape[d]);
            out.strides.push(self.strides[d]);
        }
        Ok(out)
    }

    /// Keeps `len` elements of `axis` starting at `start`.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Self> {
        let a = normalize_axis("narrow", axis, self.rank())?;
        let size = self.shape[a];
        if start > size {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "start {start} is out of range for axis {axis} of shape {:?} (size {size})",
                    self.shape
                ),
            ));
        }
        if len > size - start {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "start {start} + length {len} exceeds the size {size} of axis {axis} of shape {:?}",
                    self.shape
                ),
            ));
        }
        let mut out = self.clone();
        if len > 0 {
            out.offset += start * self.strides[a];
        }
        out.shape[a] = len;
        Ok(out)
    }

    /// Keeps `len` elements of `axis` starting at `start`, every `step`-th
    /// one (Python's `x[start::step]` along one axis): the stride along
    /// `axis` is multiplied by `step`. `step` must be positive and the last
    /// element kept, `start + (len - 1) * step`, inside the axis.
    pub fn narrow_step(&self, axis: isize, start: usize, len: usize, step: usize) -> Result<Self> {
        const OP: &str = "slice";
        let a = normalize_axis(OP, axis, self.rank())?;
        let size = self.shape[a];
        if step == 0 {
            return Err(Error::invalid(OP, "slice step must be positive, got 0"));
        }
        let last = match len {
            0 => Some(start),
            _ => (len - 1)
                .checked_mul(step)
                .and_then(|s| s.checked_add(start)),
        };
        let fits = match (len, last) {
            (0, Some(l)) => l <= size,
            (_, Some(l)) => l < size,
            (_, None) => false,
        };
        if !fits {
            return Err(Error::invalid(
                OP,
                format!(
                    "{len} elements from {start} with step {step} exceed the size {size} of \
                     axis {axis} of shape {:?}",
                    self.shape
                ),
            ));
        }
        let mut out = self.clone();
        if len > 0 {
            out.offset += start * self.strides[a];
        }
        out.shape[a] = len;
        out.strides[a] = self.strides[a] * step;
        Ok(out)
    }

    /// Broadcasts to `target` (size-1 or missing leading dims get stride 0).
    pub fn expand(&self, target: &[usize]) -> Result<Self> {
        checked_numel("expand", target)?;
        let strides = broadcast_strides("expand", &self.shape, &self.strides, target)?;
        Ok(Layout {
            shape: target.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// Reshape as a view, whenever strides can express it (PyTorch's
    /// `view` rule, which its `reshape` follows): a contiguous layout always,
    /// a strided one when each run of dims that the new shape splits or
    /// merges is contiguous within itself (e.g. the `[b, t, e]` third of a
    /// `[b, t, 3e]` tensor viewed as `[b, t, h, e / h]`). `None` otherwise
    /// (the caller then copies with `contiguous()` first, as `reshape` does).
    pub fn reshape(&self, to: &[isize]) -> Result<Option<Self>> {
        let shape = infer_reshape("reshape", &self.shape, to)?;
        if self.is_contiguous() {
            return Ok(Some(Layout {
                strides: contiguous_strides(&shape),
                shape,
                offset: self.offset,
            }));
        }
        Ok(
            view_strides(&self.shape, &self.strides, &shape).map(|strides| Layout {
                shape,
                strides,
                offset: self.offset,
            }),
        )
    }

    /// Inserts a size-1 axis at `axis` (in `-(rank+1)..=rank`).
    pub fn unsqueeze(&self, axis: isize) -> Result<Self> {
        let a = normalize_axis("unsqueeze", axis, self.rank() + 1)?;
        let mut out = self.clone();
        let stride = if a < self.rank() {
            self.strides[a] * self.shape[a]
        } else {
            1
        };
        out.shape.insert(a, 1);
        out.strides.insert(a, stride);
        check_rank("unsqueeze", &out.shape)?;
        Ok(out)
    }

    /// Removes `axis` if its size is 1; otherwise (and for a 0-d tensor's
    /// implicit axis) returns the view unchanged, as `torch.squeeze(dim)` does.
    pub fn squeeze(&self, axis: isize) -> Result<Self> {
        if shape::is_scalar_axis(axis, self.rank()) {
            return Ok(self.clone());
        }
        let a = normalize_axis("squeeze", axis, self.rank())?;
        if self.shape[a] != 1 {
            return Ok(self.clone());
        }
        let mut out = self.clone();
        out.shape.remove(a);
        out.strides.remove(a);
        Ok(out)
    }

    /// Element offsets of the view in row-major order (for host-side code and tests).
    pub fn offsets(&self) -> Vec<usize> {
        let n = self.numel();
        let mut out = Vec::with_capacity(n);
        let mut index = vec![0usize; self.rank()];
        for _ in 0..n {
            out.push(
                self.offset
                    + index
                        .iter()
                        .zip(&self.strides)
                        .map(|(i, s)| i * s)
                        .sum::<usize>(),
            );
            for ax in (0..self.rank()).rev() {
                index[ax] += 1;
                if index[ax] < self.shape[ax] {
                    break;
                }
                index[ax] = 0;
            }
        }
        out
    }
}

/// Strides that give `new` (same element count) the elements of a view
/// with `shape`/`strides` in row-major order, if any do: ATen's
/// `computeStride`. Dims are taken in chunks that are contiguous within
/// themselves in the old layout; each chunk must be a whole run of new dims.
fn view_strides(shape: &[usize], strides: &[usize], new: &[usize]) -> Option<Vec<usize>> {
    if shape.contains(&0) {
        return Some(contiguous_strides(new));
    }
    let mut out = vec![0usize; new.len()];
    // Number of new dims not yet given a stride (the next is `view_d - 1`).
    let mut view_d = new.len();
    let mut chunk_base = *strides.last()?;
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..shape.len()).rev() {
        tensor_numel *= shape[d];
        let chunk_ends =
            d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base);
        if chunk_ends {
            while view_d > 0 && (view_numel < tensor_numel || new[view_d - 1] == 1) {
                out[view_d - 1] = view_numel * chunk_base;
                view_numel *= new[view_d - 1];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if d > 0 {
                chunk_base = strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_step_multiplies_the_stride() {
        let l = Layout::contiguous(&[2, 10]);
        let s = l.narrow_step(1, 0, 4, 3).unwrap();
        assert_eq!(s.shape(), &[2, 4]);
        assert_eq!(s.strides(), &[10, 3]);
        assert_eq!(s.offsets(), vec![0, 3, 6, 9, 10, 13, 16, 19]);
        let s = l.narrow_step(0, 1, 1, 5).unwrap();
        assert_eq!(s.offsets(), vec![10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
        assert!(l.narrow_step(1, 1, 4, 0).is_err());
        assert!(l.narrow_step(1, 2, 4, 3).is_err());
        assert_eq!(l.narrow_step(-1, 10, 0, 2).unwrap().shape(), &[2, 0]);
    }

    #[test]
    fn transpose_is_not_contiguous() {
        let l = Layout::contiguous(&[2, 3]);
        let t = l.transpose(0, 1).unwrap();
        assert_eq!(t.shape(), &[3, 2]);
        assert!(!t.is_contiguous());
        assert_eq!(t.offsets(), vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn narrow_moves_offset_and_checks_range() {
        let l = Layout::contiguous(&[4, 3]);
        let n = l.narrow(0, 1, 2).unwrap();
        assert_eq!(n.offset(), 3);
        assert!(l.narrow(0, 3, 2).is_err());
        // Never overflows (a debug build used to panic) and names the start.
        let err = l.narrow(1, usize::MAX, 2).unwrap_err().to_string();
        assert!(err.contains("start") && err.contains("size 3"), "{err}");
        let err = l.narrow(1, 1, usize::MAX).unwrap_err().to_string();
        assert!(err.contains("length") && err.contains("size 3"), "{err}");
    }

    #[test]
    fn squeeze_of_a_dim_that_is_not_1_is_a_no_op() {
        let l = Layout::contiguous(&[2, 1, 3]);
        assert_eq!(l.squeeze(0).unwrap(), l);
        assert_eq!(l.squeeze(1).unwrap().shape(), &[2, 3]);
        let scalar = Layout::contiguous(&[]);
        assert_eq!(scalar.squeeze(0).unwrap(), scalar);
        assert_eq!(scalar.squeeze(-1).unwrap(), scalar);
        assert!(scalar.squeeze(1).is_err());
    }

    #[test]
    fn expand_rejects_overflowing_shapes() {
        let l = Layout::contiguous(&[1, 1]);
        assert!(l.expand(&[usize::MAX, 2]).is_err());
    }

    #[test]
    fn expand_uses_zero_strides() {
        let l = Layout::contiguous(&[3, 1]);
        let e = l.expand(&[2, 3, 4]).unwrap();
        assert_eq!(e.strides(), &[0, 1, 0]);
        assert!(l.expand(&[3, 2, 2]).is_err());
        assert!(l.expand(&[2, 4]).is_err());
    }

    #[test]
    fn empty_layouts_are_contiguous() {
        assert!(Layout::contiguous(&[0, 0]).is_contiguous());
        assert!(
            Layout::contiguous(&[3, 0])
                .reshape(&[0, 5])
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn reshape_of_view_needs_copy() {
        let t = Layout::contiguous(&[2, 3]).transpose(0, 1).unwrap();
        assert!(t.reshape(&[6]).unwrap().is_none());
        assert!(
            Layout::contiguous(&[2, 3])
                .reshape(&[3, -1])
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn strided_views_reshape_as_views_where_strides_allow() {
        // The middle third of [2, 4, 12] along the last dim: [2, 4, 4] with
        // strides [48, 12, 1]. Splitting its last dim keeps it a view.
        let third = Layout::contiguous(&[2, 4, 12]).narrow(2, 4, 4).unwrap();
        let heads = third.reshape(&[2, 4, 2, 2]).unwrap().unwrap();
        assert_eq!(heads.strides(), [48, 12, 2, 1]);
        assert_eq!(heads.offset(), 4);
        // Merging the first two dims too ([2, 4] are 48 = 4 * 12 apart).
        let merged = third.reshape(&[8, 4]).unwrap().unwrap();
        assert_eq!(merged.strides(), [12, 1]);
        // But not the last two (12 != 4 * 1): a copy.
        assert!(third.reshape(&[2, 16]).unwrap().is_none());
        // Size-1 dims go anywhere; an expanded (stride 0) dim can be split.
        let e = Layout::contiguous(&[1, 3]).expand(&[4, 3]).unwrap();
        assert_eq!(
            e.reshape(&[2, 2, 3, 1]).unwrap().unwrap().strides(),
            [0, 0, 1, 1]
        );
        assert!(e.reshape(&[12]).unwrap().is_none());
        // Every view's elements in row-major order are the reshape's.
        let t = Layout::contiguous(&[3, 4]).transpose(0, 1).unwrap();
        assert_eq!(t.reshape(&[2, 2, 3]).unwrap().unwrap().strides(), [2, 1, 4]);
    }
}
