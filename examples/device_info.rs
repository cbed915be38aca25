//! Prints the GPU adapter wgrad would use and its limits.
//!
//! `cargo run --release --example device_info`; exits non-zero with advice
//! when no adapter is available (the CPU device still works then).

fn main() {
    match wgrad_device::GpuDevice::new() {
        Ok(gpu) => println!("{}", gpu.info()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
