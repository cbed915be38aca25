//! `no_grad`: a scope in which ops record no graph (like `torch.no_grad()`).

use std::cell::Cell;

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
    NoGradGuard { previous }
}

/// Restores the previous grad mode on drop.
#[must_use = "grad is re-enabled as soon as the guard is dropped"]
pub struct NoGradGuard {
    previous: bool,
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.previous));
    }
}
