//! `GpuTensor`: wgrad's GPU tensor.
//!
//! A tensor is a [`Layout`](wgrad_core::Layout) (shape, strides, offset)
//! over a pooled device buffer. View ops change only the layout; every
//! other op records one or a few WGSL dispatches into the device's open
//! compute pass and returns at once. Only reading data back waits:
//! `tensor.to_vec::<f32>().await` or `to_vec_blocking()`.
//!
//! (`no_run`: it needs a GPU adapter; `wgrad_cpu::CpuTensor` has the same
//! methods and `wgrad_autograd`'s examples run on the CPU.)
//!
//! ```no_run
//! use wgrad_gpu::GpuTensor;
//! let gpu = wgrad_device::GpuDevice::shared()?;
//! let a = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0, 3.0], &[3])?;
//! let b = a.add(&a)?.exp()?;
//! println!("{:?}", b.to_vec_blocking::<f32>()?);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

#![deny(missing_docs)]

mod ops;
mod params;
mod tensor;

pub use ops::attention::set_attention_saved_ds_limit;
pub use ops::optim_foreach::AdamOperands;
#[doc(hidden)]
pub use ops::probe::dispatch_probe;
pub use tensor::GpuTensor;
pub use wgrad_core::{BinaryOp, CompareOp, DType, Error, Result, UnaryOp};
pub use wgrad_device::{DeviceStats, GpuDevice};
