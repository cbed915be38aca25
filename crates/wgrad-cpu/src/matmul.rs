//! Matrix products with PyTorch `matmul` semantics.
//!
//! Each 2-D product goes through ndarray's `general_mat_mul`
//! (matrixmultiply's blocked, vectorised GEMM), which takes arbitrary
//! strides, so transposed and broadcast operands are never copied.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array3, ArrayView2, ArrayViewD, Axis, Ix2};
use wgrad_core::shape::{broadcast_shapes, check_rank, numel};
use wgrad_core::{DType, Error, Result};

use crate::tensor::{CpuTensor, expect_dtype, internal};

const OP: &str = "matmul";

impl CpuTensor {
    /// `torch.matmul`: 1-D operands are promoted to matrices (`[k]` ->
    /// `[1, k]` on the left, `[k, 1]` on the right) and the added dim is
    /// removed from the result; leading (batch) dims broadcast.
    pub fn matmul(&self, other: &CpuTensor) -> Result<Self> {
        self.matmul_named(other, OP)
    }

    /// `matmul` of `a` and `b` after swapping the last two dims of `a` (if
    /// `trans_a`) and/or `b` (if `trans_b`); the swap is a free view.
    /// Transposed operands need at least 2 dims.
    pub fn matmul_t(&self, other: &CpuTensor, trans_a: bool, trans_b: bool) -> Result<Self> {
        const OP_T: &str = "matmul_t";
        let swap = |t: &CpuTensor, on: bool| -> Result<CpuTensor> {
            if !on {
                return Ok(t.clone());
            }
            if t.rank() < 2 {
                return Err(Error::invalid(
                    OP_T,
                    format!(
                        "cannot transpose an operand of shape {:?}: it needs at least 2 dims",
                        t.shape()
                    ),
                ));
            }
            t.transpose(-1, -2)
        };
        swap(self, trans_a)?.matmul_named(&swap(other, trans_b)?, OP_T)
    }

    fn matmul_named(&self, other: &CpuTensor, op: &'static str) -> Result<Self> {
        expect_dtype(op, self, DType::F32)?;
        expect_dtype(op, other, DType::F32)?;
        let mismatch = || Error::ShapeMismatch {
            op,
            lhs: self.shape().to_vec(),
            rhs: other.shape().to_vec(),
        };
        if self.rank() == 0 || other.rank() == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "both operands need at least 1 dim, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let a = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if other.rank() == 1 {
            other.unsqueeze(-1)?
        } else {
            other.clone()
        };
        let (ra, rb) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        if k != k2 {
            return Err(mismatch());
        }
        let batch = broadcast_shapes(op, &a.shape()[..ra - 2], &b.shape()[..rb - 2])
            .map_err(|_| mismatch())?;
        let mut out_shape = batch.clone();
        if self.rank() > 1 {
            out_shape.push(m);
        }
        if other.rank() > 1 {
            out_shape.push(n);
        }
        check_rank(op, &out_shape)?;

        let with = |mut dims: Vec<usize>, r: usize, c: usize| {
            dims.extend([r, c]);
            dims
        };
        let a = a.expand(&with(batch.clone(), m, k))?;
        let b = b.expand(&with(batch.clone(), k, n))?;
        let count = numel(&batch);
        let mut out = Array3::<f32>::zeros((count, m, n));
        // With k == 0 the product is all zeros, which `out` already holds.
        if k > 0 && m > 0 && n > 0 {
            let (av, bv) = (a.as_f32()?, b.as_f32()?);
            for (i, mut c) in out.outer_iter_mut().enumerate() {
                let coords = unravel(i, &batch);
                let a2 = matrix(&av, &coords)?;
                let b2 = matrix(&bv, &coords)?;
                general_mat_mul(1.0, &a2, &b2, 0.0, &mut c);
            }
        }
        let (data, _) = out.into_raw_vec_and_offset();
        CpuTensor::from_vec(data, &out_shape)
    }
}

/// Row-major multi-index of flat position `i` within `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut coords = vec![0; shape.len()];
    for (c, &d) in coords.iter_mut().zip(shape).rev() {
        *c = i % d;
        i /= d;
    }
    coords
}

/// The 2-D matrix at batch position `coords` of a `batch + [r, c]` view.
fn matrix<'a>(view: &ArrayViewD<'a, f32>, coords: &[usize]) -> Result<ArrayView2<'a, f32>> {
    let mut v = view.clone();
    for &c in coords {
        v = v.index_axis_move(Axis(0), c);
    }
    v.into_dimensionality::<Ix2>().map_err(internal)
}
