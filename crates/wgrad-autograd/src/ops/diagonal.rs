//! Diagonals: `diagonal`, `diag` (both directions) and `trace`, composed
//! from `permute`, `narrow`, `gather`, `cat` and `where` on the tensor's
//! device (the index vectors come from `arange`), so they differentiate
//! through those ops' rules.

use wgrad_core::{DType, Error, Result, shape};

use crate::ops::structure::{as_isize, where_any};
use crate::tensor::Tensor;

/// Why `diagonal`'s result is not written in place.
const DIAGONAL_IS_A_COPY: &str = "diagonal returns a copy in wgrad (PyTorch returns a view), \
                                  so an in-place write would not reach the input; write the \
                                  input's diagonal out of place instead (x + v.diag(0) for a \
                                  matrix, or where_cond with a Tensor::eye mask)";

/// Diagonals and traces.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let m = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3], &cpu)?;
/// assert_eq!(m.diagonal(0, 0, 1)?.to_vec_f32()?, [0.0, 4.0]);
/// assert_eq!(m.diagonal(1, 0, 1)?.to_vec_f32()?, [1.0, 5.0]);
/// assert_eq!(m.diag(-1)?.to_vec_f32()?, [3.0]);
/// assert_eq!(m.trace()?.item()?, 4.0);
/// let v = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &cpu)?;
/// assert_eq!(v.diag(1)?.to_vec_f32()?, [0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.diagonal(x, offset, dim1, dim2)`: the elements `(i, i +
    /// offset)` of the `dim1 x dim2` planes (offset > 0 above the main
    /// diagonal, < 0 below), as a new last dim after the remaining dims.
    /// An offset past the edge gives an empty diagonal; equal dims are an
    /// error. Differentiable. A copy, where PyTorch returns a view: so
    /// that `x.diagonal(..).fill_(v)` cannot silently leave `x` as it was,
    /// in-place ops on the result are an error (an empty diagonal aside).
    pub fn diagonal(&self, offset: i64, dim1: isize, dim2: isize) -> Result<Tensor> {
        let out = self.diagonal_copy(offset, dim1, dim2)?;
        if out.numel() > 0 {
            // The result's data is fresh (a gather), shared with no input.
            out.inner.cell.refuse_writes(DIAGONAL_IS_A_COPY);
        }
        Ok(out)
    }

    /// [`diagonal`](Self::diagonal) without the write refusal: `diag` and
    /// `trace` return copies in PyTorch too.
    fn diagonal_copy(&self, offset: i64, dim1: isize, dim2: isize) -> Result<Tensor> {
        const OP: &str = "diagonal";
        let rank = self.rank();
        let d1 = shape::normalize_axis(OP, dim1, rank)?;
        let d2 = shape::normalize_axis(OP, dim2, rank)?;
        if d1 == d2 {
            return Err(Error::invalid(
                OP,
                format!("diagonal dimensions cannot be identical {dim1}, {dim2}"),
            ));
        }
        let mut order: Vec<isize> = (0..rank)
            .filter(|&a| a != d1 && a != d2)
            .map(|a| a as isize)
            .collect();
        order.extend([d1 as isize, d2 as isize]);
        let moved = self.permute(&order)?;
        let s = self.shape();
        let (rows, cols) = (s[d1] as i64, s[d2] as i64);
        let (row0, col0) = if offset >= 0 {
            (0, offset)
        } else {
            (offset.saturating_neg(), 0)
        };
        let len = (rows - row0).min(cols - col0).max(0) as usize;
        let mut out_shape: Vec<usize> = order[..rank - 2].iter().map(|&a| s[a as usize]).collect();
        out_shape.push(len);
        if len == 0 {
            let empty = moved.narrow(-2, 0, 0)?.narrow(-1, 0, 0)?;
            return empty.reshape(&as_isize(&out_shape));
        }
        let picked = moved.narrow(-2, row0 as usize, len)?;
        let device = self.device();
        let col0 = col0 as f64;
        let index =
            Tensor::arange(col0, col0 + len as f64, 1.0, DType::I32, &device)?.reshape(&[-1, 1])?;
        let mut index_shape = out_shape.clone();
        index_shape.push(1);
        let index = index.expand(&index_shape)?;
        picked.gather(-1, &index)?.squeeze(-1)
    }

    /// `torch.diag(x, diagonal)`: a 1-D tensor of `n` values becomes the
    /// square matrix of size `n + |diagonal|` with them on the `diagonal`-th
    /// diagonal (zeros elsewhere); a 2-D tensor gives its `diagonal`-th
    /// diagonal as 1-D. Other ranks are an error, as in PyTorch.
    pub fn diag(&self, diagonal: i64) -> Result<Tensor> {
        const OP: &str = "diag";
        match self.rank() {
            1 => self.diag_embed_1d(diagonal),
            2 => self.diagonal_copy(diagonal, 0, 1),
            r => Err(Error::invalid(
                OP,
                format!("diag(): Supports 1D or 2D tensors. Got {r}D"),
            )),
        }
    }

    fn diag_embed_1d(&self, diagonal: i64) -> Result<Tensor> {
        const OP: &str = "diag";
        let n = self.numel();
        let k = usize::try_from(diagonal.unsigned_abs())
            .map_err(|_| Error::invalid(OP, format!("diagonal {diagonal} is too large")))?;
        let size = n
            .checked_add(k)
            .ok_or_else(|| Error::invalid(OP, format!("diagonal {diagonal} is too large")))?;
        shape::checked_numel(OP, &[size, size])?;
        let device = self.device();
        // The values padded to `size`: row i of the output holds v[i] (at
        // column i + k) above the diagonal, column j holds v[j] below it.
        let padded = if k == 0 {
            self.clone()
        } else {
            let zeros = Tensor::full(&[k], 0.0, self.dtype(), &device)?;
            Tensor::cat(&[self, &zeros], 0)?
        };
        let values = if diagonal >= 0 {
            padded.reshape(&[-1, 1])?
        } else {
            padded.reshape(&[1, -1])?
        };
        let values = values.expand(&[size, size])?;
        if size == 0 {
            return values.contiguous();
        }
        let rows = Tensor::arange(0.0, size as f64, 1.0, DType::I32, &device)?;
        let shifted = rows.add_scalar(diagonal as f32)?.reshape(&[-1, 1])?;
        let mask = rows.eq(&shifted)?;
        let zero = Tensor::full(&[], 0.0, self.dtype(), &device)?;
        where_any(&mask, &values, &zero)
    }

    /// `torch.trace(x)`: the sum of the main diagonal of a 2-D tensor (0 for
    /// an empty one); I32 sums stay I32 (PyTorch: int64).
    pub fn trace(&self) -> Result<Tensor> {
        if self.rank() != 2 {
            return Err(Error::invalid(
                "trace",
                format!(
                    "trace: expected a matrix, but got tensor with dim {}",
                    self.rank()
                ),
            ));
        }
        self.diagonal_copy(0, 0, 1)?.sum_all()
    }
}
