//! The caching allocator's overhead is bounded, measured through
//! `DeviceStats`: the cache never holds more than twice the peak live bytes,
//! for random shapes and for a training loop that uploads a batch per step
//! without reading anything back.

use crate::common;

use wgrad_device::{DeviceStats, GpuBuffer};

/// Bytes of a random f32 tensor shape: rank 1-4, dims 1..=384, at most 1 Mi
/// elements (dims are drawn within what is left of that budget).
fn random_bytes(rng: &mut common::Rng) -> u64 {
    let rank = rng.range(1, 4);
    let mut numel = 1u64;
    for _ in 0..rank {
        let room = ((1u64 << 20) / numel).clamp(1, 384);
        numel *= rng.range(1, room);
    }
    4 * numel
}

fn report(what: &str, max_cached: u64, s: &DeviceStats) -> f64 {
    let ratio = max_cached as f64 / s.peak_live_bytes.max(1) as f64;
    eprintln!(
        "{what}: peak live {:.1} MB, max cached {:.1} MB ({ratio:.2}x), \
         buffers created {}, hits {}, misses {}",
        s.peak_live_bytes as f64 / 1e6,
        max_cached as f64 / 1e6,
        s.buffers_created,
        s.pool_hits,
        s.pool_misses
    );
    ratio
}

#[test]
fn random_shapes_cache_stays_within_twice_peak_live() {
    let Some(gpu) = common::own_gpu() else { return };
    let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15);
    // Each iteration is one op `out = f(a, b)`; the last two results stay
    // alive (like a program holding a few tensors), the inputs are dropped.
    // Every 10 iterations a small readback submits the recorded work.
    let mut kept: Vec<GpuBuffer> = Vec::new();
    let mut max_cached = 0;
    for i in 0..3000 {
        let bytes = random_bytes(&mut rng);
        let a = if bytes <= 64 << 10 {
            gpu.upload("test", &vec![1u8; bytes as usize]).unwrap()
        } else {
            gpu.alloc("test", bytes).unwrap()
        };
        let b = gpu.alloc("test", bytes).unwrap();
        let out = gpu.alloc("test", bytes).unwrap();
        gpu.copy_buffer(&a, 0, &out, 0, bytes).unwrap();
        gpu.copy_buffer(&b, 0, &out, 0, bytes).unwrap();
        drop((a, b));
        kept.push(out);
        if kept.len() > 2 {
            kept.remove(0);
        }
        if i % 10 == 9 {
            gpu.read(&kept[0], 0, 4).unwrap().wait().unwrap();
        }
        max_cached = max_cached.max(gpu.stats().cached_bytes);
    }
    let s = gpu.stats();
    let ratio = report("random shapes", max_cached, &s);
    assert!(
        ratio <= 2.0,
        "the cache held {ratio:.2}x the peak live bytes"
    );
    // ... and still serves most requests (the bound is not met by thrashing).
    let requests = s.pool_hits + s.pool_misses;
    assert!(
        s.pool_misses * 20 <= requests,
        "{} of {requests} requests created a buffer",
        s.pool_misses
    );
}

#[test]
fn uploads_without_readback_do_not_pile_up() {
    let Some(gpu) = common::own_gpu() else { return };
    // A training loop: parameters live throughout; each step uploads a batch
    // (x, y), records work that reads it, and drops it. Nothing is read back
    // until the end, so only the recorder's own bound ever submits.
    let params: Vec<GpuBuffer> = (0..4)
        .map(|_| gpu.alloc("test", 1 << 20).unwrap())
        .collect();
    let x_bytes = 64 * 784 * 4;
    let x_host = vec![7u8; x_bytes];
    let y_host = vec![1u8; 64 * 4];
    let mut max_cached = 0;
    let mut created_after_warm_up = 0;
    for step in 0..200 {
        let before = gpu.stats();
        let x = gpu.upload("test", &x_host).unwrap();
        let y = gpu.upload("test", &y_host).unwrap();
        let h = gpu.alloc("test", x_bytes as u64).unwrap();
        gpu.copy_buffer(&x, 0, &h, 0, x_bytes as u64).unwrap();
        gpu.copy_buffer(&h, 0, &params[0], 0, x_bytes as u64)
            .unwrap();
        gpu.copy_buffer(&y, 0, &params[1], 0, y_host.len() as u64)
            .unwrap();
        drop((x, y, h));
        if step >= 3 {
            created_after_warm_up += gpu.stats().since(&before).buffers_created;
        }
        max_cached = max_cached.max(gpu.stats().cached_bytes);
    }
    gpu.read(&params[0], 0, 4).unwrap().wait().unwrap();
    let ratio = report("upload loop", max_cached, &gpu.stats());
    assert!(
        ratio <= 2.0,
        "the cache held {ratio:.2}x the peak live bytes"
    );
    assert_eq!(
        created_after_warm_up, 0,
        "uploads kept creating buffers after warm-up"
    );
}
