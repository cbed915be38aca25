//! Reductions.

use wgrad_core::Result;

use crate::graph::Op;
use crate::tensor::Tensor;

/// Reductions over `axes` (`&[]` means all; negative count from the end),
/// keeping the reduced axes as size 1 with `keepdim`: `sum`, `mean`,
/// `max`/`min` (`torch.amax`/`amin`), `var` (with Bessel's `correction`),
/// `argmax`/`argmin`; more (`prod`, `std`, `norm`, `logsumexp`,
/// `max_dim`) in the math ops.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &Device::Cpu)?;
/// assert_eq!(x.sum_all()?.item()?, 21.0);
/// assert_eq!(x.sum(&[0], false)?.to_vec_f32()?, [5.0, 7.0, 9.0]);
/// assert_eq!(x.mean(&[-1], true)?.shape(), [2, 1]);
/// assert_eq!(x.mean(&[-1], true)?.to_vec_f32()?, [2.0, 5.0]);
/// assert_eq!(x.max(&[1], false)?.to_vec_f32()?, [3.0, 6.0]);
/// assert_eq!(x.var(&[1], 1, false)?.to_vec_f32()?, [1.0, 1.0]);
/// assert_eq!(x.argmax(1, false)?.to_vec::<i32>()?, [2, 2]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// Sum over `axes` (`&[]` = all).
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.sum(axes, keepdim);
        }
        let out = self.storage().sum(axes, keepdim)?;
        Ok(Tensor::record(
            out,
            Op::Sum {
                axes: axes.to_vec(),
                keepdim,
            },
            &[self],
        ))
    }
    /// Sum of all elements (a 0-d tensor).
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }
    /// Mean over `axes` (`&[]` = all; `torch.mean`), keeping them as size 1
    /// if `keepdim`; F32 only. The mean of nothing is NaN.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let out = self.storage().mean(axes, keepdim)?;
        Ok(Tensor::record(
            out,
            Op::Mean {
                axes: axes.to_vec(),
                keepdim,
            },
            &[self],
        ))
    }
    /// Mean of all elements (a 0-d tensor).
    pub fn mean_all(&self) -> Result<Tensor> {
        self.mean(&[], false)
    }
    /// Max over `axes` (like `torch.amax`: ties share the gradient evenly).
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let out = self.storage().max(axes, keepdim)?;
        Ok(Tensor::record(
            out,
            Op::Extreme {
                axes: axes.to_vec(),
                keepdim,
            },
            &[self],
        ))
    }
    /// Min over `axes` (like `torch.amin`).
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let out = self.storage().min(axes, keepdim)?;
        Ok(Tensor::record(
            out,
            Op::Extreme {
                axes: axes.to_vec(),
                keepdim,
            },
            &[self],
        ))
    }
    /// Variance with `correction` (1 = unbiased, PyTorch's default).
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
        let out = self.storage().var(axes, correction, keepdim)?;
        Ok(Tensor::record(
            out,
            Op::Var {
                axes: axes.to_vec(),
                correction,
                keepdim,
            },
            &[self],
        ))
    }
    /// Index of the max along `axis` (I32; not differentiable).
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            self.storage().argmax(axis, keepdim)?,
        ))
    }
    /// Index of the min along `axis` (I32; not differentiable).
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            self.storage().argmin(axis, keepdim)?,
        ))
    }
}
