//! Where a tensor lives.

use std::fmt;

use wgrad_core::{Error, Result};
use wgrad_gpu::GpuDevice;

/// A compute device: the CPU (ndarray) or a GPU (wgpu).
#[derive(Clone)]
pub enum Device {
    Cpu,
    Gpu(GpuDevice),
}

impl Device {
    /// The process-wide default GPU.
    pub fn gpu() -> Result<Device> {
        Ok(Device::Gpu(GpuDevice::shared()?))
    }

    /// The GPU when an adapter exists, else the CPU (with a one-line notice
    /// on stderr). `WGRAD_DEVICE=cpu|gpu` overrides the choice.
    pub fn best() -> Result<Device> {
        match std::env::var("WGRAD_DEVICE").ok().as_deref() {
            Some("cpu") => return Ok(Device::Cpu),
            Some("gpu") => return Device::gpu(),
            Some(other) if !other.is_empty() && other != "auto" => {
                return Err(Error::invalid(
                    "Device::best",
                    format!("WGRAD_DEVICE={other:?}; expected cpu, gpu or auto"),
                ));
            }
            _ => {}
        }
        match Device::gpu() {
            Ok(d) => Ok(d),
            Err(e) => {
                eprintln!("wgrad: no GPU available, using the CPU ({e})");
                Ok(Device::Cpu)
            }
        }
    }

    /// Parses `auto`, `cpu` or `gpu` (as the examples' `--device` flag takes).
    pub fn parse(name: &str) -> Result<Device> {
        match name {
            "auto" => Device::best(),
            "cpu" => Ok(Device::Cpu),
            "gpu" => Device::gpu(),
            other => Err(Error::invalid(
                "Device::parse",
                format!("unknown device {other:?}; expected auto, cpu or gpu"),
            )),
        }
    }

    pub fn is_gpu(&self) -> bool {
        matches!(self, Device::Gpu(_))
    }

    /// Whether two devices are the same device.
    pub fn same(&self, other: &Device) -> bool {
        match (self, other) {
            (Device::Cpu, Device::Cpu) => true,
            (Device::Gpu(a), Device::Gpu(b)) => a.same_device(b),
            _ => false,
        }
    }

    /// Waits until all work recorded on this device has finished (no-op on the CPU).
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Gpu(g) => g.synchronize(),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Gpu(g) => f.write_str(&g.label()),
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
