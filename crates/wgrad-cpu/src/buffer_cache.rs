//! A caching allocator for large CPU buffers, the host counterpart of the
//! GPU buffer pool.
//!
//! Why: a training step allocates and frees the same large activations and
//! gradients every step. glibc serves allocations above its mmap threshold
//! (at most 32 MiB) with fresh `mmap`s and returns them to the kernel on
//! free, so each step paid a page fault and a kernel-side zeroing for every
//! 4 KiB it touched: measured on the 2-core development machine, 22% of the
//! GPT step's CPU time was system time (10M minor faults in 15 steps) and
//! the tutorial CNN step ran 24% faster with the faults gone.
//!
//! How: op outputs ask [`take`] for a vector of a size class (eight classes
//! per power of two, so at most 12.5% slack) before they ask the system
//! allocator, and a tensor's storage gives its vector back with [`give`]
//! when the last tensor sharing it is dropped. Only buffers of at least
//! [`MIN_CACHED_BYTES`] are cached; smaller ones are cheap for malloc.
//! Free buffers are capped at twice the peak bytes of live tensor storage,
//! as the GPU pool caps its own, so the cache at most triples a workload's
//! peak (measured on the GPT step: a cap of twice the peak made the step
//! 4.0 -> 3.5 s against a cap of the peak, for 2% more resident memory);
//! [`empty_cache`] frees them all.
//! A cached buffer keeps its old contents (and length): `alloc::reserve`
//! clears it, `alloc::zeroed` writes its zeros, and `alloc::for_overwrite`
//! hands the old values out to an op that writes every element anyway.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Buffers smaller than this go straight to the system allocator.
pub(crate) const MIN_CACHED_BYTES: usize = 512 << 10;

/// Size classes per power of two.
const CLASSES_PER_OCTAVE: u32 = 8;

/// The free buffers and the counters that bound them.
#[derive(Default)]
struct Cache {
    /// Free vectors by (element type, capacity), each a `Vec<T>` holding
    /// the values its last tensor left.
    free: HashMap<(TypeId, usize), Vec<Box<dyn Any + Send>>>,
    free_bytes: usize,
    /// Bytes of class-sized tensor storage alive now ([`adopt`]ed, not yet
    /// given back).
    live_bytes: usize,
    peak_live_bytes: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// The cache, created on first use. A poisoned lock (a panic while it was
/// held, which no code here does) still guards consistent counters: every
/// update is a few integer operations after any allocation that can fail.
fn cache() -> MutexGuard<'static, Option<Cache>> {
    CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The element count of the size class that holds `len` elements of `T`,
/// or `None` when the buffer is too small to cache (or its byte count
/// overflows, which no allocation can satisfy anyway).
pub(crate) fn class_len<T>(len: usize) -> Option<usize> {
    let elem = size_of::<T>();
    let bytes = len.checked_mul(elem)?;
    if elem == 0 || bytes < MIN_CACHED_BYTES {
        return None;
    }
    // A granule of 1/8 of the largest power of two not above `bytes`:
    // at least 64 KiB here, so a whole number of elements of any type.
    let granule = 1usize << (usize::BITS - 1 - bytes.leading_zeros() - CLASSES_PER_OCTAVE.ilog2());
    let class_bytes = bytes.checked_next_multiple_of(granule)?;
    class_bytes
        .is_multiple_of(elem)
        .then_some(class_bytes / elem)
}

/// A free vector with capacity for at least `len` elements of `T` (its
/// class), if one is cached, holding its last tensor's values. It counts
/// as live again only if it becomes tensor storage ([`adopt`]).
pub(crate) fn take<T: Send + 'static>(len: usize) -> Option<Vec<T>> {
    let class = class_len::<T>(len)?;
    let bytes = class * size_of::<T>();
    let mut guard = cache();
    let cache = guard.get_or_insert_with(Cache::default);
    let found = cache.free.get_mut(&(TypeId::of::<T>(), class))?.pop()?;
    let vec = *found.downcast::<Vec<T>>().ok()?;
    cache.free_bytes -= bytes;
    Some(vec)
}

/// Counts a vector becoming a tensor's storage (`CpuTensor::from_data`):
/// class-sized storage is live until [`give`] sees its last owner drop.
/// Buffers that only serve inside an op are never counted, so the count
/// does not drift with them.
pub(crate) fn adopt<T>(storage: &Vec<T>) {
    let capacity = storage.capacity();
    if class_len::<T>(capacity) != Some(capacity) {
        return;
    }
    let mut guard = cache();
    guard
        .get_or_insert_with(Cache::default)
        .note_live(capacity * size_of::<T>());
}

/// Called as tensor storage drops: if this was the last owner of an
/// adopted (class-sized) vector, the vector stops counting as live and is
/// cached when the cache has room, else freed.
pub(crate) fn give<T: Send + 'static>(storage: &mut Arc<Vec<T>>) {
    let capacity = storage.capacity();
    if class_len::<T>(capacity) != Some(capacity) {
        return;
    }
    // `into_inner` picks exactly one last owner, even when clones drop on
    // several threads at once; the placeholder is a small allocation, paid
    // only for large buffers.
    let Some(vec) = Arc::into_inner(std::mem::replace(storage, Arc::new(Vec::new()))) else {
        return;
    };
    let bytes = capacity * size_of::<T>();
    let mut guard = cache();
    let cache = guard.get_or_insert_with(Cache::default);
    cache.live_bytes = cache.live_bytes.saturating_sub(bytes);
    cache.keep(vec);
}

