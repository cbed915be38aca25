//! The caching allocator: size classes, best fit, stream-ordered reuse and a
//! bound on what it caches.
//!
//! Like PyTorch's CUDA caching allocator, a freed buffer goes to a free list
//! of its size class and is handed out again without touching the driver.
//! Two kinds of buffer are pooled: storage buffers (tensors) and the
//! map-readable staging buffers of readbacks; both count in `DeviceStats`
//! (`live_bytes` while handed out, `cached_bytes` while free) and both are
//! released by [`BufferPool::empty`].
//!
//! Which free buffer a request gets:
//! - the request's own size class first, else the smallest larger class up
//!   to twice the request ([`MAX_FIT_FACTOR`]), so that a program whose
//!   shapes vary reuses what it has instead of caching one buffer per class;
//! - within a class, the lowest id: which buffer an op gets then depends
//!   only on which buffers are free, not on the order they were freed, so a
//!   repeating program (a training loop) settles into repeating buffer
//!   assignments and its bind groups come from the cache.
//!
//! Reuse by later *dispatches* is safe at once: they are recorded after the
//! commands that used the old contents and run in recording order. Reuse for
//! an *upload* is not: `queue.write_buffer` lands at the start of the next
//! submit, before commands already recorded. So every free buffer is tagged
//! with the submit epoch in which it was released, and uploads only take
//! buffers released before the last flush. When the only fitting free
//! buffers are too recent, the pool says so ([`Take::Blocked`]) and the
//! device flushes and asks again, rather than creating a buffer per upload
//! (which made a training loop without readbacks cache one batch per step).
//!
//! The cache is bounded: whenever the free buffers add up to more than
//! twice the peak of live bytes ([`CACHE_CAP_FACTOR`]), the least recently
//! released ones are dropped (wgpu frees them once the GPU is done with
//! them). Best fit keeps ordinary programs well below the bound (3,000 ops
//! on random shapes: 2.2x without the cap, against 5.9x with exact classes
//! only); the cap is what makes it a guarantee. A repeating program (a
//! training loop) stays below it, so its steady state allocates nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use wgrad_core::{Error, Result};

use crate::buffer::GpuBuffer;
use crate::stats::StatCounters;

/// Smallest class; also keeps zero-element tensors bindable.
const MIN_CLASS_BYTES: u64 = 256;

/// A request may be served by a free buffer up to this many times its class.
pub(crate) const MAX_FIT_FACTOR: u64 = 2;

/// The free buffers never add up to more than this many times the peak live
/// bytes (the least recently released go first).
pub(crate) const CACHE_CAP_FACTOR: u64 = 2;

/// Rounds up to a class: powers of two split into four steps (<= 25% waste).
pub(crate) fn size_class(bytes: u64) -> u64 {
    let bytes = bytes.max(MIN_CLASS_BYTES);
    let pow = bytes.next_power_of_two();
    let quarter = pow / 8; // steps of pow/8 between pow/2 and pow
    bytes.div_ceil(quarter) * quarter
}

/// What a pooled buffer is: its usages differ, so the kinds never mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// STORAGE | COPY_SRC | COPY_DST: tensor data.
    Storage,
    /// MAP_READ | COPY_DST: where readbacks land.
    Staging,
}

struct FreeBuffer {
    buffer: wgpu::Buffer,
    id: u64,
    released_epoch: u64,
    /// Release order, for evicting the least recently released first.
    released_seq: u64,
}

#[derive(Default)]
struct FreeLists {
    storage: BTreeMap<u64, Vec<FreeBuffer>>,
    staging: BTreeMap<u64, Vec<FreeBuffer>>,
    next_seq: u64,
}

impl FreeLists {
    fn of(&mut self, kind: Kind) -> &mut BTreeMap<u64, Vec<FreeBuffer>> {
        match kind {
            Kind::Storage => &mut self.storage,
            Kind::Staging => &mut self.staging,
        }
    }
}

/// What a look into the free lists found.
pub(crate) enum Take<T> {
    Got(T),
    /// Fitting free buffers exist, but all were released after the last
    /// submit, so an upload must not use them yet: flush and ask again.
    Blocked,
    /// Nothing fits: a buffer was created.
    Created(T),
}

