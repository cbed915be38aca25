//! Device selection: `Device::best()` never picks a software GPU adapter
//! (lavapipe, llvmpipe, SwiftShader, WARP) unless asked, says why it chose
//! what it chose, and devices are addressable as `gpu:N`.

use wgrad_autograd::Device;
use wgrad_gpu::GpuDevice;

/// Whether the environment already makes the choice (then the automatic
/// rule is not what is under test).
fn choice_forced() -> bool {
    ["WGRAD_DEVICE", "WGRAD_ADAPTER"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "auto"))
}

/// `GpuDevice::adapters()`, or `None` (skip) when there are none.
fn adapters_or_skip() -> Option<Vec<(String, bool)>> {
    let adapters: Vec<(String, bool)> = GpuDevice::adapters()
        .into_iter()
        .map(|a| (a.name, a.software))
        .collect();
    if adapters.is_empty() {
        wgrad_test_support::no_gpu("wgpu enumerates no adapter");
        return None;
    }
    Some(adapters)
}

#[test]
fn auto_skips_software_adapters_and_says_why() {
    if choice_forced() {
        eprintln!("skipped: WGRAD_DEVICE / WGRAD_ADAPTER decide the device");
        return;
    }
    let adapters = GpuDevice::adapters();
    let (device, reason) = Device::best_with_reason().unwrap();
    eprintln!("adapters {adapters:?}: chose {device} because {reason}");
    assert!(!reason.is_empty());
    if adapters.iter().all(|a| a.software) {
        assert!(
            !device.is_gpu(),
            "with only software adapters {adapters:?}, auto must pick the CPU, got {device}"
        );
        if !adapters.is_empty() {
            assert!(reason.contains("software"), "{reason}");
            assert!(reason.contains(&adapters[0].name), "{reason}");
        }
    } else {
        let Device::Gpu(g) = &device else {
            panic!("a hardware adapter exists in {adapters:?}, but auto chose {device}: {reason}")
        };
        assert!(!g.info().is_software(), "{}", g.info());
    }
    // `auto` through parse gives the same device.
    let (parsed, _) = Device::parse_with_reason("auto").unwrap();
    assert_eq!(parsed.is_gpu(), device.is_gpu());
}

#[test]
fn gpu_n_addresses_enumerated_adapters() {
    let Some(adapters) = adapters_or_skip() else {
        return;
    };
    let last = adapters.len() - 1;
    let d = Device::parse(&format!("gpu:{last}")).unwrap();
    let Device::Gpu(g) = &d else {
        panic!("gpu:{last} gave {d}")
    };
    assert_eq!(g.info().index, last);
    assert_eq!(g.info().name, adapters[last].0);
    assert!(d.to_string().starts_with(&format!("gpu:{last}")), "{d}");
    // The same process-wide device every time (tensors on it interoperate).
    assert!(Device::parse(&format!("gpu:{last}")).unwrap().same(&d));
    // Asking for the GPU is honoured even when it is a software one.
    let (explicit, why) = Device::parse_with_reason("gpu").unwrap();
    assert!(explicit.is_gpu() && why.contains("asked"), "{why}");
}

#[test]
fn bad_gpu_index_is_a_clear_error() {
    let Some(adapters) = adapters_or_skip() else {
        return;
    };
    let n = adapters.len();
    let err = Device::parse(&format!("gpu:{n}")).unwrap_err().to_string();
    let count = format!("{n} adapter");
    assert!(
        err.contains(&format!("gpu:{n}")) && err.contains(&count) && err.contains("gpu:0"),
        "{err}"
    );
    let err = Device::parse("gpu:x").unwrap_err().to_string();
    assert!(err.contains("gpu:x") && err.contains("number"), "{err}");
    let err = Device::parse("cuda").unwrap_err().to_string();
    assert!(err.contains("gpu:N"), "{err}");
}
