//! Counters that make the execution model observable (and testable).

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of what the device has done since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Bytes of pool buffers handed out: live tensors, plus the staging
    /// buffers of readbacks in flight.
    pub live_bytes: u64,
    /// Highest `live_bytes` seen.
    pub peak_live_bytes: u64,
    /// Bytes held in the pool's free lists, storage and readback staging
    /// buffers alike (reusable without allocation; at most twice
    /// `peak_live_bytes`; `empty_cache()` releases them all).
    pub cached_bytes: u64,
    /// wgpu buffers created by the pool (storage and staging).
    pub buffers_created: u64,
    /// Pool requests (storage and staging) served from a free list.
    pub pool_hits: u64,
    /// Pool requests (storage and staging) that had to create a buffer.
    pub pool_misses: u64,
    /// Bind groups created (cache misses in `wgrad-kernels`).
    pub bind_groups_created: u64,
    /// Compute pipelines created.
    pub pipelines_created: u64,
    /// Dispatches recorded.
    pub dispatches: u64,
    /// `queue.submit` calls.
    pub submits: u64,
    /// Readbacks (GPU -> host transfers) performed.
    pub readbacks: u64,
    /// Bytes uploaded host -> GPU.
    pub bytes_uploaded: u64,
    /// Bytes read back GPU -> host.
    pub bytes_downloaded: u64,
}

impl DeviceStats {
    /// Counter differences `self - earlier` (gauges such as `live_bytes` are kept as in `self`).
    pub fn since(&self, earlier: &DeviceStats) -> DeviceStats {
        DeviceStats {
            live_bytes: self.live_bytes,
            peak_live_bytes: self.peak_live_bytes,
            cached_bytes: self.cached_bytes,
            buffers_created: self.buffers_created - earlier.buffers_created,
            pool_hits: self.pool_hits - earlier.pool_hits,
            pool_misses: self.pool_misses - earlier.pool_misses,
            bind_groups_created: self.bind_groups_created - earlier.bind_groups_created,
            pipelines_created: self.pipelines_created - earlier.pipelines_created,
            dispatches: self.dispatches - earlier.dispatches,
            submits: self.submits - earlier.submits,
            readbacks: self.readbacks - earlier.readbacks,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
        }
    }
}

/// Live counters behind [`DeviceStats`].
#[derive(Default)]
pub(crate) struct StatCounters {
    pub live_bytes: AtomicU64,
    pub peak_live_bytes: AtomicU64,
    pub cached_bytes: AtomicU64,
    pub buffers_created: AtomicU64,
    pub pool_hits: AtomicU64,
    pub pool_misses: AtomicU64,
    pub bind_groups_created: AtomicU64,
    pub pipelines_created: AtomicU64,
    pub dispatches: AtomicU64,
    pub submits: AtomicU64,
    pub readbacks: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    pub bytes_downloaded: AtomicU64,
}

impl StatCounters {
    pub fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    pub fn add_live(&self, bytes: u64) {
        let now = self.live_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_live_bytes.fetch_max(now, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> DeviceStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DeviceStats {
            live_bytes: r(&self.live_bytes),
            peak_live_bytes: r(&self.peak_live_bytes),
            cached_bytes: r(&self.cached_bytes),
            buffers_created: r(&self.buffers_created),
            pool_hits: r(&self.pool_hits),
            pool_misses: r(&self.pool_misses),
            bind_groups_created: r(&self.bind_groups_created),
            pipelines_created: r(&self.pipelines_created),
            dispatches: r(&self.dispatches),
            submits: r(&self.submits),
            readbacks: r(&self.readbacks),
            bytes_uploaded: r(&self.bytes_uploaded),
            bytes_downloaded: r(&self.bytes_downloaded),
        }
    }
}
