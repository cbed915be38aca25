//! Automatic mixed precision: `torch.autocast`.
//!
//! Inside an autocast region, the ops PyTorch's autocast runs in lower
//! precision (matrix products, `linear`, convolutions, scaled-dot-product
//! attention) cast their float operands to the region's dtype (F16 or
//! BF16) and return that dtype; the ops it runs in float32 (softmax and
//! log-softmax, the losses, the norms, `sum`, `prod`, `cumsum`, `logsumexp`,
//! `exp`/`log`/`pow` and the other range-sensitive pointwise ops) cast
//! 16-bit operands to F32 and return F32; every other op runs in the dtype
//! of its operands (mixed operands promote, as always). The casts are
//! recorded in the graph, so gradients flow back in each tensor's own dtype
//! and F32 parameters (the master weights) get F32 gradients. Backward
//! itself is not affected by the region, as in PyTorch.
//!
//! The state is per thread, like PyTorch's. It applies to tensors on every
//! device (PyTorch keeps one state per device type; here one region covers
//! the CPU and the GPU, which compute the same numbers).

use std::cell::Cell;

use wgrad_core::{DType, Error, Result, UnaryOp};

use crate::Tensor;

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The dtype of the autocast region this thread is in, if any
/// (`torch.get_autocast_dtype` when `torch.is_autocast_enabled()`).
pub fn autocast_dtype() -> Option<DType> {
    AUTOCAST.with(Cell::get)
}

/// Whether this thread is in an autocast region (`torch.is_autocast_enabled`).
pub fn is_autocast_enabled() -> bool {
    autocast_dtype().is_some()
}

/// Runs `f` in an autocast region of `dtype` (`with torch.autocast(device_type,
/// dtype=dtype): ...`); the previous state comes back afterwards, also when
/// `f` panics. `dtype` must be F16 or BF16.
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor, autocast};
/// let cpu = Device::Cpu;
/// let x = Tensor::ones(&[4, 3], &cpu)?;
/// let w = Tensor::ones(&[3, 2], &cpu)?.with_requires_grad(true)?;
/// let (y, loss) = autocast(DType::BF16, || -> wgrad_autograd::Result<_> {
///     let y = x.matmul(&w)?; // runs in bfloat16
///     let loss = y.log_softmax(1)?.sum_all()?; // runs in float32
///     Ok((y, loss))
/// })??;
/// assert_eq!((y.dtype(), loss.dtype()), (DType::BF16, DType::F32));
/// loss.backward()?;
/// assert_eq!(w.grad().unwrap().dtype(), DType::F32); // the master weight's
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub fn autocast<R>(dtype: DType, f: impl FnOnce() -> R) -> Result<R> {
    let _guard = AutocastGuard::new(dtype)?;
    Ok(f())
}

/// An autocast region that lasts until the guard is dropped (the
/// guard-style form of [`autocast`]; `AutocastGuard::disabled()` is
/// `torch.autocast(..., enabled=False)` inside a region).
#[must_use = "the region ends when the guard is dropped"]
pub struct AutocastGuard {
    previous: Option<DType>,
}

impl AutocastGuard {
    /// Enters a region of `dtype` (F16 or BF16; anything else is an error
    /// naming it).
    pub fn new(dtype: DType) -> Result<AutocastGuard> {
        if !dtype.is_half() {
            return Err(Error::invalid(
                "autocast",
                format!(
                    "dtype must be float16 or bfloat16, got {dtype} (autocast's lower precision)"
                ),
            ));
        }
        Ok(AutocastGuard {
            previous: AUTOCAST.with(|a| a.replace(Some(dtype))),
        })
    }

    /// Leaves autocast until the guard is dropped (`enabled=False`).
    pub fn disabled() -> AutocastGuard {
        AutocastGuard {
            previous: AUTOCAST.with(|a| a.replace(None)),
        }
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|a| a.set(self.previous));
    }
}

/// An operand of a lower-precision op: a float tensor cast to the region's
/// dtype inside a region, else itself (for layers written from several
/// ops, e.g. a bias added after a product).
pub fn lower_precision(t: &Tensor) -> Result<Tensor> {
    match autocast_dtype() {
        Some(dtype) if t.dtype().is_float() && t.dtype() != dtype => t.cast(dtype),
        _ => Ok(t.clone()),
    }
}

/// An optional operand through [`lower_precision`].
pub(crate) fn lower_opt(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(lower_precision).transpose()
}

/// An operand of a float32 op: a 16-bit tensor cast to F32 inside a
/// region, else itself.
pub fn full_precision(t: &Tensor) -> Result<Tensor> {
    if is_autocast_enabled() && t.dtype().is_half() {
        t.cast(DType::F32)
    } else {
        Ok(t.clone())
    }
}

/// Whether autocast runs `op` in float32 (PyTorch's fp32 list: the
/// pointwise ops whose range or accuracy 16 bits do not hold).
pub(crate) fn unary_in_f32(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Expm1
            | UnaryOp::Recip
            | UnaryOp::Rsqrt
            | UnaryOp::Softplus { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_nest_and_restore() {
        assert_eq!(autocast_dtype(), None);
        let outer = AutocastGuard::new(DType::F16).unwrap();
        assert_eq!(autocast_dtype(), Some(DType::F16));
        {
            let _off = AutocastGuard::disabled();
            assert!(!is_autocast_enabled());
            autocast(DType::BF16, || {
                assert_eq!(autocast_dtype(), Some(DType::BF16))
            })
            .unwrap();
            assert!(!is_autocast_enabled());
        }
        assert_eq!(autocast_dtype(), Some(DType::F16));
        drop(outer);
        assert_eq!(autocast_dtype(), None);
        assert!(AutocastGuard::new(DType::F32).is_err());
        assert!(AutocastGuard::new(DType::I32).is_err());
    }
}
