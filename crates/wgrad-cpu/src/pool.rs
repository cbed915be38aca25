//! 2-D pooling over NCHW f32 tensors (`max_pool2d`, `avg_pool2d`,
//! `adaptive_avg_pool2d`) and their gradients, with PyTorch's CPU
//! semantics; the shared checks and window rules are
//! `wgrad_core::checks::pool`.
//!
//! Inputs are read as dense row-major copies (no copy when already
//! contiguous); each `(n, c)` plane is independent, so the loops run per
//! plane and large ops split the planes over threads. Every backward sums,
//! into each input element and in row-major order of the outputs, the
//! outputs whose window holds it: the order PyTorch's scatter adds them in,
//! and the order of the GPU kernels' gathers, so all three agree bit for
//! bit (max pooling scatters here, the others gather).

use rayon::prelude::*;
use wgrad_core::checks::pool::{
    self, Pool2dArgs, Pool2dGeometry, adaptive_covering, adaptive_window, avg_window,
    covering_outputs,
};
use wgrad_core::{DType, Result};

use crate::alloc::{self, During, checked_len, try_vec, try_zeroed};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype};

/// Calls `f(plane, out_plane)` for every `plane_len`-element plane of `out`,
/// over threads when `work` is large. `plane_len` must be nonzero.
fn per_plane<T: Send>(
    out: &mut [T],
    plane_len: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    parallel::for_each_row(out, plane_len, work, f);
}

/// The start and (exclusive) end of dilated window `o` on one axis, the
/// start moved past the padding in steps of the dilation (PyTorch's
/// `while (ih0 < 0) ih0 += dilation`).
fn dilated_range(g: &Pool2dGeometry, axis: usize, o: usize) -> (i64, i64) {
    let a = &g.args;
    let d = a.dilation[axis] as i64;
    let mut start = (o * a.stride[axis]) as i64 - a.padding[axis] as i64;
    let end = (start + (a.kernel[axis] as i64 - 1) * d + 1).min(g.input_hw[axis] as i64);
    if start < 0 {
        start += (-start + d - 1) / d * d;
    }
    (start, end)
}

/// Every output row's and column's dilated input range (see
/// [`dilated_range`]), worked out once per op rather than per window.
struct Windows {
    rows: Vec<(i64, i64)>,
    cols: Vec<(i64, i64)>,
}

impl Windows {
    fn new(op: &'static str, g: &Pool2dGeometry) -> Result<Self> {
        let axis = |a: usize| -> Result<Vec<(i64, i64)>> {
            let mut v = try_vec(op, g.output_hw[a])?;
            v.extend((0..g.output_hw[a]).map(|o| dilated_range(g, a, o)));
            Ok(v)
        };
        Ok(Windows {
            rows: axis(0)?,
            cols: axis(1)?,
        })
    }
}

/// The flat input index `at` when it lies on the window of output
/// `(oh, ow)`, else `None`: an index the forward could not have chosen
/// adds nothing. Compares against each window row instead of dividing.
fn in_window(g: &Pool2dGeometry, win: &Windows, oh: usize, ow: usize, at: i32) -> Option<usize> {
    let w = g.input_hw[1] as i64;
    let [dh, dw] = g.args.dilation;
    let (h0, h1) = win.rows[oh];
    let (w0, w1) = win.cols[ow];
    let at = i64::from(at);
    // Plain loops and a guarded remainder: `step_by` and `%` would each
    // cost a division per output, the bulk of this loop's time.
    let mut ih = h0;
    while ih < h1 {
        let iw = at - ih * w;
        if w0 <= iw && iw < w1 {
            return (dw == 1 || (iw - w0) % dw as i64 == 0).then_some(at as usize);
        }
        ih += dh as i64;
    }
    None
}

/// Whether a max pooling is the plain 2 x 2, stride 2 one with every
/// window inside the input (no padding, no dilation), which
/// [`max_plane_2x2`] runs.
fn plain_2x2(g: &Pool2dGeometry) -> bool {
    let a = &g.args;
    a.kernel == [2, 2]
        && a.stride == [2, 2]
        && a.padding == [0, 0]
        && a.dilation == [1, 1]
        && 2 * g.output_hw[0] <= g.input_hw[0]
        && 2 * g.output_hw[1] <= g.input_hw[1]
}

