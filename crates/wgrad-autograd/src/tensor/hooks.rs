//! `retain_grad` and `register_hook` (PyTorch's `Tensor.retain_grad()` and
//! `Tensor.register_hook(fn)`): what backward does with a tensor's
//! gradient besides passing it on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_core::{Error, Result};

use super::Tensor;
use crate::storage::Storage;

/// A gradient hook: gets the gradient, returns a replacement or `None`.
pub(crate) type GradHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

static NEXT_HOOK: AtomicU64 = AtomicU64::new(1);

/// What [`Tensor::register_hook`] returns: [`remove`](Self::remove)
/// unregisters the hook (PyTorch's `handle.remove()`).
pub struct HookHandle {
    tensor: Tensor,
    id: u64,
}

impl HookHandle {
    /// Unregisters the hook; later backward passes no longer call it.
    pub fn remove(self) {
        self.tensor
            .inner
            .hooks
            .lock()
            .retain(|(id, _)| *id != self.id);
    }
}

impl Tensor {
    /// `tensor.retain_grad()`: a result (non-leaf) tensor keeps its
    /// gradient in [`grad`](Self::grad) after backward, accumulating over
    /// calls like a leaf's; on a leaf it does nothing (leaves keep theirs).
    /// An error for a tensor that does not require grad, as PyTorch.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let x = Tensor::ones(&[2], &Device::Cpu)?.with_requires_grad(true)?;
    /// let y = x.mul_scalar(3.0)?;
    /// y.retain_grad()?;
    /// y.square()?.sum_all()?.backward()?;
    /// assert_eq!(y.grad().unwrap().to_vec_f32()?, [6.0, 6.0]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::invalid(
                "retain_grad",
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        if !self.is_leaf() {
            self.inner.retains_grad.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether backward keeps this tensor's gradient (`tensor.retains_grad`:
    /// true after [`retain_grad`](Self::retain_grad) on a result).
    pub fn retains_grad(&self) -> bool {
        self.inner.retains_grad.load(Ordering::Relaxed)
    }

    /// `tensor.register_hook(hook)`: every backward pass (and
    /// [`grad`](crate::grad())) calls `hook` with this tensor's summed
    /// gradient before it goes on (or into a leaf's `.grad`); returning
    /// `Some(g)` replaces it (same shape), `None` keeps it. Hooks run in
    /// registration order. An error for a tensor that does not require
    /// grad, as PyTorch.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let x = Tensor::ones(&[3], &Device::Cpu)?.with_requires_grad(true)?;
    /// let handle = x.register_hook(|g| Ok(Some(g.mul_scalar(2.0)?)))?;
    /// x.sum_all()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec_f32()?, [2.0; 3]);
    /// handle.remove();
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::invalid(
                "register_hook",
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
        self.inner.hooks.lock().push((id, Arc::new(hook)));
        Ok(HookHandle {
            tensor: self.clone(),
            id,
        })
    }

    /// Whether any hook is registered on this tensor.
    pub(crate) fn has_hooks(&self) -> bool {
        !self.inner.hooks.lock().is_empty()
    }

    /// This tensor's gradient through its hooks (none: unchanged).
    pub(crate) fn apply_hooks(&self, grad: Storage) -> Result<Storage> {
        // Every node of every backward passes here: no allocation when
        // there are no hooks (the common case).
        let hooks: Vec<GradHook> = {
            let registered = self.inner.hooks.lock();
            if registered.is_empty() {
                return Ok(grad);
            }
            registered.iter().map(|(_, h)| h.clone()).collect()
        };
        let mut grad = grad;
        for hook in hooks {
            let seen = Tensor::from_storage_leaf(grad.clone());
            if let Some(new) = hook(&seen)? {
                if new.shape() != self.shape() {
                    return Err(Error::invalid(
                        "register_hook",
                        format!(
                            "hook returned a gradient of shape {:?} for a tensor of shape {:?}",
                            new.shape().as_slice(),
                            self.shape().as_slice()
                        ),
                    ));
                }
                grad = new.storage();
            }
        }
        Ok(grad)
    }
}
