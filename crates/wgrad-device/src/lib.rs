//! The GPU device layer of wgrad.
//!
//! [`GpuDevice`] owns the wgpu instance, adapter, device and queue, a caching
//! buffer pool (`pool.rs`), and the command recorder (`recorder.rs`) that
//! keeps one compute pass open and records every dispatch into it. Only this
//! crate calls `submit`, `poll` and `map_async`; everything above records
//! through it.
//!
//! (`no_run`: it needs a GPU adapter, which a documentation build may not
//! have; `Device::Cpu` examples in `wgrad_autograd` run everywhere.)
//!
//! ```no_run
//! let gpu = wgrad_device::GpuDevice::shared()?;
//! println!("{}", gpu.info());
//! # Ok::<(), wgrad_core::Error>(())
//! ```

#![deny(missing_docs)]

mod adapter;
mod buffer;
mod device;
mod fault;
mod pool;
mod profiler;
mod readback;
mod recorder;
mod stats;
mod upload;

pub use adapter::{AdapterListing, AdapterSummary};
pub use buffer::GpuBuffer;
pub use device::GpuDevice;
pub use fault::FaultCode;
pub use profiler::{DispatchTime, KernelTime};
pub use readback::Readback;
pub use stats::DeviceStats;

/// Blocks on a future (pollster); for wgpu calls that resolve at once on native.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    pollster::block_on(f)
}

/// Re-exported so that `wgrad-kernels` names the same wgpu version.
pub use wgpu;
