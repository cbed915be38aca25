//! Sorting, scans and random sampling on `Tensor`.
//!
//! `sort` and `topk` values are recorded as a gather of the input by their
//! indices, so the gradient is scattered back through them (the gather's
//! backward rule); `cumsum`'s gradient is the reverse cumsum of the output
//! gradient, `cumprod`'s its own kernel. The samplers make leaves (nothing to differentiate) and take
//! their seed from the default generator (`manual_seed`), or an explicit
//! one in the `*_with` forms; equal seeds draw equal numbers on every device.

use wgrad_core::Result;
use wgrad_core::checks::sort::{Rows, topk};

use crate::Device;
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::{Tensor, next_seed};

/// Sorting, scans and random sampling: `sort`/`argsort` (stable),
/// `topk`, `cumsum`/`cumprod`, and the samplers `randint`, `randperm`,
/// `bernoulli`, `multinomial`, which draw from the default generator
/// ([`manual_seed`](crate::manual_seed)) or, in their `*_with` forms, an
/// explicit seed (the same numbers on every device).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0], &[3], &cpu)?;
/// let (values, indices) = x.sort(0, false)?;
/// assert_eq!(values.to_vec_f32()?, [1.0, 2.0, 3.0]);
/// assert_eq!(indices.to_vec::<i32>()?, [1, 2, 0]);
/// let (top, at) = x.topk(2, 0, true, true)?;
/// assert_eq!((top.to_vec_f32()?, at.to_vec::<i32>()?), (vec![3.0, 2.0], vec![0, 2]));
/// assert_eq!(x.cumsum(0)?.to_vec_f32()?, [3.0, 4.0, 6.0]);
/// let perm = Tensor::randperm_with(5, 7, &cpu)?.to_vec::<i32>()?;
/// let mut sorted = perm.clone();
/// sorted.sort();
/// assert_eq!(sorted, [0, 1, 2, 3, 4]);
/// let dice = Tensor::randint_with(1, 7, &[100], 7, &cpu)?.to_vec::<i32>()?;
/// assert!(dice.iter().all(|d| (1..7).contains(d)));
/// let probs = Tensor::from_vec(vec![0.0f32, 1.0], &[2], &cpu)?;
/// assert_eq!(probs.multinomial_with(3, true, 7)?.to_vec::<i32>()?, [1, 1, 1]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// Values sorted along `dim` and their I32 positions
    /// (`torch.sort(dim, descending, stable=True)`): ties keep their input
    /// order and NaN counts as the largest value, identically on the CPU and
    /// the GPU. F32 or I32; the values are differentiable.
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        let (values, indices) = self.storage().sort(dim, descending)?;
        Ok(self.gathered(values, dim, indices))
    }

    /// The I32 indices that sort along `dim` (`torch.argsort(stable=True)`).
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            self.storage().argsort(dim, descending)?,
        ))
    }

    /// The `k` largest (or smallest) elements along `dim` and their I32
    /// indices (`torch.topk`), always in sorted order (`sorted = false`
    /// allows any order; this one is valid for it). Equal values keep their
    /// input order. `k` above the size of `dim` is an error naming both.
    pub fn topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        let _ = sorted;
        let storage = self.storage();
        let rows = Rows::along("topk", storage.shape(), dim)?;
        topk(k, &rows, storage.shape())?;
        let (values, indices) = storage.sort(dim, largest)?;
        let (values, indices) = if storage.shape().is_empty() {
            (values, indices)
        } else {
            let axis = rows.axis as isize;
            (
                values.narrow(axis, 0, k)?.contiguous()?,
                indices.narrow(axis, 0, k)?.contiguous()?,
            )
        };
        Ok(self.gathered(values, dim, indices))
    }

    /// Values taken from `self` at `indices` along `dim`, recorded as that
    /// gather (its backward scatters the gradient back), and the indices.
    fn gathered(&self, values: Storage, dim: isize, indices: Storage) -> (Tensor, Tensor) {
        let index_tensor = Tensor::from_storage_leaf(indices.clone());
        if values.shape().is_empty() {
            // A 0-d sort is the identity (a gather needs a dim to scatter along).
            return (Tensor::record(values, Op::Reshape, &[self]), index_tensor);
        }
        let values = Tensor::record(
            values,
            Op::Gather {
                axis: dim,
                index: indices,
            },
            &[self],
        );
        (values, index_tensor)
    }

    /// Inclusive prefix sums along `dim` (`torch.cumsum`; F32 or I32, which
    /// keeps I32 and wraps). Differentiable.
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        if crate::autocast::is_autocast_enabled() && self.dtype().is_half() {
            return crate::autocast::full_precision(self)?.cumsum(dim);
        }
        let out = self.storage().cumsum(dim, false)?;
        Ok(Tensor::record(out, Op::Cumsum { axis: dim }, &[self]))
    }

    /// Inclusive prefix products along `dim` (`torch.cumprod`; F32 or I32,
    /// which keeps I32 and wraps). Differentiable; the gradient is exact
    /// where the input holds zeros (computed without division).
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        let out = self.storage().cumprod(dim)?;
        Ok(Tensor::record(out, Op::Cumprod { axis: dim }, &[self]))
    }

    /// I32 values uniform in `[low, high)` from the default generator
    /// (`torch.randint`).
    pub fn randint(low: i32, high: i32, shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::randint_with(low, high, shape, next_seed(), device)
    }

    /// [`randint`](Self::randint) with an explicit seed.
    pub fn randint_with(
        low: i32,
        high: i32,
        shape: &[usize],
        seed: u64,
        device: &Device,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::randint(
            shape, low, high, seed, device,
        )?))
    }

    /// A random permutation of `0..n` (I32) from the default generator
    /// (`torch.randperm`).
    pub fn randperm(n: usize, device: &Device) -> Result<Tensor> {
        Tensor::randperm_with(n, next_seed(), device)
    }

    /// [`randperm`](Self::randperm) with an explicit seed.
    pub fn randperm_with(n: usize, seed: u64, device: &Device) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(Storage::randperm(
            n, seed, device,
        )?))
    }

    /// F32 0/1 draws, 1 with the probability in each element of `self`
    /// (`torch.bernoulli`). A probability outside `[0, 1]` or NaN is an
    /// error: at once on the CPU; on the GPU at the next readback (the
    /// device fault), the draw meanwhile clamped (below 0 never, above 1
    /// always, NaN never).
    pub fn bernoulli(&self) -> Result<Tensor> {
        self.bernoulli_with(next_seed())
    }

    /// [`bernoulli`](Self::bernoulli) with an explicit seed.
    pub fn bernoulli_with(&self, seed: u64) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(self.storage().bernoulli(seed)?))
    }

    /// `num_samples` I32 category indices drawn from each row of 1-d or 2-d
    /// non-negative weights (`torch.multinomial`), with or without
    /// replacement. Negative, infinite or NaN weights, an all-zero row, or
    /// fewer non-zero weights than samples without replacement are errors
    /// (on the GPU at the next readback, like the device assert of CUDA).
    pub fn multinomial(&self, num_samples: usize, replacement: bool) -> Result<Tensor> {
        self.multinomial_with(num_samples, replacement, next_seed())
    }

    /// [`multinomial`](Self::multinomial) with an explicit seed.
    pub fn multinomial_with(
        &self,
        num_samples: usize,
        replacement: bool,
        seed: u64,
    ) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(self.storage().multinomial(
            num_samples,
            replacement,
            seed,
        )?))
    }
}
