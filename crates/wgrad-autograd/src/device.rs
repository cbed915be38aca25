//! Where a tensor lives.

use std::fmt;

use wgrad_core::{Error, Result};
use wgrad_gpu::GpuDevice;

/// A compute device: the CPU (ndarray) or a GPU (wgpu).
///
/// Tensors are created on a device and moved with
/// [`Tensor::to`](crate::Tensor::to); dtypes change with
/// [`Tensor::cast`](crate::Tensor::cast). [`Device::best`] picks a GPU when
/// there is a hardware one (`WGRAD_DEVICE` overrides), else the CPU.
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor};
/// let cpu = Device::parse("cpu")?; // also "gpu", "gpu:1", "auto"
/// assert!(!cpu.is_gpu());
/// let x = Tensor::from_vec(vec![1.5f32, -2.5], &[2], &cpu)?;
/// let moved = x.to(&cpu)?; // to(&Device::gpu()?) uploads
/// assert!(moved.device().same(&Device::Cpu));
/// let ints = x.cast(DType::I32)?; // truncates toward zero
/// assert_eq!(ints.to_vec::<i32>()?, [1, -2]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Clone)]
pub enum Device {
    /// The host, computing with `wgrad-cpu` (`torch.device("cpu")`).
    Cpu,
    /// A GPU opened through wgpu (`torch.device("cuda:N")`); clones share
    /// the one device and its queue.
    Gpu(GpuDevice),
}

impl Device {
    /// The process-wide default GPU (any adapter, software ones included:
    /// asking for the GPU is asking for it).
    pub fn gpu() -> Result<Device> {
        Ok(Device::Gpu(GpuDevice::shared()?))
    }

    /// The GPU on adapter `gpu:index`: the `index`-th adapter wgpu
    /// enumerates (`cargo run --example device_info` lists them). An index
    /// past the end is an error listing the adapters there are.
    pub fn gpu_at(index: usize) -> Result<Device> {
        Ok(Device::Gpu(GpuDevice::shared_at(index)?))
    }

    /// [`best_with_reason`](Self::best_with_reason), logging the choice and
    /// its reason (`log::info!`, target `wgrad`) the first time it is made
    /// in the process (`using gpu:0 (NVIDIA H200): ...`); a library does not
    /// print, the application decides what to show.
    pub fn best() -> Result<Device> {
        let (device, reason) = Device::best_with_reason()?;
        static NOTICE: std::sync::Once = std::sync::Once::new();
        NOTICE.call_once(|| log::info!(target: "wgrad", "using {device}: {reason}"));
        Ok(device)
    }

    /// The device to use when the user did not name one, and why, without
    /// printing anything:
    ///
    /// - `WGRAD_DEVICE=cpu|gpu|gpu:N` decides if set (`auto` or empty: as if unset);
    /// - `WGRAD_ADAPTER` set: that GPU adapter, even a software one;
    /// - otherwise a hardware GPU if wgpu enumerates one, else the CPU.
    ///   Software adapters (adapter type CPU: lavapipe, llvmpipe,
    ///   SwiftShader, WARP) are not chosen unless asked for: on the same
    ///   machine wgrad's CPU backend is much faster (about 25x on the MNIST
    ///   example).
    pub fn best_with_reason() -> Result<(Device, String)> {
        match std::env::var("WGRAD_DEVICE").ok().as_deref() {
            None | Some("" | "auto") => {}
            Some(name) => {
                let device = Device::parse_named("WGRAD_DEVICE", name)?;
                return Ok((device, format!("WGRAD_DEVICE={name}")));
            }
        }
        if let Ok(wanted) = std::env::var("WGRAD_ADAPTER") {
            let device = Device::gpu()?;
            return Ok((
                device,
                format!("WGRAD_ADAPTER={wanted:?} picks the adapter"),
            ));
        }
        let adapters = GpuDevice::adapters();
        if adapters.is_empty() {
            return Ok((
                Device::Cpu,
                "no GPU adapter found (install a Vulkan, Metal or DX12 driver to use a GPU)"
                    .to_string(),
            ));
        }
        if adapters.iter().all(|a| a.software) {
            let names: Vec<&str> = adapters.iter().map(|a| a.name.as_str()).collect();
            return Ok((
                Device::Cpu,
                format!(
                    "the only GPU adapter{} ({}) {} software, slower than the CPU backend; \
                     --device gpu or WGRAD_DEVICE=gpu uses {} anyway",
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", "),
                    if names.len() == 1 { "is" } else { "are" },
                    if names.len() == 1 { "it" } else { "them" },
                ),
            ));
        }
        let hardware = adapters.iter().find(|a| !a.software).map(|a| a.index);
        let opened = match GpuDevice::shared() {
            Ok(g) if !g.info().is_software() => Ok(g),
            // The default pick was software although a hardware adapter exists.
            _ => GpuDevice::shared_at(hardware.unwrap_or(0)),
        };
        Ok(match opened {
            Ok(g) => {
                let reason = format!("a hardware GPU adapter ({})", g.info().device_type);
                (Device::Gpu(g), reason)
            }
            Err(e) => (Device::Cpu, format!("no usable GPU ({e})")),
        })
    }

    /// Parses `auto`, `cpu`, `gpu` or `gpu:N` (as the examples' `--device`
    /// flag takes). `auto` is [`best`](Self::best); `gpu` the default GPU
    /// adapter and `gpu:N` the N-th one wgpu enumerates, software or not.
    pub fn parse(name: &str) -> Result<Device> {
        match name {
            "auto" => Device::best(),
            other => Device::parse_named("Device::parse", other),
        }
    }

    /// [`parse`](Self::parse), returning why the device was chosen instead
    /// of printing it (`auto` gives [`best_with_reason`](Self::best_with_reason)'s
    /// reason; a named device, "asked for").
    pub fn parse_with_reason(name: &str) -> Result<(Device, String)> {
        match name {
            "auto" => Device::best_with_reason(),
            other => Ok((
                Device::parse_named("Device::parse", other)?,
                format!("asked for {other}"),
            )),
        }
    }

    /// `cpu`, `gpu` or `gpu:N`.
    fn parse_named(op: &'static str, name: &str) -> Result<Device> {
        match name {
            "cpu" => Ok(Device::Cpu),
            "gpu" => Device::gpu(),
            other => match other.strip_prefix("gpu:") {
                Some(n) => {
                    let index = n.parse::<usize>().map_err(|_| {
                        Error::invalid(
                            op,
                            format!("{other:?}: the adapter index must be a number, as in gpu:0"),
                        )
                    })?;
                    Device::gpu_at(index)
                }
                None => Err(Error::invalid(
                    op,
                    format!("unknown device {other:?}; expected auto, cpu, gpu or gpu:N"),
                )),
            },
        }
    }

    /// Whether this is a GPU device (`tensor.is_cuda` in PyTorch).
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

    /// Frees the device's cached free buffers (`torch.cuda.empty_cache()`):
    /// the GPU buffer pool's, or on the CPU those of `wgrad-cpu`'s buffer
    /// cache. Live tensors are untouched.
    pub fn empty_cache(&self) {
        match self {
            Device::Cpu => wgrad_cpu::empty_cache(),
            Device::Gpu(g) => g.empty_cache(),
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
