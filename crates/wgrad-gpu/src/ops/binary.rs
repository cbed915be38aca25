//! Broadcasting binary arithmetic.

use wgrad_core::{BinaryOp, DType, Result, shape};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::ops::unary::coalesce;
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
        self.kernels().dispatch_1d(
            &families::elementwise::BINARY,
            &[("OP", f64::from(op.code()))],
            &[&self.buffer, &other.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
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
