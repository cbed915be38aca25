//! Helpers shared by wgrad's integration tests; a dev-dependency only
//! (`publish = false`).
//!
//! GPU tests skip with a notice (`gpu-test: SKIPPED (...)`) when no adapter
//! is present, so `cargo test` passes on machines without a GPU; CI sets
//! `WGRAD_REQUIRE_GPU=1` so that a missing adapter fails instead.

use std::fmt::Display;
use std::sync::{Mutex, MutexGuard};

use wgrad_device::GpuDevice;

/// Whether `WGRAD_REQUIRE_GPU=1`: a missing GPU fails the test.
pub fn gpu_required() -> bool {
    std::env::var("WGRAD_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Reports that a GPU test cannot run (`why`): panics under
/// `WGRAD_REQUIRE_GPU=1`, else prints the skip notice.
#[track_caller]
pub fn no_gpu(why: impl Display) {
    if gpu_required() {
        panic!("WGRAD_REQUIRE_GPU=1 but no GPU: {why}");
    }
    eprintln!("gpu-test: SKIPPED ({why})");
}

/// `Some(device)`, or `None` after [`no_gpu`] when opening it failed.
#[track_caller]
pub fn or_skip<T, E: Display>(opened: Result<T, E>) -> Option<T> {
    match opened {
        Ok(device) => Some(device),
        Err(e) => {
            no_gpu(format_args!("no GPU adapter: {e}"));
            None
        }
    }
}

/// The process-wide shared GPU (`GpuDevice::shared()`), or `None` (with a
/// notice) when no adapter is present.
#[track_caller]
pub fn shared_gpu() -> Option<GpuDevice> {
    or_skip(GpuDevice::shared())
}

/// A private GPU device, for tests that count `DeviceStats` (the shared one
/// is used by tests running in parallel), or `None` (with a notice).
#[track_caller]
pub fn own_gpu() -> Option<GpuDevice> {
    or_skip(GpuDevice::new())
}

/// The shared GPU as a `wgrad_autograd::Device`, or `None` (with a notice).
#[cfg(feature = "autograd")]
#[track_caller]
pub fn gpu() -> Option<wgrad_autograd::Device> {
    shared_gpu().map(wgrad_autograd::Device::Gpu)
}

/// Tests that reseed the process-wide generator (`manual_seed`) and expect
/// its draws in order hold this lock while they draw.
pub fn seed_lock() -> MutexGuard<'static, ()> {
    static SEED: Mutex<()> = Mutex::new(());
    SEED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Relative error `|got - want| / max(1, |want|)` (an absolute error below
/// 1); equal values (infinities included) and NaN against NaN count as 0,
/// NaN against a number as infinite.
pub fn rel_err(got: f32, want: f32) -> f32 {
    if got == want || (got.is_nan() && want.is_nan()) {
        0.0
    } else if got.is_nan() || want.is_nan() {
        f32::INFINITY
    } else {
        (got - want).abs() / want.abs().max(1.0)
    }
}

/// The largest [`rel_err`] over two slices (0 for empty ones).
#[track_caller]
pub fn max_rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "length mismatch");
    got.iter()
        .zip(want)
        .map(|(&g, &w)| rel_err(g, w))
        .fold(0.0, f32::max)
}

/// Asserts that every element of `got` is within `tol` [`rel_err`] of
/// `want`, naming `what` and the first element that is not.
#[track_caller]
pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = rel_err(g, w);
        assert!(
            err <= tol,
            "{what}[{i}]: got {g}, want {w} (relative error {err:e} > {tol:e})\n got: {got:?}\nwant: {want:?}"
        );
    }
}
