//! 2-D convolution primitives (NCHW f32, OIHW weight), with the semantics of
//! `wgrad_core::checks::conv`: the forward [`CpuTensor::conv2d`], its
//! adjoint in the input [`CpuTensor::conv2d_input_grad`] (also
//! `conv_transpose2d`) and its weight gradient
//! [`CpuTensor::conv2d_weight_grad`].
//!
//! All three are GEMMs over an im2col matrix built a band of output rows at
//! a time (so the column buffer stays around 1 MiB and in cache):
//! - forward: `out[n, g] (og x P) = W_g (og x K) @ col (K x P)`;
//! - input gradient: `col = W_g^T @ grad_out[n, g]`, then col2im
//!   scatter-adds the columns back into the input planes;
//! - weight gradient: `dW_g += grad_out[n, g] @ col^T`, over every band of
//!   every image.
//!
//! A 1x1 convolution with stride 1 and no padding reads its input planes
//! as the column matrix directly. Work is split over images, groups and
//! bands (or channel blocks) in pieces chosen from the shapes alone; each
//! output element is summed by one GEMM (or, for the weight gradient, by
//! fixed partial sums added in a fixed order), so results do not depend on
//! the thread count.

mod cols;
mod grad;

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, Axis, s};
use rayon::prelude::*;
use wgrad_core::checks::conv::{Conv2dArgs, Conv2dGeometry};
use wgrad_core::{DType, Error, Result, checks};

use crate::alloc::{self, AllocError, During, checked_len, try_vec, try_zeroed, zeroed};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype, internal};

const OP: &str = "conv2d";

/// Column-buffer size a band of output rows aims for (floats: 1 MiB).
const COL_BUDGET: usize = 1 << 18;

/// Every size of one convolution as plain numbers, checked so that the
/// index arithmetic of the loops cannot overflow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    n: usize,
    c: usize,
    o: usize,
    groups: usize,
    cg: usize,
    og: usize,
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    pt: isize,
    pl: isize,
    /// Rows of the column matrix: `cg * kh * kw`.
    k: usize,
}

impl Plan {
    /// The plan of `geo`, or an error if its numbers are inconsistent
    /// (zero groups, stride or dilation, channels that `groups` does not
    /// divide) or too large to index.
    fn new(op: &'static str, geo: &Conv2dGeometry) -> Result<Self> {
        let a = &geo.args;
        if a.groups == 0 || a.stride.contains(&0) || a.dilation.contains(&0) {
            return Err(Error::invalid(
                op,
                format!("stride, dilation and groups must be positive, got {a:?}"),
            ));
        }
        if !geo.in_channels.is_multiple_of(a.groups) || !geo.out_channels.is_multiple_of(a.groups) {
            return Err(Error::invalid(
                op,
                format!(
                    "groups ({}) must divide the input channels ({}) and the output channels ({})",
                    a.groups, geo.in_channels, geo.out_channels
                ),
            ));
        }
        let too_large = || Error::invalid(op, format!("convolution geometry too large: {geo:?}"));
        // The largest input coordinate any tap computes, before the
        // padding is subtracted, must fit in isize (as must the padding).
        for axis in 0..2 {
            let reach = geo.output_hw[axis]
                .checked_mul(a.stride[axis])
                .and_then(|v| v.checked_add(geo.kernel_hw[axis].checked_mul(a.dilation[axis])?))
                .and_then(|v| v.checked_add(geo.input_hw[axis]));
            let pad = a.padding[axis][0].max(a.padding[axis][1]);
            if reach.is_none_or(|r| r > isize::MAX as usize) || pad > isize::MAX as usize {
                return Err(too_large());
            }
        }
        for shape in [geo.input_shape(), geo.weight_shape(), geo.output_shape()] {
            checked_len(op, &shape)?;
        }
        let cg = geo.in_channels / a.groups;
        let k = checked_len(op, &[cg, geo.kernel_hw[0], geo.kernel_hw[1]])?;
        Ok(Plan {
            n: geo.batch,
            c: geo.in_channels,
            o: geo.out_channels,
            groups: a.groups,
            cg,
            og: geo.out_channels / a.groups,
            h: geo.input_hw[0],
            w: geo.input_hw[1],
            kh: geo.kernel_hw[0],
            kw: geo.kernel_hw[1],
            oh: geo.output_hw[0],
            ow: geo.output_hw[1],
            sh: a.stride[0],
            sw: a.stride[1],
            dh: a.dilation[0],
            dw: a.dilation[1],
            pt: a.padding[0][0] as isize,
            pl: a.padding[1][0] as isize,
            k,
        })
    }

    /// Whether every result is zero (or empty): some size the sums run
    /// over, or some result dimension, is zero.
    fn is_trivial(&self) -> bool {
        [
            self.n, self.c, self.o, self.h, self.w, self.kh, self.kw, self.oh, self.ow,
        ]
        .contains(&0)
    }

    /// Whether the column matrix is the input itself: a 1x1 kernel, stride
    /// 1, no padding, and output planes the size of the input planes.
    fn is_pointwise(&self) -> bool {
        self.kh == 1
            && self.kw == 1
            && self.sh == 1
            && self.sw == 1
            && self.pt == 0
            && self.pl == 0
            && self.oh == self.h
            && self.ow == self.w
    }