/// [`max_plane`] for [`plain_2x2`] poolings: the four taps of a window in
/// scan order, each taken when greater or NaN (so the last NaN wins, as in
/// PyTorch's CPU kernel), written as selects over whole output rows so
/// that the compiler vectorises them. The generic loop's data-dependent
/// branches mispredicted on about half the windows.
fn max_plane_2x2(w: usize, ow_n: usize, x: &[f32], vals: &mut [f32], idx: &mut [i32]) {
    for (oh, (v_row, i_row)) in vals.chunks_mut(ow_n).zip(idx.chunks_mut(ow_n)).enumerate() {
        let r0 = 2 * oh * w;
        let top = &x[r0..r0 + 2 * ow_n];
        let bottom = &x[r0 + w..r0 + w + 2 * ow_n];
        for (ow, (v, i)) in v_row.iter_mut().zip(i_row.iter_mut()).enumerate() {
            // The geometry check keeps planes (and so indices) below 2^31.
            let first = (r0 + 2 * ow) as i32;
            let mut best = top[2 * ow];
            let mut at = first;
            for (tap, offset) in [
                (top[2 * ow + 1], 1),
                (bottom[2 * ow], w as i32),
                (bottom[2 * ow + 1], w as i32 + 1),
            ] {
                let take = tap > best || tap.is_nan();
                best = if take { tap } else { best };
                at = if take { first + offset } else { at };
            }
            *v = best;
            *i = at;
        }
    }
}

/// Max pooling of one plane `x` into `vals`/`idx` (see the checks module).
fn max_plane(g: &Pool2dGeometry, win: &Windows, x: &[f32], vals: &mut [f32], idx: &mut [i32]) {
    if plain_2x2(g) {
        return max_plane_2x2(g.input_hw[1], g.output_hw[1], x, vals, idx);
    }
    let w = g.input_hw[1];
    let ow_n = g.output_hw[1];
    let [dh, dw] = g.args.dilation;
    for (oh, &(h0, h1)) in win.rows.iter().enumerate() {
        let out = oh * ow_n..(oh + 1) * ow_n;
        for ((&(w0, w1), v), i) in win
            .cols
            .iter()
            .zip(&mut vals[out.clone()])
            .zip(&mut idx[out])
        {
            let (h0, h1, w0, w1) = (h0 as usize, h1 as usize, w0 as usize, w1 as usize);
            let mut best = f32::NEG_INFINITY;
            let mut at = h0 * w + w0;
            // Plain `while` loops: `step_by` divides to count its steps.
            let mut ih = h0;
            while ih < h1 {
                let mut flat = ih * w + w0;
                while flat < ih * w + w1 {
                    let v = x[flat];
                    // Written as selects, not a branch: on data where the
                    // winner moves at random, a branch mispredicts half the
                    // time. The last NaN wins, as in PyTorch's CPU kernel.
                    let take = v > best || v.is_nan();
                    best = if take { v } else { best };
                    at = if take { flat } else { at };
                    flat += dw;
                }
                ih += dh;
            }
            *v = best;
            // The geometry check keeps planes (and so `at`) below 2^31.
            *i = at as i32;
        }
    }
}

/// Average pooling of one plane (`divisors[o]`: output `o`'s divisor).
fn avg_plane(g: &Pool2dGeometry, x: &[f32], out: &mut [f32], divisors: &[f32]) {
    let [_, w] = g.input_hw;
    let ow_n = g.output_hw[1];
    for (o, (y, &div)) in out.iter_mut().zip(divisors).enumerate() {
        let (lo, hi, _) = avg_window(g, [o / ow_n, o % ow_n], false, None);
        if lo[0] >= hi[0] || lo[1] >= hi[1] {
            *y = 0.0;
            continue;
        }
        let mut sum = 0.0f32;
        for ih in lo[0] as usize..hi[0] as usize {
            for &v in &x[ih * w + lo[1] as usize..ih * w + hi[1] as usize] {
                sum += v;
            }
        }
        *y = sum / div;
    }
}

