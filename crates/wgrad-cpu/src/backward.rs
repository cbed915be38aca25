//! Building blocks of reverse-mode autograd beyond the forward ops: the
//! fused backward of unary math and of (log-)softmax, and the accumulating
//! scatters `index_add` / `scatter_add` that are the backward of
//! `index_select` / `gather`.
//!
//! These are the reference semantics of the GPU kernels in
//! `kernels/backward/`; accumulation here runs in row-major order of `src`.

use ndarray::{ArrayViewMutD, Axis, IxDyn, Zip};
use wgrad_core::math::exp;
use wgrad_core::shape::normalize_axis;
use wgrad_core::{DType, Error, Result, UnaryOp, checks};

use crate::alloc::During;
use crate::elementwise::unary_cost;
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype, internal};

impl CpuTensor {
    /// `op.chain(self, x)` elementwise (`self * op.derivative(x)`, exact 0
    /// where PyTorch selects the gradient away): the gradient of
    /// `x.unary(op)` given the upstream gradient `self`. Both F32 and of
    /// the same shape.
    pub fn unary_backward(&self, x: &CpuTensor, op: UnaryOp) -> Result<Self> {
        const OP: &str = "unary_backward";
        let g = self.f32_input(OP)?;
        let xv = x.f32_input(OP)?;
        checks::same_shape(OP, self.shape(), x.shape())?;
        if let (Some(gs), Some(xs)) = (
            self.contiguous_slice::<f32>()?,
            x.contiguous_slice::<f32>()?,
        ) {
            let data = match op {
                // Written out (the same formula as `UnaryOp::derivative`)
                // so that ReLU's and GELU's backward, the hot ones, vectorise.
                UnaryOp::Relu => {
                    parallel::zip_map(gs, xs, 1, |g, x| if x <= 0.0 { 0.0 } else { g })
                }
                UnaryOp::Gelu => parallel::zip_map(gs, xs, unary_cost(op), |g, x| {
                    g * wgrad_core::math::gelu_derivative(x)
                }),
                op => parallel::zip_map(gs, xs, unary_cost(op), |g, x| op.chain(g, x)),
            };
            return CpuTensor::from_vec(data.during(OP)?, self.shape());
        }
        CpuTensor::build(OP, self.shape(), |mut out| {
            Zip::from(&mut out)
                .and(&g)
                .and(&xv)
                .for_each(|o, &g, &x| *o = op.chain(g, x))
        })
    }

    /// Gradient of `softmax(axis)` (`log = false`) or `log_softmax(axis)`
    /// (`log = true`) given the upstream gradient `self` and that op's
    /// output `y` (same shape, F32):
    /// softmax: `y * (g - sum(g * y, axis))`;
    /// log_softmax: `g - exp(y) * sum(g, axis)`.
    pub fn softmax_backward(&self, y: &CpuTensor, axis: isize, log: bool) -> Result<Self> {
        const OP: &str = "softmax_backward";
        let g = self.f32_input(OP)?;
        let yv = y.f32_input(OP)?;
        checks::same_shape(OP, self.shape(), y.shape())?;
        let a = Axis(normalize_axis(OP, axis, self.rank())?);
        CpuTensor::build(OP, self.shape(), |mut out| {
            Zip::from(out.lanes_mut(a))
                .and(g.lanes(a))
                .and(yv.lanes(a))
                .for_each(|mut o, g, y| {
                    if log {
                        let total: f32 = g.iter().sum();
                        Zip::from(&mut o)
                            .and(&g)
                            .and(&y)
                            .for_each(|o, &g, &y| *o = g - exp(y) * total);
                    } else {
                        let dot: f32 = g.iter().zip(&y).map(|(&g, &y)| g * y).sum();
                        Zip::from(&mut o)
                            .and(&g)
                            .and(&y)
                            .for_each(|o, &g, &y| *o = y * (g - dot));
                    }
                })
        })
    }

