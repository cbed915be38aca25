//! Random sampling on the device: `randint`, `randperm` (random 32-bit
//! keys, then the stable argsort), `bernoulli` and `multinomial`, all drawn
//! from the counter-based generator of `wgrad_core::random` so that the CPU
//! draws the same numbers (see each method for how close).
//!
//! Bad values only the device sees (a probability outside `[0, 1]`, a
//! negative or all-zero weight row) raise the device fault flag: the next
//! readback or `synchronize()` returns the error, as CUDA's device assert
//! does, and the kernels clamp in the meantime.

use wgrad_core::checks::sort::{self as checks, KeyKind};
use wgrad_core::random::seed_keys;
use wgrad_core::{DType, Result, shape};
use wgrad_device::GpuDevice;
use wgrad_kernels::KernelCache;
use wgrad_kernels::families::random as specs;

use crate::GpuTensor;
use crate::params::{BernoulliParams, MultinomialParams, RandintParams, to_u32};

impl GpuTensor {
    /// I32 values uniform in `[low, high)` (`torch.randint`); element `i`
    /// is `wgrad_core::random::uniform_int`, bit for bit the CPU's.
    pub fn randint(
        device: &GpuDevice,
        shape: &[usize],
        low: i32,
        high: i32,
        seed: u64,
    ) -> Result<GpuTensor> {
        let range = checks::randint_range(low, high)?;
        Self::random_ints(device, "randint", shape, low, range, seed)
    }

    /// A random permutation of `0..n` (I32, `torch.randperm`): uniform
    /// 32-bit keys sorted stably on the device; the same permutation as the CPU's.
    pub fn randperm(device: &GpuDevice, n: usize, seed: u64) -> Result<GpuTensor> {
        checks::randperm_len(n)?;
        let keys = Self::random_ints(device, "randperm", &[n], 0, 0, seed)?;
        Ok(keys.sort_by("randperm", 0, false, KeyKind::U32)?.1)
    }

    fn random_ints(
        device: &GpuDevice,
        op: &'static str,
        shape: &[usize],
        low: i32,
        range: u32,
        seed: u64,
    ) -> Result<GpuTensor> {
        let n = to_u32(op, "element count", shape::checked_numel(op, shape)?)?;
        let kernels = KernelCache::of(device)?;
        let out = Self::empty_on(&kernels, op, shape, DType::I32)?;
        let [key0, key1] = seed_keys(seed);
        let p = RandintParams {
            numel: n,
            key0,
            key1,
            low: low as u32,
            range,
        };
        kernels.dispatch_1d(&specs::RANDINT, &[], &[&out.buffer], &p, u64::from(n))?;
        Ok(out)
    }

    /// F32 0/1 draws with these probabilities (`torch.bernoulli`): element
    /// `i` is 1 when the uniform draw `i` of `rand` is below `p[i]`, the
    /// same as the CPU's. A probability outside `[0, 1]` (or NaN) raises
    /// the device fault (an error at the next readback) and is clamped.
    pub fn bernoulli(&self, seed: u64) -> Result<GpuTensor> {
        const OP: &str = "bernoulli";
        self.expect_dtype(OP, DType::F32)?;
        let probs = self.contiguous()?;
        let out = self.empty_like_device(OP, self.shape(), DType::F32)?;
        let n = to_u32(OP, "element count", self.numel())?;
        if n == 0 {
            return Ok(out);
        }
        let [key0, key1] = seed_keys(seed);
        let p = BernoulliParams {
            numel: n,
            key0,
            key1,
            offset: to_u32(OP, "offset", probs.layout.offset())?,
        };
        self.kernels().dispatch_1d(
            &specs::BERNOULLI,
            &[],
            &[&probs.buffer, &out.buffer],
            &p,
            u64::from(n),
        )?;
        Ok(out)
    }

    /// `num_samples` I32 category indices per row of 1-d or 2-d weights
    /// (`torch.multinomial`). With replacement: inverse-CDF draws over the
    /// row's cumsum (equal to the CPU's where both CDFs round alike, e.g.
    /// integer weights); without: the smallest exponential-race keys
    /// `-ln(1-u)/w` (Gumbel-top-k). Negative, non-finite or all-zero rows
    /// (and too few non-zero weights without replacement) raise the device
    /// fault: an error at the next readback.
    pub fn multinomial(
        &self,
        num_samples: usize,
        replacement: bool,
        seed: u64,
    ) -> Result<GpuTensor> {
        const OP: &str = "multinomial";
        self.reject_half(OP)?;
        let [rows, cats] =
            checks::multinomial(self.shape(), self.dtype(), num_samples, replacement)?;
        let out_shape: Vec<usize> = if self.rank() == 1 {
            vec![num_samples]
        } else {
            vec![rows, num_samples]
        };
        if rows == 0 || num_samples == 0 {
            return self.empty_like_device(OP, &out_shape, DType::I32);
        }
        let w = self.contiguous()?;
        let u = |what, v| to_u32(OP, what, v);
        u("sample count", rows * num_samples)?;
        u("weight count", rows * cats)?;
        let [key0, key1] = seed_keys(seed);
        let mut p = MultinomialParams {
            rows: u("row count", rows)?,
            cats: u("category count", cats)?,
            num_samples: u("sample count", num_samples)?,
            replacement: u32::from(replacement),
            key0,
            key1,
            offset: u("offset", w.layout.offset())?,
        };
        let kernels = self.kernels();
        kernels.dispatch_groups(
            &specs::MULTINOMIAL_CHECK,
            &[],
            &[&w.buffer],
            &p,
            rows as u64,
        )?;
        if replacement {
            let out = self.empty_like_device(OP, &out_shape, DType::I32)?;
            let cdf = w.cumsum(-1, false)?;
            p.offset = 0;
            kernels.dispatch_1d(
                &specs::MULTINOMIAL_DRAW,
                &[],
                &[&cdf.buffer, &out.buffer],
                &p,
                (rows * num_samples) as u64,
            )?;
            return Ok(out);
        }
        let keys = self.empty_like_device(OP, &[rows, cats], DType::F32)?;
        kernels.dispatch_1d(
            &specs::MULTINOMIAL_KEYS,
            &[],
            &[&w.buffer, &keys.buffer],
            &p,
            (rows * cats) as u64,
        )?;
        let order = keys.sort_by(OP, -1, false, KeyKind::F32)?.1;
        let picked = order.narrow(-1, 0, num_samples)?.contiguous()?;
        let shape: Vec<isize> = out_shape.iter().map(|&d| d as isize).collect();
        picked.reshape(&shape)
    }
}
