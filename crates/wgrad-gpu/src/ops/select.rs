//! `where_cond`: elementwise selection between two tensors by a mask
//! (`kernels/elementwise/where.wgsl`).

use wgrad_core::{DType, Result, shape};
use wgrad_kernels::families;

use super::unary::coalesce;
use crate::GpuTensor;
use crate::params::WhereParams;

impl GpuTensor {
    /// `mask != 0 ? a : b` elementwise; `mask` U32, `a`/`b` F32, all three
    /// broadcast together (strided views are read in place).
    pub fn where_cond(mask: &GpuTensor, a: &GpuTensor, b: &GpuTensor) -> Result<GpuTensor> {
        const OP: &str = "where_cond";
        mask.same_device(OP, a)?;
        mask.same_device(OP, b)?;
        mask.expect_dtype(OP, DType::U32)?;
        a.expect_dtype(OP, DType::F32)?;
        b.expect_dtype(OP, DType::F32)?;
        let out_shape = shape::broadcast_shapes(OP, mask.shape(), a.shape())?;
        let out_shape = shape::broadcast_shapes(OP, &out_shape, b.shape())?;
        let m_view = mask.layout.expand(&out_shape)?;
        let a_view = a.layout.expand(&out_shape)?;
        let b_view = b.layout.expand(&out_shape)?;
        let out = mask.empty_like_device(OP, &out_shape, DType::F32)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        let (merged, views) = coalesce(OP, &out_shape, &[&m_view, &a_view, &b_view])?;
        let p = WhereParams::new(OP, &merged, [&views[0], &views[1], &views[2]])?;
        mask.kernels().dispatch_1d(
            &families::elementwise::WHERE_COND,
            &[],
            &[&mask.buffer, &a.buffer, &b.buffer, &out.buffer],
            &p,
            (out.numel() as u64).div_ceil(families::elementwise::ELEMENTS_PER_THREAD),
        )?;
        Ok(out)
    }
}