    /// Output rows per band for column matrices of `rows_k` rows.
    fn band(&self, rows_k: usize) -> usize {
        (COL_BUDGET / (rows_k * self.ow).max(1)).clamp(1, self.oh.max(1))
    }

    /// Input and output plane sizes.
    fn hw(&self) -> usize {
        self.h * self.w
    }
    fn ohw(&self) -> usize {
        self.oh * self.ow
    }

    /// Multiply-adds of one primitive (the same for all three).
    fn fmas(&self) -> usize {
        self.n
            .saturating_mul(self.o)
            .saturating_mul(self.k)
            .saturating_mul(self.ohw())
    }

    /// The group `g`'s weight as an `og x k` matrix.
    fn weight_matrix<'a>(&self, w: &'a [f32], g: usize) -> Result<ArrayView2<'a, f32>> {
        let len = self.og * self.k;
        ArrayView2::from_shape((self.og, self.k), &w[g * len..][..len]).map_err(internal)
    }
}

/// A fresh contiguous f32 tensor of `shape`, all zeros.
fn zeros(op: &'static str, shape: &[usize]) -> Result<CpuTensor> {
    CpuTensor::from_vec(try_zeroed::<f32>(op, checked_len(op, shape)?)?, shape)
}

/// Runs `f(item, column_buffer)` over `items`, in parallel when `fmas` is
/// worth splitting, each task with its own `col_len`-float buffer.
fn run_items<I, F>(op: &'static str, items: Vec<I>, col_len: usize, fmas: usize, f: F) -> Result<()>
where
    I: Send,
    F: Fn(I, &mut [f32]) -> Result<()> + Sync,
{
    if items.len() < 2 || !parallel::worth_splitting(fmas) {
        let mut col = try_zeroed(op, col_len)?;
        return items.into_iter().try_for_each(|item| f(item, &mut col));
    }
    // Rayon calls `init` once per split of the items, not once per item.
    let result = items.into_par_iter().try_for_each_init(
        || zeroed::<f32>(col_len),
        |col: &mut std::result::Result<Vec<f32>, AllocError>, item| match col {
            Ok(col) => f(item, col),
            Err(e) => Err(e.during(op)),
        },
    );
    parallel::keep_warm();
    result
}

impl CpuTensor {
    /// `torch.nn.functional.conv2d` without bias: `self` `[N, C_in, H, W]`
    /// convolved with `weight` `[C_out, C_in / groups, kH, kW]`, giving
    /// `[N, C_out, H_out, W_out]` (sizes and errors from
    /// `wgrad_core::checks::conv::conv2d`). Both must be F32; views of any
    /// layout are accepted.
    pub fn conv2d(&self, weight: &CpuTensor, args: &Conv2dArgs) -> Result<CpuTensor> {
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, weight, DType::F32)?;
        let geo = checks::conv::conv2d(OP, self.shape(), weight.shape(), args)?;
        let p = Plan::new(OP, &geo)?;
        let shape = geo.output_shape();
        if p.is_trivial() {
            return zeros(OP, &shape);
        }
        let x = self.dense::<f32>(OP)?;
        let w = weight.dense::<f32>(OP)?;
        // Every element is written by a GEMM with beta = 0 (which never
        // reads its output): no zero fill.
        let mut out = alloc::for_overwrite::<f32>(checked_len(OP, &shape)?).during(OP)?;
        let pointwise = p.is_pointwise();
        let rows = if pointwise { p.oh } else { p.band(p.k) };
        let bands = p.oh.div_ceil(rows);
        // One item per image and band of output rows: the band's columns
        // of that image's `[C_out, H_out * W_out]` output.
        let mut items = try_vec(OP, p.n * bands)?;
        for (n, img) in out.chunks_exact_mut(p.o * p.ohw()).enumerate() {
            let mut rest = ArrayViewMut2::from_shape((p.o, p.ohw()), img).map_err(internal)?;
            for y0 in (0..p.oh).step_by(rows) {
                let take = (rows * p.ow).min(rest.ncols());
                let (band, tail) = rest.split_at(Axis(1), take);
                items.push((n, y0, band));
                rest = tail;
            }
        }
        let col_len = if pointwise { 0 } else { p.k * rows * p.ow };
        run_items(OP, items, col_len, p.fmas(), |(n, y0, mut out), col| {
            let y1 = (y0 + rows).min(p.oh);
            let cols = (y1 - y0) * p.ow;
            for g in 0..p.groups {
                let xg = &x[(n * p.c + g * p.cg) * p.hw()..][..p.cg * p.hw()];
                let wg = p.weight_matrix(&w, g)?;
                let mut og = out.slice_mut(s![g * p.og..(g + 1) * p.og, ..]);
                if pointwise {
                    let xm = ArrayView2::from_shape((p.cg, p.hw()), xg).map_err(internal)?;
                    let xm = xm.slice(s![.., y0 * p.ow..y1 * p.ow]);
                    general_mat_mul(1.0, &wg, &xm, 0.0, &mut og);
                } else {
                    let col = &mut col[..p.k * cols];
                    cols::im2col(&p, xg, y0, y1, col);
                    let cm = ArrayView2::from_shape((p.k, cols), &*col).map_err(internal)?;
                    general_mat_mul(1.0, &wg, &cm, 0.0, &mut og);
                }
            }
            Ok(())
        })?;
        CpuTensor::from_vec(out, &shape)
    }
}