/// Every output's divisor of an average pooling, as f32.
fn avg_divisors(
    op: &'static str,
    g: &Pool2dGeometry,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Vec<f32>> {
    let [oh_n, ow_n] = g.output_hw;
    let mut out = try_vec(op, oh_n * ow_n)?;
    for oh in 0..oh_n {
        for ow in 0..ow_n {
            out.push(avg_window(g, [oh, ow], count_include_pad, divisor_override).2 as f32);
        }
    }
    Ok(out)
}

impl CpuTensor {
    /// `torch.nn.functional.max_pool2d(self, ..., return_indices=True)` of
    /// an F32 `[N, C, H, W]` tensor: the window maxima `[N, C, Ho, Wo]` and,
    /// as I32, each one's flat index `h*W + w` in its input plane. The first
    /// of equal maxima wins; NaN wins over numbers (the last NaN of a
    /// window, as PyTorch's CPU kernel); padding is never chosen.
    pub fn max_pool2d(&self, args: &Pool2dArgs) -> Result<(Self, Self)> {
        const OP: &str = "max_pool2d";
        expect_dtype(OP, self, DType::F32)?;
        let g = pool::max_pool2d(OP, self.shape(), args)?;
        let shape = g.output_shape();
        let n = checked_len(OP, &shape)?;
        // max_plane writes every output: no zero fill (recycled buffers).
        let mut vals = alloc::for_overwrite::<f32>(n).during(OP)?;
        let mut idx = alloc::for_overwrite::<i32>(n).during(OP)?;
        if n > 0 {
            let x = self.dense::<f32>(OP)?;
            let [ih, iw] = g.input_hw;
            let plane_in = ih * iw;
            let plane_out = n / g.planes();
            let work = n * args.kernel[0] * args.kernel[1];
            let win = Windows::new(OP, &g)?;
            let run = |p: usize, v: &mut [f32], i: &mut [i32]| {
                max_plane(&g, &win, &x[p * plane_in..(p + 1) * plane_in], v, i)
            };
            if parallel::worth_splitting(work) {
                // Whole planes per task, enough of them to amortise the hand-off.
                let planes_per_task = (parallel::TASK_ELEMS * g.planes() / work).max(1);
                vals.par_chunks_mut(plane_out)
                    .zip(idx.par_chunks_mut(plane_out))
                    .enumerate()
                    .with_min_len(planes_per_task)
                    .for_each(|(p, (v, i))| run(p, v, i));
                parallel::keep_warm();
            } else {
                vals.chunks_mut(plane_out)
                    .zip(idx.chunks_mut(plane_out))
                    .enumerate()
                    .for_each(|(p, (v, i))| run(p, v, i));
            }
        }
        Ok((Self::from_vec(vals, &shape)?, Self::from_vec(idx, &shape)?))
    }

    /// Gradient of [`max_pool2d`](Self::max_pool2d) w.r.t. its input of
    /// shape `input_shape`, given `self` = the output gradient and the
    /// forward's I32 `indices` (both `[N, C, Ho, Wo]`, any strides):
    /// `grad_input[plane][idx] += grad_out` for every output, summed per
    /// input element in row-major output order (windows may overlap). An
    /// index that points outside its output's window adds nothing.
    pub fn max_pool2d_backward(
        &self,
        indices: &CpuTensor,
        input_shape: &[usize],
        args: &Pool2dArgs,
    ) -> Result<Self> {
        const OP: &str = "max_pool2d_backward";
        expect_dtype(OP, self, DType::F32)?;
        expect_dtype(OP, indices, DType::I32)?;
        let g = pool::max_pool2d(OP, input_shape, args)?;
        pool::backward(OP, &g, self.shape())?;
        pool::backward(OP, &g, indices.shape())?;
        let [h, w] = g.input_hw;
        let ow_n = g.output_hw[1];
        let plane_out = g.output_hw[0] * ow_n;
        let n = checked_len(OP, input_shape)?;
        let mut out = try_zeroed::<f32>(OP, n)?;
        if n > 0 {
            let go = self.dense::<f32>(OP)?;
            let ix = indices.dense::<i32>(OP)?;
            let cover = (args.kernel[0] * args.dilation[0]).div_ceil(args.stride[0])
                * (args.kernel[1] * args.dilation[1]).div_ceil(args.stride[1]);
            // A scatter over the outputs in row-major order adds into each
            // input element in the same order as the gather formulation of
            // the GPU kernel, so the sums agree bit for bit; it reads each
            // output once instead of once per covering window.
            let win = Windows::new(OP, &g)?;
            per_plane(&mut out, h * w, n * cover, |p, gi| {
                let go = &go[p * plane_out..(p + 1) * plane_out];
                let ix = &ix[p * plane_out..(p + 1) * plane_out];
                for oh in 0..g.output_hw[0] {
                    for ow in 0..ow_n {
                        let o = oh * ow_n + ow;
                        if let Some(flat) = in_window(&g, &win, oh, ow, ix[o]) {
                            gi[flat] += go[o];
                        }
                    }
                }
            });
        }
        Self::from_vec(out, input_shape)
    }

    /// `torch.nn.functional.avg_pool2d(self, ...)` of an F32 `[N, C, H, W]`
    /// tensor (`args.dilation` must be 1): each window's row-major sum
    /// divided by `divisor_override`, else by the window's size cut to the
    /// padded input (`count_include_pad`) or to the input.
    pub fn avg_pool2d(
        &self,
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Self> {
        const OP: &str = "avg_pool2d";
        expect_dtype(OP, self, DType::F32)?;
        let g = pool::avg_pool2d(OP, self.shape(), args, divisor_override)?;
        let shape = g.output_shape();
        let n = checked_len(OP, &shape)?;
        let mut out = try_zeroed::<f32>(OP, n)?;
        if n > 0 {
            let x = self.dense::<f32>(OP)?;
            let divisors = avg_divisors(OP, &g, count_include_pad, divisor_override)?;
            let plane_in = g.input_hw[0] * g.input_hw[1];
            let work = n * args.kernel[0] * args.kernel[1];
            per_plane(&mut out, divisors.len(), work, |p, y| {
                avg_plane(&g, &x[p * plane_in..(p + 1) * plane_in], y, &divisors)
            });
        }
        Self::from_vec(out, &shape)
    }

    /// Gradient of [`avg_pool2d`](Self::avg_pool2d) w.r.t. its input of
    /// shape `input_shape`, given `self` = the output gradient (any
    /// strides): every input element sums `grad_out / divisor` over the
    /// windows that hold it.
    pub fn avg_pool2d_backward(
        &self,
        input_shape: &[usize],
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Self> {
        const OP: &str = "avg_pool2d_backward";
        expect_dtype(OP, self, DType::F32)?;
        let g = pool::avg_pool2d(OP, input_shape, args, divisor_override)?;
        pool::backward(OP, &g, self.shape())?;
        let [h, w] = g.input_hw;
        let ow_n = g.output_hw[1];
        let n = checked_len(OP, input_shape)?;
        let mut out = try_zeroed::<f32>(OP, n)?;
        if n > 0 {
            let go = self.dense::<f32>(OP)?;
            let divisors = avg_divisors(OP, &g, count_include_pad, divisor_override)?;
            let plane_out = divisors.len();
            let cover =
                args.kernel[0].div_ceil(args.stride[0]) * args.kernel[1].div_ceil(args.stride[1]);
            per_plane(&mut out, h * w, n * cover, |p, gi| {
                let go = &go[p * plane_out..(p + 1) * plane_out];
                for ih in 0..h {
                    let (oh0, oh1) = covering_outputs(&g, 0, ih);
                    for iw in 0..w {
                        let (ow0, ow1) = covering_outputs(&g, 1, iw);
                        let mut sum = 0.0f32;
                        for oh in oh0..oh1 {
                            for ow in ow0..ow1 {
                                let o = oh * ow_n + ow;
                                sum += go[o] / divisors[o];
                            }
                        }
                        gi[ih * w + iw] = sum;
                    }
                }
            });
        }
        Self::from_vec(out, input_shape)
    }

    /// `torch.nn.functional.adaptive_avg_pool2d(self, output_hw)` of an F32
    /// `[N, C, H, W]` tensor: output `(oh, ow)` averages the input window
    /// `[floor(oh*H/Ho), ceil((oh+1)*H/Ho))` x (likewise for `w`), computed
    /// as `sum / kh / kw`.
    pub fn adaptive_avg_pool2d(&self, output_hw: [usize; 2]) -> Result<Self> {
        const OP: &str = "adaptive_avg_pool2d";
        expect_dtype(OP, self, DType::F32)?;
        let g = pool::adaptive_avg_pool2d(OP, self.shape(), output_hw)?;
        let shape = g.output_shape();
        let n = checked_len(OP, &shape)?;
        let mut out = try_zeroed::<f32>(OP, n)?;
        if n > 0 {
            let x = self.dense::<f32>(OP)?;
            let [h, w] = g.input_hw;
            let [oh_n, ow_n] = output_hw;
            let work = n * h.div_ceil(oh_n) * w.div_ceil(ow_n);
            per_plane(&mut out, oh_n * ow_n, work, |p, y| {
                let x = &x[p * h * w..(p + 1) * h * w];
                for oh in 0..oh_n {
                    let (h0, h1) = adaptive_window(oh, h, oh_n);
                    for ow in 0..ow_n {
                        let (w0, w1) = adaptive_window(ow, w, ow_n);
                        let mut sum = 0.0f32;
                        for ih in h0..h1 {
                            for &v in &x[ih * w + w0..ih * w + w1] {
                                sum += v;
                            }
                        }
                        y[oh * ow_n + ow] = sum / (h1 - h0) as f32 / (w1 - w0) as f32;
                    }
                }
            });
        }
        Self::from_vec(out, &shape)
    }

    /// Gradient of [`adaptive_avg_pool2d`](Self::adaptive_avg_pool2d)
    /// w.r.t. its input of shape `input_shape`, given `self` = the output
    /// gradient `[N, C, Ho, Wo]` (any strides): every input element sums
    /// `grad_out / kh / kw` over the windows that hold it.
    pub fn adaptive_avg_pool2d_backward(&self, input_shape: &[usize]) -> Result<Self> {
        const OP: &str = "adaptive_avg_pool2d_backward";
        expect_dtype(OP, self, DType::F32)?;
        let out_hw = match *self.shape() {
            [_, _, oh, ow] => [oh, ow],
            _ => [0, 0],
        };
        let g = pool::adaptive_avg_pool2d(OP, input_shape, out_hw)?;
        pool::backward(OP, &g, self.shape())?;
        let [h, w] = g.input_hw;
        let [oh_n, ow_n] = out_hw;
        let n = checked_len(OP, input_shape)?;
        let mut out = try_zeroed::<f32>(OP, n)?;
        if n > 0 && oh_n * ow_n > 0 {
            let go = self.dense::<f32>(OP)?;
            let work = n * oh_n.div_ceil(h).max(1) * ow_n.div_ceil(w).max(1);
            per_plane(&mut out, h * w, work, |p, gi| {
                let go = &go[p * oh_n * ow_n..(p + 1) * oh_n * ow_n];
                for ih in 0..h {
                    let (oh0, oh1) = adaptive_covering(ih, h, oh_n);
                    for iw in 0..w {
                        let (ow0, ow1) = adaptive_covering(iw, w, ow_n);
                        let mut sum = 0.0f32;
                        for oh in oh0..oh1 {
                            let (h0, h1) = adaptive_window(oh, h, oh_n);
                            for ow in ow0..ow1 {
                                let (w0, w1) = adaptive_window(ow, w, ow_n);
                                sum += go[oh * ow_n + ow] / (h1 - h0) as f32 / (w1 - w0) as f32;
                            }
                        }
                        gi[ih * w + iw] = sum;
                    }
                }
            });
        }
        Self::from_vec(out, input_shape)
    }
}
