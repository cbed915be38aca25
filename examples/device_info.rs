//! Lists the GPU adapters wgpu enumerates (`gpu:0`, `gpu:1`, ...), the
//! device `--device auto` would pick and why, and the default adapter's
//! limits.
//!
//! `cargo run --release --example device_info`; exits non-zero with advice
//! when no adapter is available (the CPU device still works then).

use wgrad::prelude::Device;

fn main() {
    for adapter in wgrad_device::GpuDevice::adapters() {
        println!("{adapter}");
    }
    match Device::best_with_reason() {
        Ok((device, reason)) => println!("auto: {device} ({reason})"),
        Err(e) => println!("auto: error: {e}"),
    }
    match wgrad_device::GpuDevice::new() {
        Ok(gpu) => println!("{}", gpu.info()),
        Err(e) => {
            // One line (its Display text): `cargo xtask ci` quotes the last
            // line of stderr as the reason the GPU tests are skipped.
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
