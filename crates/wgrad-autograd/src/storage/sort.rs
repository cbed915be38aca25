//! Sorting, scans and random sampling: the CPU/GPU dispatch point of
//! `sort`, `cumsum`, `cumprod`, `randint`, `randperm`, `bernoulli` and `multinomial`.

use wgrad_core::Result;
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;

use super::{Storage, half_compute, mismatch};
use crate::Device;

impl Storage {
    /// Stably sorted values along `axis` and their I32 indices.
    pub fn sort(&self, axis: isize, descending: bool) -> Result<(Storage, Storage)> {
        half_compute::compute2(self, |s| {
            Ok(match s {
                Storage::Cpu(x) => {
                    let (v, i) = x.sort(axis, descending)?;
                    (Storage::Cpu(v), Storage::Cpu(i))
                }
                Storage::Gpu(x) => {
                    let (v, i) = x.sort(axis, descending)?;
                    (Storage::Gpu(v), Storage::Gpu(i))
                }
            })
        })
    }

    /// The I32 indices of a stable sort along `axis`.
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Storage> {
        half_compute::compute([self], |[x]| {
            Ok(match x {
                Storage::Cpu(x) => Storage::Cpu(x.argsort(axis, descending)?),
                Storage::Gpu(x) => Storage::Gpu(x.argsort(axis, descending)?),
            })
        })
    }

    /// Inclusive prefix sums along `axis` (from the end when `reverse`).
    pub fn cumsum(&self, axis: isize, reverse: bool) -> Result<Storage> {
        if let Some(x) = super::masks::unmasked(self, wgrad_core::DType::I32)? {
            return x.cumsum(axis, reverse);
        }
        half_compute::compute([self], |[x]| {
            Ok(match x {
                Storage::Cpu(x) => Storage::Cpu(x.cumsum(axis, reverse)?),
                Storage::Gpu(x) => Storage::Gpu(x.cumsum(axis, reverse)?),
            })
        })
    }

    /// Inclusive prefix products along `axis`.
    pub fn cumprod(&self, axis: isize) -> Result<Storage> {
        half_compute::compute([self], |[x]| {
            Ok(match x {
                Storage::Cpu(x) => Storage::Cpu(x.cumprod(axis)?),
                Storage::Gpu(x) => Storage::Gpu(x.cumprod(axis)?),
            })
        })
    }

    /// The input gradient of `x.cumprod(axis)`, `self` being the output
    /// gradient (exact where `x` holds zeros).
    pub fn cumprod_backward(&self, x: &Storage, axis: isize) -> Result<Storage> {
        half_compute::compute([self, x], |[g, x]| match (g, x) {
            (Storage::Cpu(g), Storage::Cpu(x)) => Ok(Storage::Cpu(g.cumprod_backward(x, axis)?)),
            (Storage::Gpu(g), Storage::Gpu(x)) => Ok(Storage::Gpu(g.cumprod_backward(x, axis)?)),
            (g, x) => Err(mismatch("cumprod_backward", g, x)),
        })
    }

    /// I32 values uniform in `[low, high)`, the same on every device.
    pub fn randint(
        shape: &[usize],
        low: i32,
        high: i32,
        seed: u64,
        device: &Device,
    ) -> Result<Storage> {
        Ok(match device {
            Device::Cpu => Storage::Cpu(CpuTensor::randint(shape, low, high, seed)?),
            Device::Gpu(g) => Storage::Gpu(GpuTensor::randint(g, shape, low, high, seed)?),
        })
    }

    /// A random permutation of `0..n` (I32), the same on every device.
    pub fn randperm(n: usize, seed: u64, device: &Device) -> Result<Storage> {
        Ok(match device {
            Device::Cpu => Storage::Cpu(CpuTensor::randperm(n, seed)?),
            Device::Gpu(g) => Storage::Gpu(GpuTensor::randperm(g, n, seed)?),
        })
    }

    /// F32 0/1 draws with the probabilities in `self`.
    pub fn bernoulli(&self, seed: u64) -> Result<Storage> {
        half_compute::compute([self], |[x]| {
            Ok(match x {
                Storage::Cpu(x) => Storage::Cpu(x.bernoulli(seed)?),
                Storage::Gpu(x) => Storage::Gpu(x.bernoulli(seed)?),
            })
        })
    }

    /// I32 category draws from the weight rows in `self`.
    pub fn multinomial(&self, num_samples: usize, replacement: bool, seed: u64) -> Result<Storage> {
        half_compute::compute([self], |[x]| {
            Ok(match x {
                Storage::Cpu(x) => Storage::Cpu(x.multinomial(num_samples, replacement, seed)?),
                Storage::Gpu(x) => Storage::Gpu(x.multinomial(num_samples, replacement, seed)?),
            })
        })
    }
}
