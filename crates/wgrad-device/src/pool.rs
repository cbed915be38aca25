//! The caching allocator: size classes and stream-ordered reuse.
//!
//! Like PyTorch's CUDA caching allocator, a freed buffer goes to a free list
//! of its size class and is handed out again without touching the driver.
//! Reuse by later *dispatches* is safe at once: they are recorded after the
//! commands that used the old contents and run in recording order. Reuse for
//! an *upload* is not: `queue.write_buffer` lands at the start of the next
//! submit, before commands already recorded. So every free buffer is tagged
//! with the submit epoch in which it was released, and uploads only take
//! buffers released before the last flush.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use wgrad_core::{Error, Result};

use crate::buffer::GpuBuffer;
use crate::stats::StatCounters;

/// Smallest class; also keeps zero-element tensors bindable.
const MIN_CLASS_BYTES: u64 = 256;

/// Rounds up to a class: powers of two split into four steps (<= 25% waste).
pub(crate) fn size_class(bytes: u64) -> u64 {
    let bytes = bytes.max(MIN_CLASS_BYTES);
    let pow = bytes.next_power_of_two();
    let quarter = pow / 8; // steps of pow/8 between pow/2 and pow
    bytes.div_ceil(quarter) * quarter
}

struct FreeBuffer {
    buffer: wgpu::Buffer,
    id: u64,
    released_epoch: u64,
}

pub(crate) struct BufferPool {
    device: wgpu::Device,
    free: Mutex<HashMap<u64, Vec<FreeBuffer>>>,
    /// Incremented by the recorder at every submit.
    pub epoch: AtomicU64,
    next_id: AtomicU64,
    pub stats: Arc<StatCounters>,
    max_buffer_size: u64,
    max_binding_size: u64,
}

/// What an acquired buffer will be used for first.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstUse {
    /// Written by a recorded dispatch or copy (stream-ordered).
    Recorded,
    /// Written by `queue.write_buffer` (lands before pending commands).
    Upload,
}

impl BufferPool {
    pub fn new(device: wgpu::Device, stats: Arc<StatCounters>, limits: &wgpu::Limits) -> Self {
        BufferPool {
            device,
            free: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            stats,
            max_buffer_size: limits.max_buffer_size,
            max_binding_size: limits.max_storage_buffer_binding_size,
        }
    }

    pub fn acquire(
        self: &Arc<Self>,
        op: &'static str,
        bytes: u64,
        first_use: FirstUse,
    ) -> Result<GpuBuffer> {
        let limit = self.max_binding_size.min(self.max_buffer_size);
        if bytes > limit {
            return Err(Error::TooLarge {
                op,
                bytes,
                limit,
                limit_name: "storage buffer binding size",
            });
        }
        let class = size_class(bytes).min(limit.max(bytes));
        let epoch = self.epoch.load(Ordering::Acquire);
        {
            let mut free = self
                .free
                .lock()
                .map_err(|_| Error::Device("buffer pool lock poisoned".into()))?;
            if let Some(list) = free.get_mut(&class) {
                // Lowest id first: which buffer an op gets then depends only on
                // which buffers are free, not on the order they were freed, so a
                // repeating program (a training loop) settles into repeating
                // buffer assignments and its bind groups come from the cache.
                let pos = list
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| first_use == FirstUse::Recorded || b.released_epoch < epoch)
                    .min_by_key(|(_, b)| b.id)
                    .map(|(i, _)| i);
                if let Some(pos) = pos {
                    let entry = list.swap_remove(pos);
                    StatCounters::bump(&self.stats.pool_hits, 1);
                    self.stats.cached_bytes.fetch_sub(class, Ordering::Relaxed);
                    self.stats.add_live(class);
                    return Ok(GpuBuffer::new(entry.buffer, entry.id, class, self.clone()));
                }
            }
        }
        let buffer = self.create(op, class)?;
        StatCounters::bump(&self.stats.pool_misses, 1);
        self.stats.add_live(class);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Ok(GpuBuffer::new(buffer, id, class, self.clone()))
    }

    fn create(&self, op: &'static str, class: u64) -> Result<wgpu::Buffer> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgrad pool buffer"),
            size: class,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if pollster::block_on(scope.pop()).is_some() {
            // Give cached memory back to the driver and try once more.
            self.empty();
            let retry = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgrad pool buffer"),
                size: class,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            if pollster::block_on(retry.pop()).is_some() {
                let _ = op;
                return Err(Error::OutOfMemory {
                    op: "alloc",
                    device: "GPU",
                    bytes: class,
                });
            }
            StatCounters::bump(&self.stats.buffers_created, 1);
            return Ok(buffer);
        }
        StatCounters::bump(&self.stats.buffers_created, 1);
        Ok(buffer)
    }

    pub fn release(&self, buffer: wgpu::Buffer, id: u64, class: u64) {
        self.stats.live_bytes.fetch_sub(class, Ordering::Relaxed);
        let released_epoch = self.epoch.load(Ordering::Acquire);
        if let Ok(mut free) = self.free.lock() {
            self.stats.cached_bytes.fetch_add(class, Ordering::Relaxed);
            free.entry(class).or_default().push(FreeBuffer {
                buffer,
                id,
                released_epoch,
            });
        }
    }

    /// Drops every cached (free) buffer, returning memory to the driver.
    pub fn empty(&self) {
        if let Ok(mut free) = self.free.lock() {
            for (_, list) in free.drain() {
                for entry in list {
                    self.stats
                        .cached_bytes
                        .fetch_sub(entry.buffer.size(), Ordering::Relaxed);
                    entry.buffer.destroy();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn classes_round_up_with_bounded_waste() {
        assert_eq!(size_class(0), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1024), 1024);
        assert_eq!(size_class(1025), 1280);
        for bytes in [300u64, 5000, 70_000, 1 << 20, (1 << 26) + 3] {
            let c = size_class(bytes);
            assert!(c >= bytes && (c - bytes) * 4 <= c, "{bytes} -> {c}");
        }
    }
}