pub(crate) struct BufferPool {
    device: wgpu::Device,
    free: Mutex<FreeLists>,
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

/// A free buffer taken out of the lists, or why none was.
enum Found {
    Buffer(FreeBuffer),
    Blocked,
    Nothing,
}

impl BufferPool {
    pub fn new(device: wgpu::Device, stats: Arc<StatCounters>, limits: &wgpu::Limits) -> Self {
        BufferPool {
            device,
            free: Mutex::new(FreeLists::default()),
            epoch: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            stats,
            max_buffer_size: limits.max_buffer_size,
            max_binding_size: limits.max_storage_buffer_binding_size,
        }
    }

    fn lock(&self) -> MutexGuard<'_, FreeLists> {
        self.free.lock()
    }

    /// A storage buffer of at least `bytes`. With `may_block`, an upload that
    /// finds only too-recent free buffers gets [`Take::Blocked`] (the caller
    /// flushes and asks again); without it, it gets a new buffer instead.
    pub fn acquire(
        self: &Arc<Self>,
        op: &'static str,
        bytes: u64,
        first_use: FirstUse,
        may_block: bool,
    ) -> Result<Take<GpuBuffer>> {
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
        let eligible = |b: &FreeBuffer| first_use == FirstUse::Recorded || b.released_epoch < epoch;
        match self.take_free(Kind::Storage, class, eligible, may_block)? {
            Found::Buffer(entry) => {
                let size = entry.buffer.size();
                StatCounters::bump(&self.stats.pool_hits, 1);
                self.stats.add_live(size);
                Ok(Take::Got(GpuBuffer::new(
                    entry.buffer,
                    entry.id,
                    size,
                    self.clone(),
                )))
            }
            Found::Blocked => Ok(Take::Blocked),
            Found::Nothing => {
                let (buffer, id) = self.create(op, Kind::Storage, class)?;
                Ok(Take::Created(GpuBuffer::new(
                    buffer,
                    id,
                    class,
                    self.clone(),
                )))
            }
        }
    }

    /// A map-readable staging buffer of at least `bytes` (for a readback).
    pub fn acquire_staging(self: &Arc<Self>, bytes: u64) -> Result<StagingBuffer> {
        let class = size_class(bytes);
        let (buffer, id) = match self.take_free(Kind::Staging, class, |_| true, false)? {
            Found::Buffer(entry) => {
                StatCounters::bump(&self.stats.pool_hits, 1);
                self.stats.add_live(entry.buffer.size());
                (entry.buffer, entry.id)
            }
            Found::Blocked | Found::Nothing => self.create("readback", Kind::Staging, class)?,
        };
        Ok(StagingBuffer {
            buffer: Some(buffer),
            id,
            reusable: false,
            pool: self.clone(),
        })
    }

    /// Takes the best fitting eligible free buffer of `kind`: the smallest
    /// class from `class` to `MAX_FIT_FACTOR * class` holding one, and in it
    /// the lowest id. `Blocked` when `may_block` and a smaller fitting class
    /// holds only ineligible buffers (a flush would make them usable).
    fn take_free(
        &self,
        kind: Kind,
        class: u64,
        eligible: impl Fn(&FreeBuffer) -> bool,
        may_block: bool,
    ) -> Result<Found> {
        let mut lists = self.lock();
        let map = lists.of(kind);
        let max = class.saturating_mul(MAX_FIT_FACTOR);
        let mut blocked = false;
        let mut pick = None;
        for (&c, list) in map.range(class..=max) {
            let pos = list
                .iter()
                .enumerate()
                .filter(|(_, b)| eligible(b))
                .min_by_key(|(_, b)| b.id)
                .map(|(i, _)| i);
            match pos {
                Some(pos) => {
                    pick = Some((c, pos));
                    break;
                }
                None => blocked |= !list.is_empty(),
            }
        }
        if blocked && may_block {
            return Ok(Found::Blocked);
        }
        let Some((c, pos)) = pick else {
            return Ok(Found::Nothing);
        };
        let Some(list) = map.get_mut(&c) else {
            return Ok(Found::Nothing);
        };
        let entry = list.swap_remove(pos);
        if list.is_empty() {
            map.remove(&c);
        }
        self.stats
            .cached_bytes
            .fetch_sub(entry.buffer.size(), Ordering::Relaxed);
        Ok(Found::Buffer(entry))
    }

