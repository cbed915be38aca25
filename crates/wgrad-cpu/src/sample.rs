//! Random sampling: `randint`, `randperm`, `bernoulli`, `multinomial`,
//! drawing from `wgrad_core::random` with the same counters as the GPU
//! kernels (`kernels/random/`), so both devices draw the same numbers.
//! Bad values are a direct error here (the GPU reports them at its next
//! readback).

use wgrad_core::checks::sort::{self as checks, KeyKind, bad_probability};
use wgrad_core::random::{bits_to_unit, random_bits, seed_keys, uniform_int};
use wgrad_core::{DType, Error, Result};

use crate::alloc::try_vec;
use crate::tensor::{CpuTensor, checked_numel, expect_dtype};

impl CpuTensor {
    /// I32 values uniform in `[low, high)` (`torch.randint`); element `i`
    /// is `wgrad_core::random::uniform_int`.
    pub fn randint(shape: &[usize], low: i32, high: i32, seed: u64) -> Result<Self> {
        let range = checks::randint_range(low, high)?;
        Self::random_ints("randint", shape, low, range, seed)
    }

    /// A random permutation of `0..n` (I32, `torch.randperm`): uniform
    /// 32-bit keys sorted stably, as on the GPU.
    pub fn randperm(n: usize, seed: u64) -> Result<Self> {
        checks::randperm_len(n)?;
        let keys = Self::random_ints("randperm", &[n], 0, 0, seed)?;
        Ok(keys.sort_by("randperm", 0, false, KeyKind::U32)?.1)
    }

    fn random_ints(
        op: &'static str,
        shape: &[usize],
        low: i32,
        range: u32,
        seed: u64,
    ) -> Result<Self> {
        let n = checked_numel(op, shape)?;
        let n = u32::try_from(n).map_err(|_| {
            Error::invalid(op, format!("shape {shape:?} has more than 2^32 elements"))
        })?;
        let keys = seed_keys(seed);
        let mut out: Vec<i32> = try_vec(op, n as usize)?;
        out.extend((0..n).map(|i| uniform_int(keys, i, low, range)));
        CpuTensor::from_vec(out, shape)
    }

    /// F32 0/1 draws with these probabilities (`torch.bernoulli`): element
    /// `i` is 1 when the uniform draw `i` of `rand` is below `p[i]`. A
    /// probability outside `[0, 1]` or NaN is an error.
    pub fn bernoulli(&self, seed: u64) -> Result<Self> {
        const OP: &str = "bernoulli";
        expect_dtype(OP, self, DType::F32)?;
        let probs = self.dense::<f32>(OP)?;
        if let Some(i) = probs.iter().position(|p| !(0.0..=1.0).contains(p)) {
            return Err(bad_probability(i));
        }
        let keys = seed_keys(seed);
        let mut out: Vec<f32> = try_vec(OP, probs.len())?;
        out.extend(probs.iter().enumerate().map(|(i, &p)| {
            let u = bits_to_unit(random_bits(keys, 0, i as u32));
            if u < p { 1.0 } else { 0.0 }
        }));
        CpuTensor::from_vec(out, self.shape())
    }

    /// `num_samples` I32 category indices per row of 1-d or 2-d weights
    /// (`torch.multinomial`), as the GPU draws them: with replacement by
    /// inverse CDF (an f32 running sum), without by the smallest
    /// exponential-race keys `-ln(1-u)/w`. Negative, non-finite or all-zero
    /// rows (or too few non-zero weights without replacement) are errors.
    pub fn multinomial(&self, num_samples: usize, replacement: bool, seed: u64) -> Result<Self> {
        const OP: &str = "multinomial";
        let [rows, cats] =
            checks::multinomial(self.shape(), self.dtype(), num_samples, replacement)?;
        let out_shape: Vec<usize> = if self.rank() == 1 {
            vec![num_samples]
        } else {
            vec![rows, num_samples]
        };
        let w = self.dense::<f32>(OP)?;
        checks::check_weights(&w, cats, num_samples, replacement)?;
        let keys = seed_keys(seed);
        let mut out: Vec<i32> = try_vec(OP, rows * num_samples)?;
        if replacement {
            let mut cdf: Vec<f32> = try_vec(OP, cats)?;
            for (r, row) in w.chunks(cats).enumerate() {
                cdf.clear();
                let mut acc = 0f32;
                cdf.extend(row.iter().map(|&x| {
                    acc += x;
                    acc
                }));
                let total = cdf[cats - 1];
                for s in 0..num_samples {
                    let g = (r * num_samples + s) as u32;
                    let x = bits_to_unit(random_bits(keys, 0, g)) * total;
                    let mut j = cdf.partition_point(|&c| c <= x);
                    if j >= cats {
                        j = cdf.partition_point(|&c| c < total).min(cats - 1);
                    }
                    out.push(j as i32);
                }
            }
            return CpuTensor::from_vec(out, &out_shape);
        }
        let mut race: Vec<f32> = try_vec(OP, rows * cats)?;
        race.extend(w.iter().enumerate().map(|(g, &x)| {
            let u = bits_to_unit(random_bits(keys, 0, g as u32));
            let e = -(1.0 - u).ln();
            if x > 0.0 { e / x } else { f32::INFINITY }
        }));
        let race = CpuTensor::from_vec(race, &[rows, cats])?;
        let order = race.sort_by(OP, -1, false, KeyKind::F32)?.1;
        let order = order.dense::<i32>(OP)?;
        for row in order.chunks(cats) {
            out.extend_from_slice(&row[..num_samples]);
        }
        CpuTensor::from_vec(out, &out_shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randperm_is_a_permutation() {
        let p = CpuTensor::randperm(1000, 3)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn dtype_of_results() {
        let r = CpuTensor::randint(&[3], -2, 2, 1).unwrap();
        assert_eq!(r.dtype(), DType::I32);
        assert!(
            r.to_vec::<i32>()
                .unwrap()
                .iter()
                .all(|v| (-2..2).contains(v))
        );
    }
}
