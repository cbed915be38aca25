//! Integer arithmetic and type promotion of the binary ops, the I32 sum
//! and product, and the copy-on-write half of in-place writes.
//!
//! `binary`/`binary_scalar` (elementwise.rs) hand any operand that is not
//! F32 here: PyTorch's promotion ([`checks::arith::binary_dtype`]) either
//! keeps two I32 operands I32 (wrapping arithmetic, `BinaryOp::apply_i32`)
//! or casts to F32 and runs the f32 path.

use std::sync::Arc;

use ndarray::Zip;
use wgrad_core::checks::arith::{self, binary_dtype, scalar_dtype};
use wgrad_core::shape::{broadcast_shapes, normalize_axes, reduced_shape};
use wgrad_core::{BinaryOp, DType, Error, Result};

use crate::alloc::During;
use crate::parallel;
use crate::tensor::{CpuData, CpuTensor};

impl CpuTensor {
    /// `op(self, other)` for operands that are not both F32: promoted as
    /// PyTorch does, I32 kept for the integer-closed ops.
    pub(crate) fn binary_promoted(&self, other: &CpuTensor, op: BinaryOp) -> Result<Self> {
        let name = op.name();
        match binary_dtype(op, self.dtype(), other.dtype())? {
            DType::I32 => {
                let shape = broadcast_shapes(name, self.shape(), other.shape())?;
                let (a, b) = (self.expand(&shape)?, other.expand(&shape)?);
                let (av, bv) = (a.as_i32()?, b.as_i32()?);
                if op.divides() && bv.iter().any(|&d| d == 0) && !shape.contains(&0) {
                    return Err(arith::zero_division(name));
                }
                CpuTensor::build(name, &shape, |mut out| {
                    Zip::from(&mut out)
                        .and(&av)
                        .and(&bv)
                        .for_each(|o, &x, &y| *o = op.apply_i32(x, y))
                })
            }
            _ => self.cast(DType::F32)?.binary(&other.cast(DType::F32)?, op),
        }
    }

    /// `op(self, scalar)` (or `op(scalar, self)`) for a tensor that is not
    /// F32: an I32 tensor with a whole-number scalar stays I32 for the
    /// integer-closed ops; anything else is computed in F32.
    pub(crate) fn binary_scalar_promoted(
        &self,
        op: BinaryOp,
        scalar: f32,
        scalar_on_left: bool,
    ) -> Result<Self> {
        let name = op.name();
        let Some(s) = scalar_dtype(op, self.dtype(), scalar, scalar_on_left)? else {
            return self
                .cast(DType::F32)?
                .binary_scalar(op, scalar, scalar_on_left);
        };
        let x = self.dense::<i32>(name)?;
        let zero_divisor = if scalar_on_left {
            x.contains(&0)
        } else {
            s == 0 && !x.is_empty()
        };
        if op.divides() && zero_divisor {
            return Err(arith::zero_division(name));
        }
        let data = if scalar_on_left {
            parallel::map(&x, 2, |v| op.apply_i32(s, v))
        } else {
            parallel::map(&x, 2, |v| op.apply_i32(v, s))
        };
        CpuTensor::from_vec(data.during(name)?, self.shape())
    }

    /// Sum of an I32 tensor over `axes` (`&[]` = all), wrapping on overflow
    /// (PyTorch returns int64; wgrad keeps I32). The sum of nothing is 0.
    pub fn sum_i32(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.fold_i32("sum", axes, keepdim, 0, i32::wrapping_add)
    }

    /// Product of an I32 tensor over `axes` (`&[]` = all), wrapping on
    /// overflow (PyTorch returns int64; wgrad keeps I32). The product of
    /// nothing is 1.
    pub fn prod_i32(&self, axes: &[isize], keepdim: bool) -> Result<Self> {
        self.fold_i32("prod", axes, keepdim, 1, i32::wrapping_mul)
    }

    /// Folds each output's reduced elements of an I32 tensor with `f` from
    /// `init` (wrapping arithmetic: associative and commutative, so the
    /// order does not matter).
    fn fold_i32(
        &self,
        op: &'static str,
        axes: &[isize],
        keepdim: bool,
        init: i32,
        f: fn(i32, i32) -> i32,
    ) -> Result<Self> {
        if self.dtype() != DType::I32 {
            return Err(Error::DTypeMismatch {
                op,
                expected: DType::I32,
                got: self.dtype(),
            });
        }
        let axes = normalize_axes(op, axes, self.rank())?;
        let out_shape = reduced_shape(self.shape(), &axes, keepdim);
        // Kept axes first, reduced axes last: each output is one row.
        let perm = reduction_order(self.rank(), &axes);
        let rows = self.permute(&perm)?;
        let data = rows.dense::<i32>(op)?;
        let inner: usize = axes.iter().map(|&a| self.shape()[a]).product();
        let count: usize = out_shape.iter().product();
        let folds: Vec<i32> = if inner == 0 {
            vec![init; count]
        } else {
            data.chunks(inner)
                .map(|row| row.iter().fold(init, |s, &v| f(s, v)))
                .collect()
        };
        CpuTensor::from_vec(folds, &out_shape)
    }

