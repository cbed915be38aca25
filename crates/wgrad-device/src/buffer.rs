//! A pooled storage buffer handle.

use std::sync::Arc;

use crate::pool::{BufferPool, Kind};

/// A storage buffer from the device's caching pool. Cloning is cheap (an
/// `Arc`); when the last clone drops, the buffer goes back to the pool for
/// stream-ordered reuse instead of being freed.
#[derive(Clone)]
pub struct GpuBuffer {
    inner: Arc<BufferInner>,
}

pub(crate) struct BufferInner {
    /// A `wgpu::Buffer` is itself a shared handle: Drop hands a clone of it
    /// to the pool and this one goes away with the inner value.
    pub buffer: wgpu::Buffer,
    pub id: u64,
    pub class_bytes: u64,
    pub pool: Arc<BufferPool>,
}

impl GpuBuffer {
    pub(crate) fn new(
        buffer: wgpu::Buffer,
        id: u64,
        class_bytes: u64,
        pool: Arc<BufferPool>,
    ) -> Self {
        GpuBuffer {
            inner: Arc::new(BufferInner {
                buffer,
                id,
                class_bytes,
                pool,
            }),
        }
    }

    /// The wgpu buffer (for binding).
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.inner.buffer
    }

    /// A process-unique id; caches key bind groups by it.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// How many handles share this buffer (this one included): 1 means no
    /// other tensor or view can see what is written to it.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Capacity in bytes: at least what was asked for (its size class, or a
    /// larger free buffer the pool fitted to the request).
    pub fn size(&self) -> u64 {
        self.inner.class_bytes
    }
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuBuffer(#{} {} bytes)",
            self.inner.id, self.inner.class_bytes
        )
    }
}

impl Drop for BufferInner {
    fn drop(&mut self) {
        self.pool
            .release(Kind::Storage, self.buffer.clone(), self.id);
    }
}
