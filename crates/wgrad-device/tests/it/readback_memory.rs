//! Readback staging buffers belong to the pool: counted in `DeviceStats`
//! (live while a readback is in flight, cached after), reused by later
//! readbacks, and released by `empty_cache()`, after which the process RSS
//! comes back down.
//!
//! Its own test binary (one test): RSS is per process, and other tests
//! allocating in parallel threads would blur it.

use crate::common;

#[test]
fn readback_staging_is_pooled_counted_and_released_by_empty_cache() {
    let Some(gpu) = common::own_gpu() else { return };
    let sizes_mib = [40u64, 64, 88, 112];
    let limit = gpu
        .limits()
        .max_storage_buffer_binding_size
        .min(gpu.limits().max_buffer_size);
    if sizes_mib.iter().any(|&m| m << 20 > limit) {
        eprintln!("gpu-test: SKIPPED (binding limit {limit} below 112 MiB)");
        return;
    }
    // Warm up (driver, poller thread) before taking the baseline.
    let warm = gpu.upload("test", &[0u8; 1024]).unwrap();
    gpu.read(&warm, 0, 1024).unwrap().wait().unwrap();
    drop(warm);
    gpu.empty_cache();
    let rss_before = common::rss_mib();
    let before = gpu.stats();

    let mut in_flight = Vec::new();
    for &mib in &sizes_mib {
        let bytes = mib << 20;
        let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        let buffer = gpu.upload("test", &data).unwrap();
        let pending = gpu.read(&buffer, 0, bytes).unwrap();
        // The tensor and the staging buffer the readback lands in.
        in_flight.push(gpu.stats().live_bytes);
        let back = pending.wait().unwrap();
        assert!(back == data, "{mib} MiB came back wrong");
    }
    let held = gpu.stats();

    // Reading the largest again reuses its buffers instead of creating more.
    let buffer = gpu.alloc("test", 112 << 20).unwrap();
    gpu.read(&buffer, 0, 112 << 20).unwrap().wait().unwrap();
    drop(buffer);
    let reused = gpu.stats().since(&held);

    gpu.empty_cache();
    let after = gpu.stats();
    let rss_after = common::rss_mib();
    eprintln!(
        "readback {sizes_mib:?} MiB: RSS {rss_before:?} -> {rss_after:?} MiB after empty_cache\n \
         baseline {before:?}\n live while in flight {in_flight:?}\n \
         after reads, tensors dropped: {held:?}\n \
         reading 112 MiB again: {reused:?}\n after empty_cache: {after:?}"
    );
    for (&mib, &live) in sizes_mib.iter().zip(&in_flight) {
        assert!(
            live >= 2 * (mib << 20),
            "a {mib} MiB readback in flight: live_bytes {live} leaves out the staging buffer"
        );
    }
    assert_eq!(held.live_bytes, 0, "{held:?}");
    assert!(
        held.cached_bytes > 2 * (112 << 20),
        "the last tensor and its staging buffer are cached: {held:?}"
    );
    assert_eq!(reused.buffers_created, 0, "{reused:?}");
    assert_eq!((after.live_bytes, after.cached_bytes), (0, 0), "{after:?}");

    // The same reads again: nothing may pile up from one round to the next.
    for &mib in &sizes_mib {
        let buffer = gpu.alloc("test", mib << 20).unwrap();
        gpu.read(&buffer, 0, mib << 20).unwrap().wait().unwrap();
    }
    gpu.empty_cache();
    let rss_again = common::rss_mib();
    eprintln!("RSS after a second round and empty_cache: {rss_again:?} MiB");
    if let (Some(b), Some(a), Some(again)) = (rss_before, rss_after, rss_again) {
        // NVIDIA's driver keeps a host arena of about 64 MiB once a large
        // mapped buffer has existed (H100, driver 580.159.04: 64.5 MiB, the
        // same every run), so the first bound leaves it room; a leaked
        // staging buffer (40-112 MiB each, 304 MiB a round) still fails it,
        // and the second round must not grow at all.
        assert!(
            a - b < 96.0,
            "RSS grew from {b:.0} to {a:.0} MiB although every buffer was released"
        );
        assert!(
            again - a < 16.0,
            "RSS grew from {a:.0} to {again:.0} MiB over a second round of the same reads"
        );
    }
}
