//! `no_grad`: a scope in which ops record no graph (like `torch.no_grad()`).

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops on this thread currently record the autograd graph.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Disables graph recording until the guard is dropped.
///
/// ```
/// let _guard = wgrad_autograd::no_grad();
/// assert!(!wgrad_autograd::is_grad_enabled());
/// ```
pub fn no_grad() -> NoGradGuard {
    let previous = GRAD_ENABLED.with(|g| g.replace(false));
    NoGradGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// Restores the previous grad mode on drop.
///
/// Grad mode is per thread, so the guard must be dropped on the thread that
/// made it: it is neither `Send` nor `Sync`.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// needs_send(wgrad_autograd::no_grad());
/// ```
#[must_use = "grad is re-enabled as soon as the guard is dropped"]
pub struct NoGradGuard {
    previous: bool,
    /// A raw pointer makes the type `!Send + !Sync`.
    _not_send: PhantomData<*const ()>,
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.previous));
    }
}

/// Enables graph recording until the guard is dropped (`torch.enable_grad()`),
/// e.g. inside a [`no_grad`] scope.
///
/// ```
/// let _off = wgrad_autograd::no_grad();
/// {
///     let _on = wgrad_autograd::enable_grad();
///     assert!(wgrad_autograd::is_grad_enabled());
/// }
/// assert!(!wgrad_autograd::is_grad_enabled());
/// ```
pub fn enable_grad() -> NoGradGuard {
    set_grad_enabled(true)
}

/// Sets graph recording on or off until the guard is dropped
/// (`torch.set_grad_enabled(mode)` used as a context manager).
pub fn set_grad_enabled(enabled: bool) -> NoGradGuard {
    let previous = GRAD_ENABLED.with(|g| g.replace(enabled));
    NoGradGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// `torch.inference_mode()`: no graph recording until the guard is
/// dropped (wgrad has no separate inference tensors; this is [`no_grad`]).
pub fn inference_mode() -> NoGradGuard {
    no_grad()
}
