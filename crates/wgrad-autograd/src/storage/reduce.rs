//! The reductions of [`Storage`]: sums, means, products, extremes,
//! variance, arg-extremes and softmax, dispatched to the tensor's device
//! (I32 extremes through `int_reduce.rs`, masks through `masks.rs`).

use wgrad_core::{DType, Result};

use super::{Storage, half_compute, masks};

impl Storage {
    /// Sum over `axes` (`&[]` = all; `torch.sum`), keeping them as size 1
    /// if `keepdim`; F32 or I32. The sum of nothing is 0.
    /// An I32 tensor sums to I32, wrapping on overflow (PyTorch: int64).
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        if let Some(x) = masks::unmasked(self, DType::I32)? {
            return x.sum(axes, keepdim);
        }
        if self.dtype() == DType::I32 {
            return compute_dispatch!(self, t => t.sum_i32(axes, keepdim));
        }
        compute_dispatch!(self, t => t.sum(axes, keepdim))
    }
    /// Mean over `axes` (`&[]` = all; `torch.mean`); F32 only, the mean of
    /// nothing is NaN.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        compute_dispatch!(self, t => t.mean(axes, keepdim))
    }
    /// Product over `axes` (`&[]` = all; `torch.prod`); the product of
    /// nothing is 1. An I32 tensor (or a U32 mask) multiplies to I32,
    /// wrapping on overflow (PyTorch: int64), as `sum` adds.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        if let Some(x) = masks::unmasked(self, DType::I32)? {
            return x.prod(axes, keepdim);
        }
        if self.dtype() == DType::I32 {
            return compute_dispatch!(self, t => t.prod_i32(axes, keepdim));
        }
        compute_dispatch!(self, t => t.prod(axes, keepdim))
    }
    /// Maximum over `axes` (`&[]` = all; `torch.amax`); NaN propagates,
    /// an empty reduction is an error. I32 stays I32 (exact).
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        if self.dtype() == DType::I32 {
            return self.extreme_i32(axes, keepdim, true);
        }
        compute_dispatch!(self, t => t.max(axes, keepdim))
    }
    /// Minimum over `axes` (`&[]` = all; `torch.amin`); NaN propagates,
    /// an empty reduction is an error. I32 stays I32 (exact).
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Storage> {
        if self.dtype() == DType::I32 {
            return self.extreme_i32(axes, keepdim, false);
        }
        compute_dispatch!(self, t => t.min(axes, keepdim))
    }
    /// Variance over `axes`: `sum((x - mean)^2) / max(0, n - correction)`
    /// (`torch.var`; `correction = 1` is unbiased).
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Storage> {
        compute_dispatch!(self, t => t.var(axes, correction, keepdim))
    }
    /// I32 index of the first maximum along `axis` (`torch.argmax`; NaN
    /// counts as the maximum). Axis `0`/`-1` of a 0-d tensor gives 0.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Storage> {
        self.along_axis(axis, |s, a| {
            if s.dtype() == DType::I32 {
                return s.arg_extreme_i32(a, keepdim, true);
            }
            compute_dispatch!(s, t => t.argmax(a, keepdim))
        })
    }
    /// I32 index of the first minimum along `axis` (`torch.argmin`; NaN
    /// counts as the minimum). Axis `0`/`-1` of a 0-d tensor gives 0.
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Storage> {
        self.along_axis(axis, |s, a| {
            if s.dtype() == DType::I32 {
                return s.arg_extreme_i32(a, keepdim, false);
            }
            compute_dispatch!(s, t => t.argmin(a, keepdim))
        })
    }
    /// `exp(x - max) / sum(exp(x - max))` along `axis` (`torch.softmax`); F32 only.
    pub fn softmax(&self, axis: isize) -> Result<Storage> {
        self.along_axis(axis, |s, a| compute_dispatch!(s, t => t.softmax(a)))
    }
    /// `x - max - ln(sum(exp(x - max)))` along `axis` (`torch.log_softmax`);
    /// F32 only, finite where `softmax(..).ln()` would underflow.
    pub fn log_softmax(&self, axis: isize) -> Result<Storage> {
        self.along_axis(axis, |s, a| compute_dispatch!(s, t => t.log_softmax(a)))
    }

    /// Runs a one-axis op; on a 0-d tensor, axis `0`/`-1` names its implicit
    /// dim (as in PyTorch), so the op runs on the value viewed as shape `[1]`
    /// and the result is viewed back as 0-d.
    fn along_axis(
        &self,
        axis: isize,
        op: impl FnOnce(&Storage, isize) -> Result<Storage>,
    ) -> Result<Storage> {
        if !wgrad_core::shape::is_scalar_axis(axis, self.shape().len()) {
            return op(self, axis);
        }
        op(&self.reshape(&[1])?, 0)?.reshape(&[])
    }
}