/// Caches a class-sized vector that served only inside an op (a scratch
/// copy taken with [`take`] or allocated by class; never [`adopt`]ed, so
/// the live count does not change), when the cache has room; any other
/// vector is simply freed.
pub(crate) fn recycle<T: Send + 'static>(vec: Vec<T>) {
    let capacity = vec.capacity();
    if class_len::<T>(capacity) != Some(capacity) {
        return;
    }
    cache().get_or_insert_with(Cache::default).keep(vec);
}

impl Cache {
    /// Keeps a free class-sized vector unless that would pass the cap of
    /// twice the peak live bytes (then the system allocator gets it back).
    fn keep<T: Send + 'static>(&mut self, vec: Vec<T>) {
        let capacity = vec.capacity();
        let bytes = capacity * size_of::<T>();
        if self.free_bytes + bytes > 2 * self.peak_live_bytes {
            return;
        }
        self.free_bytes += bytes;
        self.free
            .entry((TypeId::of::<T>(), capacity))
            .or_default()
            .push(Box::new(vec));
    }

    fn note_live(&mut self, bytes: usize) {
        self.live_bytes += bytes;
        self.peak_live_bytes = self.peak_live_bytes.max(self.live_bytes);
    }
}

/// Frees every cached CPU buffer (the CPU side of PyTorch's
/// `torch.cuda.empty_cache()`): tensors still alive are not affected, and
/// the cache fills again as later ops free their outputs.
pub fn empty_cache() {
    let dropped = {
        let mut guard = cache();
        let Some(cache) = guard.as_mut() else {
            return;
        };
        cache.free_bytes = 0;
        cache.peak_live_bytes = cache.live_bytes;
        std::mem::take(&mut cache.free)
    };
    // Freed outside the lock.
    drop(dropped);
}

/// Bytes of free buffers the CPU cache holds right now.
pub fn cached_bytes() -> usize {
    cache().as_ref().map_or(0, |c| c.free_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_by_at_most_an_eighth() {
        assert_eq!(class_len::<f32>(1000), None);
        let min = MIN_CACHED_BYTES / 4;
        assert_eq!(class_len::<f32>(min), Some(min));
        for len in [min + 1, 3 * min + 7, 1_000_003, 37_748_736, 123_456_789] {
            let class = class_len::<f32>(len).unwrap();
            assert!(class >= len && (class - len) * 8 <= len, "{len} -> {class}");
            assert_eq!(
                class_len::<f32>(class),
                Some(class),
                "a class is its own class"
            );
        }
        let class = class_len::<half::f16>(1_000_001).unwrap();
        assert!(class >= 1_000_001 && class.is_multiple_of(2));
        assert_eq!(class_len::<f32>(usize::MAX), None);
    }

    #[test]
    fn the_last_owner_recycles_and_the_cap_holds() {
        // A class no other test asks for (u32 storage of ~11.9 MiB).
        let len = class_len::<u32>(3_111_111).unwrap();
        let mut storage = Arc::new(vec![7u32; len]);
        assert_eq!(storage.capacity(), len);
        adopt(&*storage);
        let mut clone = storage.clone();
        give(&mut clone); // not the last owner: nothing happens
        assert_eq!(storage.len(), len);
        let ptr = storage.as_ptr();
        give(&mut storage);
        assert!(storage.is_empty(), "the buffer moved into the cache");
        let again = take::<u32>(len - 5).expect("cached");
        assert_eq!(again.as_ptr(), ptr);
        assert_eq!(again.len(), len, "old contents are kept for for_overwrite");
        assert!(
            take::<i32>(len).is_none() || cached_bytes() > 0,
            "keyed by type"
        );

        // Storage that was never adopted as live does not raise the cap.
        let big = class_len::<u32>(40_000_000).unwrap();
        let mut lone = Arc::new(Vec::<u32>::with_capacity(big));
        let before = cached_bytes();
        give(&mut lone);
        let guard = cache();
        let c = guard.as_ref().unwrap();
        assert!(c.free_bytes <= (2 * c.peak_live_bytes).max(before));
    }

    #[test]
    fn a_dense_scratch_copy_goes_back_to_the_cache() {
        // A class no other test asks for (i32 storage of ~10.7 MiB). A live
        // tensor of the class first, so that the cap has room for it.
        let len = class_len::<i32>(2_800_001).unwrap();
        let live = Arc::new(vec![1i32; len]);
        adopt(&*live);
        let scratch = vec![3i32; len];
        let ptr = scratch.as_ptr();
        drop(crate::dense::Dense::copied(scratch));
        let again = take::<i32>(len).expect("the scratch copy was cached");
        assert_eq!(again.as_ptr(), ptr);
        // A borrowed read gives nothing back, and a vector of no class is
        // freed, not cached.
        drop(crate::dense::Dense::borrowed(&live[..]));
        recycle(vec![0i32; 100]);
        assert!(take::<i32>(100).is_none());
    }
}
