//! `rand` / `randn`: the counter-based generator of `wgrad_core::random`.

use wgrad_core::random::seed_keys;
use wgrad_core::{DType, Error, Result, shape};
use wgrad_device::GpuDevice;
use wgrad_kernels::{KernelCache, KernelSpec, families};

use crate::GpuTensor;
use crate::params::RandomParams;

impl GpuTensor {
    /// Uniform f32 values in `[low, high)`; element `i` is
    /// `wgrad_core::random::uniform(seed_keys(seed), i, low, high)`, bit for
    /// bit the same as `CpuTensor::rand`.
    pub fn rand(
        device: &GpuDevice,
        shape: &[usize],
        low: f32,
        high: f32,
        seed: u64,
    ) -> Result<GpuTensor> {
        Self::random(
            device,
            "rand",
            &families::random::RAND_UNIFORM,
            shape,
            [low, high],
            seed,
        )
    }

    /// Normal f32 values with `mean` and `std` (Box–Muller); element `i` is
    /// `wgrad_core::random::normal(seed_keys(seed), i, mean, std)` up to a few
    /// f32 ulps (the kernel's own log/cos versus the host's libm).
    pub fn randn(
        device: &GpuDevice,
        shape: &[usize],
        mean: f32,
        std: f32,
        seed: u64,
    ) -> Result<GpuTensor> {
        Self::random(
            device,
            "randn",
            &families::random::RAND_NORMAL,
            shape,
            [mean, std],
            seed,
        )
    }

    fn random(
        device: &GpuDevice,
        op: &'static str,
        spec: &'static KernelSpec,
        shape: &[usize],
        [a, b]: [f32; 2],
        seed: u64,
    ) -> Result<GpuTensor> {
        let n = shape::checked_numel(op, shape)?;
        // The counter is 32 bits on both devices; larger tensors would repeat.
        let n = u32::try_from(n).map_err(|_| {
            Error::invalid(op, format!("shape {shape:?} has more than 2^32 elements"))
        })?;
        let kernels = KernelCache::of(device)?;
        let out = Self::empty_on(&kernels, op, shape, DType::F32)?;
        let [k0, k1] = seed_keys(seed);
        // The last word must be 0: the kernel XORs it in to block FMA contraction.
        let p = RandomParams {
            numel: n,
            key0: k0,
            key1: k1,
            a: a.to_bits(),
            b: b.to_bits(),
            zero: 0,
        };
        kernels.dispatch_1d(spec, &[], &[&out.buffer], &p, u64::from(n))?;
        Ok(out)
    }
}
