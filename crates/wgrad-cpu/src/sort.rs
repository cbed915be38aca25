//! Stable sorts and prefix sums (and products) along one dim: the reference for
//! `kernels/sort/` and `kernels/scan/`.
//!
//! Both walk the rows of `wgrad_core::checks::sort::Rows` and order by the
//! same (key, position) pairs as the GPU's bitonic network, so the two
//! devices return identical values and indices, ties and NaN included.

use wgrad_core::checks::sort::{KeyKind, Rows, ScanKind, sort_key};
use wgrad_core::{DType, Result};

use crate::alloc::{try_vec, try_zeroed};
use crate::tensor::{CpuTensor, expect_dtype};

impl CpuTensor {
    /// Values sorted along `axis` and their I32 positions in the input
    /// (`torch.sort(stable=True)`): ties keep their order, NaN is the
    /// largest value. F32 or I32.
    pub fn sort(&self, axis: isize, descending: bool) -> Result<(Self, Self)> {
        let kind = KeyKind::of("sort", self.dtype())?;
        self.sort_by("sort", axis, descending, kind)
    }

    /// The I32 indices of [`sort`](Self::sort).
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Self> {
        let kind = KeyKind::of("argsort", self.dtype())?;
        Ok(self.sort_by("argsort", axis, descending, kind)?.1)
    }

    /// Sorts by the keys `kind` makes of the elements' bits.
    pub(crate) fn sort_by(
        &self,
        op: &'static str,
        axis: isize,
        descending: bool,
        kind: KeyKind,
    ) -> Result<(Self, Self)> {
        let rows = Rows::along(op, self.shape(), axis)?;
        let bits = self.bits(op)?;
        let mut values: Vec<u32> = try_zeroed(op, bits.len())?;
        let mut indices: Vec<i32> = try_zeroed(op, bits.len())?;
        let mut pairs: Vec<(u32, u32)> = try_vec(op, rows.n)?;
        for r in 0..rows.rows {
            pairs.clear();
            pairs.extend((0..rows.n).map(|j| {
                let key = sort_key(bits[rows.at(r, j)], kind, descending);
                (key, j as u32)
            }));
            // Every pair is distinct (the position breaks ties): an unstable
            // sort gives the one stable order.
            pairs.sort_unstable();
            for (j, &(_, i)) in pairs.iter().enumerate() {
                values[rows.at(r, j)] = bits[rows.at(r, i as usize)];
                indices[rows.at(r, j)] = i as i32;
            }
        }
        let values = self.with_bits(values)?;
        Ok((values, CpuTensor::from_vec(indices, self.shape())?))
    }

    /// Inclusive prefix sums along `axis` (`torch.cumsum`), from the end of
    /// each row when `reverse` (cumsum's backward). F32 sums accumulate in
    /// f64, as PyTorch's CPU kernel does; I32 sums wrap.
    pub fn cumsum(&self, axis: isize, reverse: bool) -> Result<Self> {
        self.scan(ScanKind::of(self.dtype(), false)?, axis, reverse)
    }

    /// Inclusive prefix products along `axis` (`torch.cumprod`): F32 in f64
    /// (as PyTorch's CPU kernel), I32 wrapping.
    pub fn cumprod(&self, axis: isize) -> Result<Self> {
        self.scan(ScanKind::of(self.dtype(), true)?, axis, false)
    }

    fn scan(&self, kind: ScanKind, axis: isize, reverse: bool) -> Result<Self> {
        let op = kind.op();
        let rows = Rows::along(op, self.shape(), axis)?;
        let at = |r: usize, q: usize| {
            let j = if reverse { rows.n - 1 - q } else { q };
            rows.at(r, j)
        };
        let product = matches!(kind, ScanKind::ProdF32 | ScanKind::ProdI32);
        match self.dtype() {
            DType::I32 => {
                let x = self.dense::<i32>(op)?;
                let mut out: Vec<i32> = try_zeroed(op, x.len())?;
                for r in 0..rows.rows {
                    let mut acc = i32::from(product);
                    for q in 0..rows.n {
                        let v = x[at(r, q)];
                        acc = if product {
                            acc.wrapping_mul(v)
                        } else {
                            acc.wrapping_add(v)
                        };
                        out[at(r, q)] = acc;
                    }
                }
                CpuTensor::from_vec(out, self.shape())
            }
            _ => {
                let x = self.dense::<f32>(op)?;
                let mut out: Vec<f32> = try_zeroed(op, x.len())?;
                for r in 0..rows.rows {
                    let mut acc = f64::from(u8::from(product));
                    for q in 0..rows.n {
                        let v = f64::from(x[at(r, q)]);
                        acc = if product { acc * v } else { acc + v };
                        out[at(r, q)] = acc as f32;
                    }
                }
                CpuTensor::from_vec(out, self.shape())
            }
        }
    }

    /// The input gradient of `x.cumprod(axis)`, `self` being the output
    /// gradient, exact where `x` holds zeros (no division): `grad[k] =
    /// E[k] * S[k]`, `E` the exclusive product of `x`, `S[k] = g[k] +
    /// x[k+1] * S[k+1]`; the GPU kernel runs the same recurrences in f32.
    pub fn cumprod_backward(&self, x: &CpuTensor, axis: isize) -> Result<Self> {
        const OP: &str = "cumprod_backward";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, x, DType::F32)?;
        wgrad_core::checks::same_shape(OP, x.shape(), self.shape())?;
        let rows = Rows::along(OP, self.shape(), axis)?;
        let (xs, g) = (x.dense::<f32>(OP)?, self.dense::<f32>(OP)?);
        let mut out: Vec<f32> = try_zeroed(OP, g.len())?;
        for r in 0..rows.rows {
            let mut s = 0f32;
            for k in (0..rows.n).rev() {
                let next = if k + 1 < rows.n {
                    xs[rows.at(r, k + 1)] * s
                } else {
                    0.0
                };
                s = g[rows.at(r, k)] + next;
                out[rows.at(r, k)] = s;
            }
            let mut e = 1f32;
            for k in 0..rows.n {
                let i = rows.at(r, k);
                out[i] *= e;
                e *= xs[i];
            }
        }
        CpuTensor::from_vec(out, self.shape())
    }

    /// The elements' bit patterns in row-major order (F32 or I32).
    fn bits(&self, op: &'static str) -> Result<Vec<u32>> {
        match self.dtype() {
            DType::I32 => Ok(self.dense::<i32>(op)?.iter().map(|&x| x as u32).collect()),
            DType::U32 => Ok(self.dense::<u32>(op)?.to_vec()),
            DType::F32 => Ok(self.dense::<f32>(op)?.iter().map(|x| x.to_bits()).collect()),
            // The 16-bit floats are sorted in f32 (the autograd layer widens them).
            half @ (DType::F16 | DType::BF16) => Err(crate::tensor::unsupported(op, half)),
        }
    }

    /// A tensor of this one's shape and dtype from bit patterns.
    fn with_bits(&self, bits: Vec<u32>) -> Result<Self> {
        match self.dtype() {
            DType::I32 => CpuTensor::from_vec(
                bits.into_iter().map(|b| b as i32).collect::<Vec<_>>(),
                self.shape(),
            ),
            DType::U32 => CpuTensor::from_vec(bits, self.shape()),
            DType::F32 => CpuTensor::from_vec(
                bits.into_iter().map(f32::from_bits).collect::<Vec<_>>(),
                self.shape(),
            ),
            half @ (DType::F16 | DType::BF16) => Err(crate::tensor::unsupported("sort", half)),
        }
    }
}
