//! [`Dense`]: a tensor's elements in row-major order for an op to read,
//! borrowed from its storage when the view is contiguous, else a scratch
//! copy that goes back to the [`buffer_cache`] when the op is done with it.
//!
//! Why the copy is recycled: a large copy is served from the cache like an
//! op output, and a plain `Vec` dropping would hand that buffer to the
//! system allocator instead, so the next output of its size class would
//! miss the cache and fault in fresh pages (the GPT step's attention read
//! its transposed q, k and v this way: a dozen 12 MiB buffers a step).

use std::borrow::Cow;
use std::ops::Deref;

use crate::buffer_cache;

/// Row-major elements of a tensor (see the module docs); dereferences to
/// `[T]`.
pub(crate) struct Dense<'a, T: Clone + Send + 'static>(Cow<'a, [T]>);

impl<'a, T: Clone + Send + 'static> Dense<'a, T> {
    /// The storage itself, already dense.
    pub(crate) fn borrowed(slice: &'a [T]) -> Self {
        Dense(Cow::Borrowed(slice))
    }

    /// A copy made for the op, recycled when this drops.
    pub(crate) fn copied(vec: Vec<T>) -> Self {
        Dense(Cow::Owned(vec))
    }
}

impl<T: Clone + Send + 'static> Deref for Dense<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Clone + Send + 'static> Drop for Dense<'_, T> {
    fn drop(&mut self) {
        if let Cow::Owned(vec) = &mut self.0 {
            buffer_cache::recycle(std::mem::take(vec));
        }
    }
}
