//! Index-driven data movement: `index_select`, `gather` and `one_hot`.
//!
//! Indices are I32 and validated before any element moves, so an
//! out-of-range index is an `IndexOutOfRange` error, never a panic.

use std::sync::Arc;

use bytemuck::Zeroable;
use wgrad_core::shape::check_rank;
use wgrad_core::{DType, Element, Error, Result, checks};

use crate::alloc::{checked_len, try_vec, try_zeroed};
use crate::tensor::{CpuData, CpuTensor, checked_numel, expect_dtype};

impl CpuTensor {
    /// Picks the slices `index[0], index[1], ...` along `axis`
    /// (`torch.index_select`); `index` is 1-D I32 and the result's `axis`
    /// has `index.len()` entries. Works for every dtype.
    pub fn index_select(&self, axis: isize, index: &CpuTensor) -> Result<Self> {
        const OP: &str = "index_select";
        expect_dtype(OP, index, DType::I32)?;
        let (a, out_shape) = checks::indexing::index_select(OP, axis, self.shape(), index.shape())?;
        let picks = checked_indices(OP, &index.dense::<i32>(OP)?, self.shape()[a])?;
        self.gather_by(OP, &out_shape, a, |_, coords| picks[coords[a]])
    }

    /// `torch.gather`: `out[i][j][k] = self[index[i][j][k]][j][k]` for
    /// `axis = 0` (and likewise for other axes). `index` is I32 of the same
    /// rank, no larger than `self` on the other axes; the output has the
    /// index's shape.
    pub fn gather(&self, axis: isize, index: &CpuTensor) -> Result<Self> {
        const OP: &str = "gather";
        expect_dtype(OP, index, DType::I32)?;
        let a = checks::indexing::gather(OP, axis, self.shape(), index.shape())?;
        let picks = checked_indices(OP, &index.dense::<i32>(OP)?, self.shape()[a])?;
        self.gather_by(OP, index.shape(), a, |flat, _| picks[flat])
    }

    /// One-hot encoding of I32 labels in `0..num_classes`: appends a dim of
    /// size `num_classes` holding 1 at the label and 0 elsewhere.
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Self> {
        const OP: &str = "one_hot";
        expect_dtype(OP, self, DType::I32)?;
        let labels = checked_indices(OP, &self.dense::<i32>(OP)?, num_classes)?;
        let shape = checks::indexing::one_hot_shape(self.shape(), num_classes);
        let n = checked_numel(OP, &shape)?;
        let data = match dtype {
            DType::F32 => CpuData::F32(Arc::new(one_hot_data(&labels, num_classes, n, 1.0)?)),
            DType::U32 => CpuData::U32(Arc::new(one_hot_data(&labels, num_classes, n, 1)?)),
            DType::I32 => CpuData::I32(Arc::new(one_hot_data(&labels, num_classes, n, 1)?)),
            DType::F16 => CpuData::F16(Arc::new(one_hot_data(
                &labels,
                num_classes,
                n,
                half::f16::ONE,
            )?)),
            DType::BF16 => CpuData::BF16(Arc::new(one_hot_data(
                &labels,
                num_classes,
                n,
                half::bf16::ONE,
            )?)),
        };
        Self::from_data(OP, data, &shape)
    }

    /// Builds a tensor of `out_shape` whose element at row-major position
    /// `flat` with multi-index `coords` is `self` at the same coords except
    /// on `axis`, where the coordinate is `pick(flat, coords)`.
    fn gather_by(
        &self,
        op: &'static str,
        out_shape: &[usize],
        axis: usize,
        pick: impl Fn(usize, &[usize]) -> usize,
    ) -> Result<Self> {
        check_rank(op, out_shape)?;
        let strides = self.strides();
        let base = self.layout.offset();
        let offset = |flat: usize, coords: &[usize]| {
            coords
                .iter()
                .zip(strides)
                .enumerate()
                .map(|(d, (&c, &s))| if d == axis { pick(flat, coords) } else { c } * s)
                .sum::<usize>()
                + base
        };
        with_dtype!(op, self.dtype(), T => {
            let storage = self.data.slice::<T>(op)?;
            let data = collect_strided(op, storage, out_shape, &offset)?;
            Self::from_vec(data, out_shape)
        })
    }
}

/// Converts I32 indices to `usize`, rejecting any outside `0..size`.
fn checked_indices(op: &'static str, index: &[i32], size: usize) -> Result<Vec<usize>> {
    let mut out = try_vec(op, index.len())?;
    for &i in index {
        match usize::try_from(i) {
            Ok(u) if u < size => out.push(u),
            _ => {
                return Err(Error::IndexOutOfRange {
                    op,
                    index: i64::from(i),
                    size,
                });
            }
        }
    }
    Ok(out)
}

/// Reads `storage[offset(flat, coords)]` for every multi-index of `shape`
/// in row-major order.
fn collect_strided<T: Element>(
    op: &'static str,
    storage: &[T],
    shape: &[usize],
    offset: &impl Fn(usize, &[usize]) -> usize,
) -> Result<Vec<T>> {
    let n = checked_len(op, shape)?;
    let mut out = try_vec(op, n)?;
    let mut coords = vec![0usize; shape.len()];
    for flat in 0..n {
        let at = offset(flat, &coords);
        let value = storage
            .get(at)
            .ok_or_else(|| Error::invalid(op, format!("internal: offset {at} outside storage")))?;
        out.push(*value);
        // Advance the odometer: last axis fastest.
        for d in (0..shape.len()).rev() {
            coords[d] += 1;
            if coords[d] < shape[d] {
                break;
            }
            coords[d] = 0;
        }
    }
    Ok(out)
}

/// Dense `[labels.len(), num_classes]` data with `one` at each label.
fn one_hot_data<T: Element + Zeroable>(
    labels: &[usize],
    num_classes: usize,
    n: usize,
    one: T,
) -> Result<Vec<T>> {
    let mut data = try_zeroed("one_hot", n)?;
    for (row, &label) in labels.iter().enumerate() {
        data[row * num_classes + label] = one;
    }
    Ok(data)
}
