//! Shared GPU test helpers.
#![allow(dead_code)]

use wgrad_device::GpuDevice;

/// The shared GPU, or `None` (with a notice) when no adapter is present.
/// With `WGRAD_REQUIRE_GPU=1` a missing adapter fails the test instead.
pub fn gpu() -> Option<GpuDevice> {
    match GpuDevice::shared() {
        Ok(device) => Some(device),
        Err(e) => {
            if std::env::var("WGRAD_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("WGRAD_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("gpu-test: SKIPPED (no GPU adapter: {e})");
            None
        }
    }
}

/// A private GPU device, for tests that count `DeviceStats` (the shared one
/// is used by tests running in parallel).
pub fn own_gpu() -> Option<GpuDevice> {
    gpu()?;
    Some(GpuDevice::new().expect("a second device on the same adapter"))
}

/// Max relative error between two f32 slices, `|a-b| / max(1, |b|)`, NaN-aware.
pub fn max_rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "length mismatch");
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            if g.is_nan() && w.is_nan() || g == w {
                0.0
            } else {
                (g - w).abs() / w.abs().max(1.0)
            }
        })
        .fold(0.0, f32::max)
}

/// Asserts `got` matches `want` within `tol` relative error.
pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    let err = max_rel_err(got, want);
    assert!(
        err <= tol,
        "{what}: max relative error {err} > {tol}\n got: {got:?}\nwant: {want:?}"
    );
}