    /// Creates a buffer of `class` bytes (counted as a miss and live). On
    /// out-of-memory, gives the cache back to the driver and tries once more.
    fn create(&self, op: &'static str, kind: Kind, class: u64) -> Result<(wgpu::Buffer, u64)> {
        let (label, usage) = match kind {
            Kind::Storage => (
                "wgrad pool buffer",
                wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
            ),
            Kind::Staging => (
                "wgrad staging",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        };
        let descriptor = wgpu::BufferDescriptor {
            label: Some(label),
            size: class,
            usage,
            mapped_at_creation: false,
        };
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut buffer = self.device.create_buffer(&descriptor);
        if pollster::block_on(scope.pop()).is_some() {
            self.empty();
            let retry = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            buffer = self.device.create_buffer(&descriptor);
            if pollster::block_on(retry.pop()).is_some() {
                return Err(Error::OutOfMemory {
                    op,
                    device: "GPU",
                    bytes: class,
                });
            }
        }
        StatCounters::bump(&self.stats.buffers_created, 1);
        StatCounters::bump(&self.stats.pool_misses, 1);
        self.stats.add_live(class);
        Ok((buffer, self.next_id.fetch_add(1, Ordering::Relaxed)))
    }

    /// Returns a buffer to its free list (stream-ordered reuse), then trims
    /// the cache to its bound.
    pub fn release(&self, kind: Kind, buffer: wgpu::Buffer, id: u64) {
        let size = buffer.size();
        self.stats.live_bytes.fetch_sub(size, Ordering::Relaxed);
        let released_epoch = self.epoch.load(Ordering::Acquire);
        let mut lists = self.lock();
        self.stats.cached_bytes.fetch_add(size, Ordering::Relaxed);
        let released_seq = lists.next_seq;
        lists.next_seq += 1;
        lists.of(kind).entry(size).or_default().push(FreeBuffer {
            buffer,
            id,
            released_epoch,
            released_seq,
        });
        self.trim(&mut lists);
    }

    /// Drops the least recently released free buffers until the cache holds
    /// no more than `CACHE_CAP_FACTOR` times the peak live bytes. Dropping (not destroying) is safe
    /// while recorded commands still use a buffer: wgpu frees it after them.
    fn trim(&self, lists: &mut FreeLists) {
        let cap =
            CACHE_CAP_FACTOR.saturating_mul(self.stats.peak_live_bytes.load(Ordering::Relaxed));
        while self.stats.cached_bytes.load(Ordering::Relaxed) > cap {
            let oldest = [Kind::Storage, Kind::Staging]
                .into_iter()
                .flat_map(|kind| {
                    let map = match kind {
                        Kind::Storage => &lists.storage,
                        Kind::Staging => &lists.staging,
                    };
                    map.iter().flat_map(move |(&class, list)| {
                        list.iter()
                            .enumerate()
                            .map(move |(pos, b)| (b.released_seq, kind, class, pos))
                    })
                })
                .min_by_key(|&(seq, ..)| seq);
            let Some((_, kind, class, pos)) = oldest else {
                return;
            };
            let map = lists.of(kind);
            let Some(list) = map.get_mut(&class) else {
                return;
            };
            let entry = list.swap_remove(pos);
            if list.is_empty() {
                map.remove(&class);
            }
            self.stats
                .cached_bytes
                .fetch_sub(entry.buffer.size(), Ordering::Relaxed);
        }
    }

    /// Drops every cached (free) buffer, returning memory to the driver once
    /// the GPU no longer uses it.
    pub fn empty(&self) {
        let mut lists = self.lock();
        let storage = std::mem::take(&mut lists.storage);
        let staging = std::mem::take(&mut lists.staging);
        for entry in storage.into_values().chain(staging.into_values()).flatten() {
            self.stats
                .cached_bytes
                .fetch_sub(entry.buffer.size(), Ordering::Relaxed);
        }
    }
}

/// A pooled staging buffer held by one readback. It goes back to the pool
/// only once marked [`reusable`](Self::set_reusable) (mapped, read and
/// unmapped); dropped before that (a readback abandoned mid-way, its mapping
/// possibly still pending), it is dropped for good.
pub(crate) struct StagingBuffer {
    buffer: Option<wgpu::Buffer>,
    id: u64,
    reusable: bool,
    pool: Arc<BufferPool>,
}

impl StagingBuffer {
    pub fn raw(&self) -> Result<&wgpu::Buffer> {
        self.buffer
            .as_ref()
            .ok_or_else(|| Error::Device("staging buffer already released".into()))
    }

    /// Marks the buffer unmapped and idle: dropping it returns it to the pool.
    pub fn set_reusable(&mut self) {
        self.reusable = true;
    }
}

impl Drop for StagingBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            if self.reusable {
                self.pool.release(Kind::Staging, buffer, self.id);
            } else {
                self.pool
                    .stats
                    .live_bytes
                    .fetch_sub(buffer.size(), Ordering::Relaxed);
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
