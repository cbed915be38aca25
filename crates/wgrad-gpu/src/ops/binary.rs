//! Broadcasting binary arithmetic.

use wgrad_core::{BinaryOp, DType, Result, shape};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::ops::cast::code;
use crate::ops::unary::{coalesce, dense_or_strided};
use crate::params::BinaryParams;

impl GpuTensor {
    /// `self (op) other` with PyTorch broadcasting. Other dtypes follow
    /// PyTorch's promotion (I32 with I32 stays I32 for all but `div` and
    /// `pow`; with F32 it computes in F32).
    pub fn binary(&self, other: &GpuTensor, op: BinaryOp) -> Result<GpuTensor> {
        let name = op.name();
        self.same_device(name, other)?;
        if self.dtype() != DType::F32 || other.dtype() != DType::F32 {
            return self.binary_promoted(other, op);
        }
        let out_shape = shape::broadcast_shapes(name, self.shape(), other.shape())?;
        let a = self.layout.expand(&out_shape)?;
        let b = other.layout.expand(&out_shape)?;
        let out = self.empty_like_device(name, &out_shape, DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, &out_shape, &[&a, &b])?;
        let p = BinaryParams::new(name, &shape, &views[0], &views[1])?;
        let (spec, threads) = dense_or_strided(
            &families::elementwise::BINARY_VEC4,
            (
                &families::elementwise::BINARY,
                families::elementwise::ELEMENTS_PER_THREAD,
            ),
            &shape,
            &views,
        );
        self.kernels().dispatch_1d(
            spec,
            &[("OP", f64::from(op.code()))],
            &[&self.buffer, &other.buffer, &out.buffer],
            &p,
            threads,
        )?;
        Ok(out)
    }

    /// `self (op) other` with broadcasting where an operand is F16 or BF16
    /// (the other F32, F16 or BF16), computed in f32 and rounded once to
    /// `out_dtype` (F32, F16 or BF16) in one pass: the numbers of casting to
    /// F32, [`binary`](Self::binary) and casting back, as PyTorch computes
    /// 16-bit arithmetic. The caller picks `out_dtype` by PyTorch's promotion.
    pub fn binary_mixed(
        &self,
        other: &GpuTensor,
        op: BinaryOp,
        out_dtype: DType,
    ) -> Result<GpuTensor> {
        let name = op.name();
        self.same_device(name, other)?;
        for dtype in [self.dtype(), other.dtype(), out_dtype] {
            if !dtype.is_float() {
                return Err(wgrad_core::Error::DTypeMismatch {
                    op: name,
                    expected: DType::F16,
                    got: dtype,
                });
            }
        }
        let out_shape = shape::broadcast_shapes(name, self.shape(), other.shape())?;
        let a = self.layout.expand(&out_shape)?;
        let b = other.layout.expand(&out_shape)?;
        let out = self.empty_like_device(name, &out_shape, out_dtype)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (shape, views) = coalesce(name, &out_shape, &[&a, &b])?;
        let p = BinaryParams::new(name, &shape, &views[0], &views[1])?;
        let n = out.numel() as u64;
        let (spec, threads) = if out_dtype.is_half() {
            let words = n.div_ceil(2);
            (
                &families::elementwise::BINARY_HALF,
                words.div_ceil(families::elementwise::HALF_WORDS_PER_THREAD),
            )
        } else {
            (
                &families::elementwise::BINARY_HALF_TO_F32,
                n.div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
            )
        };
        self.kernels().dispatch_1d(
            spec,
            &[
                ("OP", f64::from(op.code())),
                ("A_KIND", code(self.dtype())),
                ("B_KIND", code(other.dtype())),
                ("OUT_KIND", code(out_dtype)),
            ],
            &[&self.buffer, &other.buffer, &out.buffer],
            &p,
            threads,
        )?;
        Ok(out)
    }

    /// `self + other`, elementwise with broadcasting.
    pub fn add(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Add)
    }
    /// `self - other`, elementwise with broadcasting.
    pub fn sub(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Sub)
    }
    /// `self * other`, elementwise with broadcasting.
    pub fn mul(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Mul)
    }
    /// `self / other`, elementwise with broadcasting.
    pub fn div(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Div)
    }
    /// `self ^ other` (`powf`), elementwise with broadcasting.
    pub fn pow(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Pow)
    }
    /// The larger of the two (NaN propagates), elementwise with broadcasting.
    pub fn maximum(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Maximum)
    }
    /// The smaller of the two (NaN propagates), elementwise with broadcasting.
    pub fn minimum(&self, other: &GpuTensor) -> Result<GpuTensor> {
        self.binary(other, BinaryOp::Minimum)
    }
}
