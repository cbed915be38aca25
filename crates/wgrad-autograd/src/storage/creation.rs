//! Creating tensors and moving them between devices: the CPU/GPU dispatch
//! point of `from_vec`, `full`, `arange`, `rand`, `randn` and `to_device`.

use wgrad_core::{DType, Element, Result};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::Storage;
use crate::Device;

impl Storage {
    /// A contiguous tensor on `device` from row-major `data`; `data.len()`
    /// must equal the product of `shape` (else [`Error::InvalidArgument`]).
    pub fn from_vec<T: Element + bytemuck::Pod>(
        data: Vec<T>,
        shape: &[usize],
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::from_vec(data, shape)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::from_vec(g, data, shape)?)),
        }
    }

    /// A contiguous tensor of `shape` on `device` with every element `value`
    /// converted to `dtype` (`torch.full`; `as` casts for integer dtypes).
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::full(shape, value, dtype)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::full(g, shape, value, dtype)?)),
        }
    }

    /// Zeros of the same shape, dtype and device (`torch.zeros_like`), contiguous.
    pub fn zeros_like(&self) -> Result<Storage> {
        Storage::full(self.shape(), 0.0, self.dtype(), &self.device())
    }

    /// The 1-D range `start, start + step, ...` up to (excluding) `end` on
    /// `device` (`torch.arange`), computed in f64 and converted to `dtype`.
    /// A zero or non-finite step, or one pointing away from `end`, is
    /// [`Error::InvalidArgument`].
    pub fn arange(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::arange(start, end, step, dtype)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::arange(g, start, end, step, dtype)?)),
        }
    }

    /// Uniform F32 values in `[low, high)` (`torch.rand` scaled); element `i`
    /// depends only on `seed` and `i`, so CPU and GPU draw the same numbers.
    pub fn rand(
        shape: &[usize],
        low: f32,
        high: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::rand(shape, low, high, seed)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::rand(g, shape, low, high, seed)?)),
        }
    }

    /// Normal F32 values with `mean` and `std` (`torch.randn` scaled);
    /// element `i` depends only on `seed` and `i`, equal on CPU and GPU.
    pub fn randn(
        shape: &[usize],
        mean: f32,
        std: f32,
        seed: u64,
        device: &Device,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuTensor::randn(shape, mean, std, seed)?)),
            Device::Gpu(g) => Ok(Storage::Gpu(GpuTensor::randn(g, shape, mean, std, seed)?)),
        }
    }

    /// Copies to `device` (a no-op clone when already there).
    pub fn to_device(&self, device: &Device) -> Result<Storage> {
        if self.device().same(device) {
            return Ok(self.clone());
        }
        macro_rules! moved {
            ($T:ty) => {
                Storage::from_vec(self.to_vec::<$T>()?, self.shape(), device)
            };
        }
        match self.dtype() {
            DType::F32 => moved!(f32),
            DType::I32 => moved!(i32),
            DType::U32 => moved!(u32),
            DType::F16 => moved!(half::f16),
            DType::BF16 => moved!(half::bf16),
        }
    }
}
