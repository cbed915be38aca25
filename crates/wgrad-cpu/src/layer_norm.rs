//! `layer_norm` on the CPU: the reference for the fused GPU kernels, with
//! the semantics of `wgrad_core::checks::layer_norm`.
//!
//! Per row: the mean, then the biased variance as the mean of squared
//! deviations (two passes, as the GPU does, so a large mean does not cost
//! the variance its precision), `rstd = 1 / sqrt(var + eps)`. The backward
//! uses the saved mean and rstd:
//! `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))` with `g = dy * weight`
//! and `xhat = (x - mean) * rstd`; `dweight = sum over rows of dy * xhat`,
//! `dbias = sum over rows of dy`, summed in fixed blocks of rows (see
//! [`column_sums`]).

use rayon::prelude::*;
use wgrad_core::checks::layer_norm::{LayerNormGeometry, OP};
use wgrad_core::{DType, Result};

use crate::alloc::{self, During};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype};

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 64;

/// The value a row is shifted by before its sum: its first element when
/// finite (an infinite one would turn every difference into NaN), else 0.
pub(crate) fn shift_of(row: &[f32]) -> f32 {
    row.first()
        .copied()
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

fn mean_rstd(row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f32;
    // Shifted by the first element (kernels/nn/layer_norm.wgsl says why):
    // a constant row's mean is exact and its variance 0.
    let k = shift_of(row);
    let mean = k + row.iter().map(|&v| v - k).sum::<f32>() / n;
    let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// Runs `f(row index, row of a, row of out)` over every row, over threads
/// when there is enough work.
fn each_row<F>(a: &[f32], out: &mut [f32], cols: usize, f: F)
where
    F: Fn(usize, &[f32], &mut [f32]) + Sync,
{
    let run = |task: usize, a: &[f32], out: &mut [f32]| {
        for (i, (ra, ro)) in a.chunks(cols).zip(out.chunks_mut(cols)).enumerate() {
            f(task * ROWS_PER_TASK + i, ra, ro);
        }
    };
    let block = ROWS_PER_TASK * cols;
    if parallel::worth_splitting(a.len() * 4) {
        a.par_chunks(block)
            .zip(out.par_chunks_mut(block))
            .enumerate()
            .for_each(|(t, (a, o))| run(t, a, o));
    } else {
        a.chunks(block)
            .zip(out.chunks_mut(block))
            .enumerate()
            .for_each(|(t, (a, o))| run(t, a, o));
    }
}

/// Column sums over `rows` rows of `cols` values, where `add_row(r, acc)`
/// adds row `r`'s terms into `acc`: running sums within fixed blocks of
/// [`ROWS_PER_TASK`] rows (over threads when large), then the block sums in
/// order, so the result does not depend on the thread count.
fn column_sums(
    rows: usize,
    cols: usize,
    add_row: impl Fn(usize, &mut [f32]) + Sync,
) -> Result<Vec<f32>> {
    let blocks = rows.div_ceil(ROWS_PER_TASK);
    let block_sums = |b: usize| -> Result<Vec<f32>> {
        let mut acc = alloc::try_zeroed::<f32>(OP, cols)?;
        for r in b * ROWS_PER_TASK..((b + 1) * ROWS_PER_TASK).min(rows) {
            add_row(r, &mut acc);
        }
        Ok(acc)
    };
    let partials: Vec<Vec<f32>> = if parallel::worth_splitting(rows * cols * 2) {
        let p = (0..blocks)
            .into_par_iter()
            .map(block_sums)
            .collect::<Result<_>>()?;
        parallel::keep_warm();
        p
    } else {
        (0..blocks).map(block_sums).collect::<Result<_>>()?
    };
    let mut out = alloc::try_zeroed::<f32>(OP, cols)?;
    for p in &partials {
        for (o, &v) in out.iter_mut().zip(p) {
            *o += v;
        }
    }
    Ok(out)
}

impl CpuTensor {
    /// `layer_norm` forward: the output and each row's mean and rstd
    /// (shape `[rows]`).
    pub fn layer_norm_forward(
        &self,
        weight: Option<&CpuTensor>,
        bias: Option<&CpuTensor>,
        g: &LayerNormGeometry,
    ) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
        expect_dtype(OP, self, DType::F32)?;
        let cols = g.cols;
        let x = self.dense::<f32>(OP)?;
        let w = weight.map(|w| w.dense::<f32>(OP)).transpose()?;
        let b = bias.map(|b| b.dense::<f32>(OP)).transpose()?;
        // An empty row's mean and variance are 0 / 0, as in PyTorch (and on the GPU).
        let mut stats = alloc::try_filled(OP, 2 * g.rows, f32::NAN)?;
        let mut y = alloc::try_zeroed::<f32>(OP, x.len())?;
        if cols > 0 {
            let pairs = parallel::map_rows(&x, cols, 4, |row| mean_rstd(row, g.eps)).during(OP)?;
            for (r, (mean, rstd)) in pairs.into_iter().enumerate() {
                stats[r] = mean;
                stats[g.rows + r] = rstd;
            }
            let stats = &stats;
            each_row(&x, &mut y, cols, |r, row, out| {
                let (mean, rstd) = (stats[r], stats[g.rows + r]);
                for (j, (o, &v)) in out.iter_mut().zip(row).enumerate() {
                    let mut h = (v - mean) * rstd;
                    if let Some(w) = &w {
                        h *= w[j];
                    }
                    if let Some(b) = &b {
                        h += b[j];
                    }
                    *o = h;
                }
            });
        }
        let rstd = stats.split_off(g.rows);
        Ok((
            CpuTensor::from_vec(y, self.shape())?,
            CpuTensor::from_vec(stats, &[g.rows])?,
            CpuTensor::from_vec(rstd, &[g.rows])?,
        ))
    }

    /// `layer_norm` backward from the output gradient `dy` (`self`): the
    /// input gradient, and the weight and bias gradients where `needs`
    /// asks for them (`[x, weight, bias]`).
    #[allow(clippy::too_many_arguments)]
    pub fn layer_norm_backward(
        &self,
        x: &CpuTensor,
        weight: Option<&CpuTensor>,
        mean: &CpuTensor,
        rstd: &CpuTensor,
        g: &LayerNormGeometry,
        needs: [bool; 3],
    ) -> Result<(Option<CpuTensor>, Option<CpuTensor>, Option<CpuTensor>)> {
        let cols = g.cols;
        let dy = self.dense::<f32>(OP)?;
        let xs = x.dense::<f32>(OP)?;
        let w = weight.map(|w| w.dense::<f32>(OP)).transpose()?;
        let mean = mean.dense::<f32>(OP)?;
        let rstd = rstd.dense::<f32>(OP)?;
        let shape = x.shape();
        let dx = if needs[0] {
            let mut dx = alloc::try_zeroed::<f32>(OP, xs.len())?;
            if cols > 0 {
                let n = cols as f32;
                let (mean, rstd, dy) = (&mean, &rstd, &dy);
                each_row(&xs, &mut dx, cols, |r, row, out| {
                    let (m, s) = (mean[r], rstd[r]);
                    let dyr = &dy[r * cols..(r + 1) * cols];
                    let gw = |j: usize| w.as_ref().map_or(dyr[j], |w| dyr[j] * w[j]);
                    let (mut sum_g, mut sum_gx) = (0f32, 0f32);
                    for (j, &v) in row.iter().enumerate() {
                        let gj = gw(j);
                        sum_g += gj;
                        sum_gx += gj * (v - m) * s;
                    }
                    let (mean_g, mean_gx) = (sum_g / n, sum_gx / n);
                    for (j, (o, &v)) in out.iter_mut().zip(row).enumerate() {
                        *o = s * (gw(j) - mean_g - (v - m) * s * mean_gx);
                    }
                });
            }
            Some(CpuTensor::from_vec(dx, shape)?)
        } else {
            None
        };
        let param_shape = &shape[shape.len() - g.normalized_rank..];
        let dw = if needs[1] {
            let sums = column_sums(g.rows, cols, |r, acc| {
                let (m, s) = (mean[r], rstd[r]);
                let (dyr, xr) = (&dy[r * cols..][..cols], &xs[r * cols..][..cols]);
                for ((a, &d), &v) in acc.iter_mut().zip(dyr).zip(xr) {
                    *a += d * (v - m) * s;
                }
            })?;
            Some(CpuTensor::from_vec(sums, param_shape)?)
        } else {
            None
        };
        let db = if needs[2] {
            let sums = column_sums(g.rows, cols, |r, acc| {
                for (a, &d) in acc.iter_mut().zip(&dy[r * cols..][..cols]) {
                    *a += d;
                }
            })?;
            Some(CpuTensor::from_vec(sums, param_shape)?)
        } else {
            None
        };
        Ok((dx, dw, db))
    }
}
