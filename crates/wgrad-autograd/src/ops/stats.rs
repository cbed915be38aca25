//! Reductions named as in `torch`: `amax`/`amin`, `aminmax`, `var_mean`,
//! `std_mean`, `median` (of everything, or along a dim with indices) and
//! `count_nonzero`, composed from the existing reductions, the stable
//! sort and `gather` on the tensor's device.

use wgrad_core::{DType, Error, Result, shape};

use super::math::MathOp;
use crate::graph::Op;
use crate::tensor::Tensor;

/// Errors unless `t` is a float tensor (`op` has no integer kernel).
fn expect_float(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "{op} only supports floating-point dtypes, got {}",
                t.dtype()
            ),
        ))
    }
}

impl Tensor {
    /// Checks that no reduced dim of an extreme-value reduction is empty
    /// (PyTorch's message), `axes` as given (`&[]` = all).
    fn check_extreme(&self, op: &'static str, axes: &[isize]) -> Result<()> {
        if axes.is_empty() {
            if self.numel() == 0 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "{op}(): Expected reduction dim to be specified for input.numel() == 0 \
                         (shape {:?}). Specify the reduction dim with the 'dim' argument.",
                        self.shape()
                    ),
                ));
            }
            return Ok(());
        }
        let shape = self.shape();
        for a in shape::normalize_axes(op, axes, shape.len())? {
            if shape[a] == 0 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "{op}(): Expected reduction dim {a} to have non-zero size (shape {:?})",
                        &shape[..]
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `torch` reductions beyond `sum`/`mean`/`max`: `amax`, `amin`,
/// `aminmax`, `var_mean`, `std_mean`, `median`, `median_dim`,
/// `count_nonzero`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0, 5.0, 4.0, 4.0], &[2, 3], &Device::Cpu)?;
/// assert_eq!(x.amax(&[1], false)?.to_vec_f32()?, [3.0, 5.0]);
/// let (lo, hi) = x.aminmax(None, false)?;
/// assert_eq!((lo.item()?, hi.item()?), (1.0, 5.0));
/// assert_eq!(x.median()?.item()?, 3.0);
/// let (values, indices) = x.median_dim(1, false)?;
/// assert_eq!(values.to_vec_f32()?, [2.0, 4.0]);
/// assert_eq!(indices.to_vec::<i32>()?, [2, 2]); // as PyTorch
/// let (var, mean) = x.var_mean(&[], 1, false)?;
/// assert_eq!(mean.item()?, 19.0 / 6.0);
/// assert_eq!(x.count_nonzero(&[])?.to_vec::<i32>()?, [6]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.amax(x, dims, keepdim)`: the largest value over `dims` (`&[]`
    /// = all); NaN propagates; the gradient is shared evenly by tied
    /// maxima (NaN gradients where the result is NaN, as PyTorch). An empty
    /// reduced dim, or an empty tensor reduced over everything, is an error.
    pub fn amax(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.check_extreme("amax", dims)?;
        self.max(dims, keepdim)
    }

    /// `torch.amin(x, dims, keepdim)`: the smallest value over `dims` (see
    /// [`amax`](Self::amax)).
    pub fn amin(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.check_extreme("amin", dims)?;
        self.min(dims, keepdim)
    }

    /// `torch.aminmax(x, dim=dim, keepdim=keepdim)`: `(amin, amax)` over
    /// `dim` (`None` = every element). Empty reductions are an error.
    pub fn aminmax(&self, dim: Option<isize>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        const OP: &str = "aminmax";
        let dims: Vec<isize> = dim.into_iter().collect();
        if self.check_extreme(OP, &dims).is_err() {
            shape::normalize_axes(OP, &dims, self.rank())?;
            return Err(Error::invalid(
                OP,
                format!(
                    "aminmax(): cannot compute aminmax over an empty dimension as the operation \
                     has no identity (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let (lo, hi) = (self.min(&dims, keepdim)?, self.max(&dims, keepdim)?);
        if dim.is_none() && keepdim {
            // PyTorch keeps every dim as size 1.
            let ones = vec![1isize; self.rank()];
            return Ok((lo.reshape(&ones)?, hi.reshape(&ones)?));
        }
        Ok((lo, hi))
    }

    /// `torch.var_mean(x, dims, correction=correction, keepdim=keepdim)`:
    /// `(var, mean)` over `dims` (`&[]` = all); floats only.
    pub fn var_mean(
        &self,
        dims: &[isize],
        correction: usize,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        expect_float("var_mean", self)?;
        Ok((
            self.var(dims, correction, keepdim)?,
            self.mean(dims, keepdim)?,
        ))
    }

    /// `torch.std_mean(x, dims, correction=correction, keepdim=keepdim)`:
    /// `(std, mean)` over `dims` (`&[]` = all); floats only.
    pub fn std_mean(
        &self,
        dims: &[isize],
        correction: usize,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        expect_float("std_mean", self)?;
        Ok((
            self.std(dims, correction, keepdim)?,
            self.mean(dims, keepdim)?,
        ))
    }

    /// `torch.count_nonzero(x, dims)`: the I32 count (PyTorch: int64) of
    /// non-zero elements (NaN counts) over `dims` (`&[]` = all).
    pub fn count_nonzero(&self, dims: &[isize]) -> Result<Tensor> {
        let op = "count_nonzero";
        shape::normalize_axes(op, dims, self.rank())?;
        let nonzero = if self.dtype() == DType::U32 {
            self.detach()
        } else {
            self.detach().ne_scalar(0.0)?
        };
        nonzero.sum(dims, false)
    }

    /// `torch.median(x)`: the lower median of all elements (the
    /// `(n - 1) / 2`-th smallest), NaN if any element is NaN (or the tensor
    /// is empty). The gradient is shared evenly by the elements equal to
    /// the result (the NaN elements when it is NaN), as PyTorch's.
    pub fn median(&self) -> Result<Tensor> {
        let n = self.numel();
        if n == 0 {
            let nan = crate::storage::Storage::full(&[], f64::NAN, self.dtype(), &self.device())?;
            let node = Op::Math(MathOp::EvenlyDistributed);
            return Ok(Tensor::record(nan, node, &[self]));
        }
        let flat = self.storage().reshape(&[-1])?;
        let (sorted, _) = flat.sort(0, false)?;
        let k = (n - 1) / 2;
        let mid = sorted.narrow(0, k, 1)?;
        // NaN sorts last: the last value is NaN exactly when one is.
        let last = sorted.narrow(0, n - 1, 1)?;
        let value = if self.dtype().is_float() {
            let nan = last.compare(&last, wgrad_core::CompareOp::Ne)?;
            crate::storage::Storage::where_cond(&nan, &last, &mid)?
        } else {
            mid
        };
        let value = value.reshape(&[])?;
        Ok(Tensor::record(
            value,
            Op::Math(MathOp::EvenlyDistributed),
            &[self],
        ))
    }

    /// `torch.median(x, dim, keepdim)`: the lower median along `dim` and
    /// its I32 index. Ties pick PyTorch's index: the `(n - 1) / 2`-th of
    /// the stable (value, position) order; a row with NaN gives NaN and the
    /// index of its first NaN. The values are differentiable (the gradient
    /// goes to the index). A 0-d tensor takes dim 0/-1; an empty `dim` is
    /// an error.
    pub fn median_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        const OP: &str = "median";
        let device = self.device();
        if self.rank() == 0 {
            shape::normalize_axis(OP, dim, 1)?;
            let index = Tensor::full(&[], 0.0, DType::I32, &device)?;
            return Ok((self.reshape(&[])?, index));
        }
        let d = shape::normalize_axis(OP, dim, self.rank())?;
        let n = self.shape()[d];
        if n == 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "median(): Expected reduction dim {d} to have non-zero size (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let x = self.detach();
        let order = x.argsort(d as isize, false)?;
        let mut kept = self.shape().to_vec();
        kept[d] = 1;
        let k = ((n - 1) / 2) as f64;
        let mut pos = Tensor::full(&kept, k, DType::I32, &device)?;
        if self.dtype().is_float() {
            // With NaN in the row, the first NaN: the stable sort puts the
            // NaN last, the first of them at n - count.
            let nans = x.isnan()?.sum(&[d as isize], true)?;
            let has_nan = nans.gt_scalar(0.0)?;
            let first_nan = nans.neg()?.add_scalar(n as f32)?;
            pos = Tensor::where_cond(&has_nan, &first_nan, &pos)?;
        }
        let index = order.gather(d as isize, &pos)?;
        let values = self.gather(d as isize, &index)?;
        if keepdim {
            Ok((values, index))
        } else {
            Ok((values.squeeze(d as isize)?, index.squeeze(d as isize)?))
        }
    }
}