    /// A copy of this tensor's whole buffer with the elements of this view
    /// replaced by `values` (same shape; cast to this dtype), seen through
    /// this view's layout: the CPU half of an in-place write. CPU buffers
    /// are immutable and shared, so the write is copy-on-write; the caller
    /// moves every view of the old buffer to the new one
    /// ([`rebase`](Self::rebase)).
    pub fn write_view(&self, values: &CpuTensor) -> Result<Self> {
        const OP: &str = "copy_";
        arith::writable_layout(OP, &self.layout)?;
        arith::inplace_shape(OP, self.shape(), values.shape())?;
        let values = values.cast(self.dtype())?;
        let offsets = self.layout.offsets();
        let data = match (&self.data, self.dtype()) {
            (CpuData::F32(buf), _) => CpuData::F32(Arc::new(scatter(buf, &offsets, &values)?)),
            (CpuData::I32(buf), _) => CpuData::I32(Arc::new(scatter(buf, &offsets, &values)?)),
            (CpuData::U32(buf), _) => CpuData::U32(Arc::new(scatter(buf, &offsets, &values)?)),
            (CpuData::F16(buf), _) => CpuData::F16(Arc::new(scatter(buf, &offsets, &values)?)),
            (CpuData::BF16(buf), _) => CpuData::BF16(Arc::new(scatter(buf, &offsets, &values)?)),
        };
        data.adopt();
        Ok(CpuTensor {
            data,
            layout: self.layout.clone(),
        })
    }

    /// This view's layout over `other`'s buffer, when `other` holds a
    /// rewritten copy of this view's buffer (same dtype and length): how a
    /// view follows an in-place write made through another view.
    pub fn rebase(&self, other: &CpuTensor) -> Option<Self> {
        (self.dtype() == other.dtype() && self.data.len() == other.data.len()).then(|| CpuTensor {
            data: other.data.clone(),
            layout: self.layout.clone(),
        })
    }

    /// A weak handle on this tensor's buffer: tells later whether a tensor
    /// still reads the buffer an in-place write replaced (it keeps the
    /// allocation's identity, not its data, alive).
    pub fn buffer_ref(&self) -> BufferRef {
        BufferRef(match &self.data {
            CpuData::F32(v) => WeakData::F32(Arc::downgrade(v)),
            CpuData::U32(v) => WeakData::U32(Arc::downgrade(v)),
            CpuData::I32(v) => WeakData::I32(Arc::downgrade(v)),
            CpuData::F16(v) => WeakData::F16(Arc::downgrade(v)),
            CpuData::BF16(v) => WeakData::BF16(Arc::downgrade(v)),
        })
    }
}

/// See [`CpuTensor::buffer_ref`].
#[derive(Clone, Debug)]
pub struct BufferRef(WeakData);

#[derive(Clone, Debug)]
enum WeakData {
    F32(std::sync::Weak<Vec<f32>>),
    U32(std::sync::Weak<Vec<u32>>),
    I32(std::sync::Weak<Vec<i32>>),
    F16(std::sync::Weak<Vec<half::f16>>),
    BF16(std::sync::Weak<Vec<half::bf16>>),
}

impl BufferRef {
    /// Whether `t` reads this buffer.
    pub fn is_buffer_of(&self, t: &CpuTensor) -> bool {
        match (&self.0, &t.data) {
            (WeakData::F32(w), CpuData::F32(a)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)),
            (WeakData::U32(w), CpuData::U32(a)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)),
            (WeakData::I32(w), CpuData::I32(a)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)),
            (WeakData::F16(w), CpuData::F16(a)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)),
            (WeakData::BF16(w), CpuData::BF16(a)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(a)),
            _ => false,
        }
    }
    /// Whether any tensor still holds the buffer.
    pub fn is_alive(&self) -> bool {
        match &self.0 {
            WeakData::F32(w) => w.strong_count() > 0,
            WeakData::U32(w) => w.strong_count() > 0,
            WeakData::I32(w) => w.strong_count() > 0,
            WeakData::F16(w) => w.strong_count() > 0,
            WeakData::BF16(w) => w.strong_count() > 0,
        }
    }
}

/// `buf` with `values` (row-major) written at `offsets`.
fn scatter<T: wgrad_core::Element + bytemuck::Zeroable>(
    buf: &[T],
    offsets: &[usize],
    values: &CpuTensor,
) -> Result<Vec<T>> {
    let mut out = crate::alloc::try_copy("copy_", buf)?;
    let vals = values.dense::<T>("copy_")?;
    for (&at, &v) in offsets.iter().zip(vals.iter()) {
        let slot = out
            .get_mut(at)
            .ok_or_else(|| Error::invalid("copy_", format!("offset {at} outside the buffer")))?;
        *slot = v;
    }
    Ok(out)
}

/// The axis order that puts the kept axes first (in order) and `axes` last.
pub(crate) fn reduction_order(rank: usize, axes: &[usize]) -> Vec<isize> {
    (0..rank)
        .filter(|d| !axes.contains(d))
        .chain(axes.iter().copied())
        .map(|d| d as isize)
        .collect()
}