    /// `torch.Tensor.index_add`: a copy of `self` (the base) where, for
    /// every `i`, the slice `src.select(axis, i)` is added to the slice
    /// `index[i]` along `axis`; repeated indices accumulate. `index` is a
    /// 1-D I32 tensor with one entry per slice of `src` along `axis`; `src`
    /// has the base's shape except on `axis`. F32 base and src. This is the
    /// backward of `index_select` (and of an embedding lookup).
    pub fn index_add(&self, axis: isize, index: &CpuTensor, src: &CpuTensor) -> Result<Self> {
        const OP: &str = "index_add";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, src, DType::F32)?;
        expect_dtype(OP, index, DType::I32)?;
        let a = checks::index_add::index_add(OP, axis, self.shape(), index.shape(), src.shape())?;
        let picks = index.dense::<i32>(OP)?;
        if let Some(out) = self.index_add_rows(a, &picks, src)? {
            return CpuTensor::from_vec(out, self.shape());
        }
        self.accumulate(OP, a, src.shape(), src, |coords| picks[coords[a]])
    }

    /// [`index_add`](Self::index_add) of a dense `src` as whole-row adds
    /// (an embedding's backward: rows of `src` into the picked rows of the
    /// weight gradient), in the row-major order of the general loop, so the
    /// sums are the same bit for bit. `None` when `src` is not dense.
    fn index_add_rows(
        &self,
        axis: usize,
        picks: &[i32],
        src: &CpuTensor,
    ) -> Result<Option<Vec<f32>>> {
        const OP: &str = "index_add";
        let Some(src) = src.contiguous_slice::<f32>()? else {
            return Ok(None);
        };
        let size = self.shape()[axis];
        let len = picks.len();
        let outer: usize = self.shape()[..axis].iter().product();
        let inner: usize = self.shape()[axis + 1..].iter().product();
        let mut out = self.to_vec_for::<f32>(OP)?;
        if src.is_empty() {
            return Ok(Some(out)); // nothing added, so no index is read
        }
        // Every target is checked before anything is added, as the general loop does.
        if let Some(&bad) = picks
            .iter()
            .find(|&&p| usize::try_from(p).map_or(true, |u| u >= size))
        {
            return Err(Error::IndexOutOfRange {
                op: OP,
                index: i64::from(bad),
                size,
            });
        }
        for o in 0..outer {
            for (i, &p) in picks.iter().enumerate() {
                let dst = &mut out[(o * size + p as usize) * inner..][..inner];
                let row = &src[(o * len + i) * inner..][..inner];
                for (d, &x) in dst.iter_mut().zip(row) {
                    *d += x;
                }
            }
        }
        Ok(Some(out))
    }

    /// `torch.Tensor.scatter_add`: a copy of `self` (the base) where, for
    /// every position `p` of `index`, `src[p]` is added at `p` with its
    /// `axis` coordinate replaced by `index[p]`; repeated targets
    /// accumulate. `index` (I32), `src` and the base share one rank; `index`
    /// is no larger than `src` on any axis and no larger than the base on
    /// the others (only the part of `src` that `index` covers is used). F32
    /// base and src. This is the backward of `gather`.
    pub fn scatter_add(&self, axis: isize, index: &CpuTensor, src: &CpuTensor) -> Result<Self> {
        const OP: &str = "scatter_add";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, src, DType::F32)?;
        expect_dtype(OP, index, DType::I32)?;
        let a = checks::index_add::scatter_add(OP, axis, self.shape(), index.shape(), src.shape())?;
        let targets = index.view::<i32>()?;
        self.accumulate(OP, a, index.shape(), src, |coords| targets[coords])
    }

    /// The shared loop of `index_add` and `scatter_add`: for every
    /// multi-index `c` of `shape` (row-major), adds `src[c]` into a copy of
    /// `self` at `c` with the `axis` coordinate replaced by `target(c)`.
    /// Every target is checked before anything is written.
    fn accumulate(
        &self,
        op: &'static str,
        axis: usize,
        shape: &[usize],
        src: &CpuTensor,
        target: impl Fn(&[usize]) -> i32,
    ) -> Result<Self> {
        let size = self.shape()[axis];
        let src = src.as_f32()?;
        let mut data = self.to_vec_for::<f32>(op)?;
        let mut out =
            ArrayViewMutD::from_shape(IxDyn(self.shape()), &mut data).map_err(internal)?;
        let n: usize = shape.iter().product();
        let mut coords = vec![0usize; shape.len()];
        let mut dst = coords.clone();
        // Targets are validated in a first pass so that an error leaves no
        // half-applied update visible (the output is dropped anyway, but
        // this also keeps the second pass free of fallible code).
        for pass in 0..2 {
            coords.iter_mut().for_each(|c| *c = 0);
            for _ in 0..n {
                let t = target(&coords);
                let at = match usize::try_from(t) {
                    Ok(u) if u < size => u,
                    _ => {
                        return Err(Error::IndexOutOfRange {
                            op,
                            index: i64::from(t),
                            size,
                        });
                    }
                };
                if pass == 1 {
                    dst.copy_from_slice(&coords);
                    dst[axis] = at;
                    out[IxDyn(&dst)] += src[IxDyn(&coords)];
                }
                // Advance the odometer: last axis fastest.
                for d in (0..shape.len()).rev() {
                    coords[d] += 1;
                    if coords[d] < shape[d] {
                        break;
                    }
                    coords[d] = 0;
                }
            }
        }
        CpuTensor::from_vec(data, self.shape())
    }
}
