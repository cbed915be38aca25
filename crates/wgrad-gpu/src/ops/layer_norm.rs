//! `layer_norm`: one fused kernel forward (each row's statistics, the
//! normalised and affine output), one for the input gradient, and a
//! partial-sum kernel plus a sum over row blocks for the weight and bias
//! gradients (`kernels/nn/layer_norm*.wgsl`). Semantics and checks:
//! `wgrad_core::checks::layer_norm`; the CPU reference is wgrad-cpu's.

use wgrad_core::checks::layer_norm::{LayerNormGeometry, OP};
use wgrad_core::{DType, Result};
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::{self, LayerNormParams};

const WG: usize = 256;
/// Rows each parameter-gradient workgroup sums: 64 gives T2's 8192 rows
/// 128 blocks, enough workgroups without a long second sum.
const ROW_BLOCK: usize = 64;

/// The kernels' immediates for `g`, `flags` (1 weight, 2 bias).
fn immediates(g: &LayerNormGeometry, flags: u32) -> Result<LayerNormParams> {
    Ok(LayerNormParams {
        rows: params::to_u32(OP, "row count", g.rows)?,
        cols: params::to_u32(OP, "row length", g.cols)?,
        eps: g.eps.to_bits(),
        // Threads per row: one element each for short rows, a workgroup
        // from 256 elements on.
        lanes: g.cols.max(1).next_power_of_two().min(WG) as u32,
        flags,
        row_block: ROW_BLOCK as u32,
        col_blocks: params::to_u32(OP, "column blocks", g.cols.div_ceil(WG))?,
        pad: 0,
    })
}

/// Workgroups for one row per `lanes` threads.
fn row_groups(p: &LayerNormParams) -> u64 {
    let per_group = WG as u64 / u64::from(p.lanes);
    u64::from(p.rows).div_ceil(per_group)
}

impl GpuTensor {
    /// `layer_norm` forward: the output and each row's mean and rstd
    /// (`[rows]`), for geometry `g` (checked by the caller).
    pub fn layer_norm_forward(
        &self,
        weight: Option<&GpuTensor>,
        bias: Option<&GpuTensor>,
        g: &LayerNormGeometry,
    ) -> Result<(GpuTensor, GpuTensor, GpuTensor)> {
        self.expect_dtype(OP, DType::F32)?;
        for t in weight.iter().chain(bias.iter()) {
            self.same_device(OP, t)?;
            t.expect_dtype(OP, DType::F32)?;
        }
        let y = self.empty_like_device(OP, self.shape(), DType::F32)?;
        let mean = self.empty_like_device(OP, &[g.rows], DType::F32)?;
        let rstd = self.empty_like_device(OP, &[g.rows], DType::F32)?;
        if g.rows == 0 {
            return Ok((y, mean, rstd));
        }
        if g.cols == 0 {
            // An empty row's mean and variance are 0 / 0, as in PyTorch.
            mean.fill_words(f32::NAN.to_bits())?;
            rstd.fill_words(f32::NAN.to_bits())?;
            return Ok((y, mean, rstd));
        }
        let x = self.contiguous()?;
        let weight = weight.map(GpuTensor::contiguous).transpose()?;
        let bias = bias.map(GpuTensor::contiguous).transpose()?;
        let flags = u32::from(weight.is_some()) | (u32::from(bias.is_some()) << 1);
        let p = immediates(g, flags)?;
        self.kernels().dispatch_groups(
            &families::nn::LAYER_NORM,
            &[],
            &[
                &x.buffer,
                &weight.as_ref().unwrap_or(&x).buffer,
                &bias.as_ref().unwrap_or(&x).buffer,
                &y.buffer,
                &mean.buffer,
                &rstd.buffer,
            ],
            &p,
            row_groups(&p),
        )?;
        Ok((y, mean, rstd))
    }

    /// `layer_norm` backward from the output gradient `self`: the input
    /// gradient and the weight and bias gradients (shaped like the last
    /// `normalized_rank` dims of `x`) where `needs` (`[x, weight, bias]`)
    /// asks for them.
    #[allow(clippy::type_complexity)]
    pub fn layer_norm_backward(
        &self,
        x: &GpuTensor,
        weight: Option<&GpuTensor>,
        mean: &GpuTensor,
        rstd: &GpuTensor,
        g: &LayerNormGeometry,
        needs: [bool; 3],
    ) -> Result<(Option<GpuTensor>, Option<GpuTensor>, Option<GpuTensor>)> {
        self.expect_dtype(OP, DType::F32)?;
        self.same_device(OP, x)?;
        for t in [x, mean, rstd].into_iter().chain(weight) {
            t.expect_dtype(OP, DType::F32)?;
        }
        let shape = x.shape();
        let param_shape = &shape[shape.len() - g.normalized_rank..];
        let dy = self.contiguous()?;
        let x = x.contiguous()?;
        let numel = g.rows * g.cols;
        let dx = if needs[0] {
            let dx = self.empty_like_device(OP, shape, DType::F32)?;
            if numel > 0 {
                let weight = weight.map(GpuTensor::contiguous).transpose()?;
                let p = immediates(g, u32::from(weight.is_some()))?;
                self.kernels().dispatch_groups(
                    &families::nn::LAYER_NORM_BACKWARD,
                    &[],
                    &[
                        &x.buffer,
                        &weight.as_ref().unwrap_or(&x).buffer,
                        &mean.buffer,
                        &rstd.buffer,
                        &dy.buffer,
                        &dx.buffer,
                    ],
                    &p,
                    row_groups(&p),
                )?;
            }
            Some(dx)
        } else {
            None
        };
        if !needs[1] && !needs[2] {
            return Ok((dx, None, None));
        }
        if numel == 0 {
            // Sums over no rows.
            let zeros = || GpuTensor::full(self.device(), param_shape, 0.0, DType::F32);
            return Ok((
                dx,
                needs[1].then(zeros).transpose()?,
                needs[2].then(zeros).transpose()?,
            ));
        }
        let p = immediates(g, 0)?;
        let row_blocks = g.rows.div_ceil(ROW_BLOCK);
        let dw = self.empty_like_device(OP, &[row_blocks, g.cols], DType::F32)?;
        let db = self.empty_like_device(OP, &[row_blocks, g.cols], DType::F32)?;
        self.kernels().dispatch_groups(
            &families::nn::LAYER_NORM_PARAM_GRADS,
            &[],
            &[
                &x.buffer,
                &mean.buffer,
                &rstd.buffer,
                &dy.buffer,
                &dw.buffer,
                &db.buffer,
            ],
            &p,
            (row_blocks * g.cols.div_ceil(WG)) as u64,
        )?;
        let finish = |partial: GpuTensor| -> Result<GpuTensor> {
            let summed = if row_blocks == 1 {
                partial
            } else {
                partial.sum(&[0], false)?
            };
            let dims: Vec<isize> = param_shape.iter().map(|&d| d as isize).collect();
            summed.reshape(&dims)
        };
        let dw = needs[1].then(|| finish(dw)).transpose()?;
        let db = needs[2].then(|| finish(db)).transpose()?;
        Ok((dx, dw, db))
    }
}
