//! 2-D pooling (`max_pool2d`, `avg_pool2d`, `adaptive_avg_pool2d`):
//! hyper-parameters, operand checks, output shapes and window rules, with
//! PyTorch's semantics (`torch.nn.functional.max_pool2d` etc.).
//!
//! Both backends implement, over NCHW f32 tensors `[N, C, H, W]`, one output
//! element per window of one `(n, c)` plane:
//! - max: the window `h = oh*sh - ph + i*dh` (`i < kh`, likewise `w`), cut
//!   to the input; the largest value, scanned row-major, the first of equal
//!   maxima winning and any NaN winning over numbers (a later NaN over an
//!   earlier one, as PyTorch's CPU kernel), with its flat index `h*W + w`
//!   in the plane (PyTorch's `return_indices`). A window with no input
//!   position gives `-inf` and the index of its first position past the
//!   padding, as PyTorch does;
//! - avg: the window `[oh*sh - ph, oh*sh - ph + kh)` cut to `[-ph, H + ph)`
//!   (its size is the divisor with `count_include_pad`), then to the input
//!   (the divisor without); the row-major sum divided by that divisor, or by
//!   `divisor_override` when given; see [`avg_window`];
//! - adaptive avg: windows `[floor(i*H/Ho), ceil((i+1)*H/Ho))` (see
//!   [`adaptive_window`]); `sum / kh / kw`, as PyTorch's CPU kernel.
//!
//! The backward primitives are gathers: each input element sums, in
//! row-major order of the outputs, the gradient of every output whose
//! window covers it ([`covering_outputs`] bounds them), which is the order
//! PyTorch's scatter adds them in.

use crate::{Error, Result};

/// Kernel, stride, padding, dilation and rounding of a 2-D pooling window,
/// each `[height, width]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2dArgs {
    /// Window size (`kernel_size`).
    pub kernel: [usize; 2],
    /// Step between windows (PyTorch's default is the kernel size).
    pub stride: [usize; 2],
    /// Implicit padding on both sides; at most half the kernel size.
    pub padding: [usize; 2],
    /// Spacing between window taps (max pooling only; avg needs 1).
    pub dilation: [usize; 2],
    /// Round the output size up instead of down (`ceil_mode`); the last
    /// window must still start inside the input or the left padding.
    pub ceil_mode: bool,
}

impl Pool2dArgs {
    /// PyTorch's defaults for `kernel`: stride = kernel, no padding,
    /// dilation 1, floor rounding.
    pub fn new(kernel: [usize; 2]) -> Self {
        Pool2dArgs {
            kernel,
            stride: kernel,
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
        }
    }
}

/// Every size of one pooling, checked: what a backend needs to run its
/// forward or backward primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2dGeometry {
    /// Batch size `N` (may be 0).
    pub batch: usize,
    /// Channels `C`.
    pub channels: usize,
    /// Input height and width.
    pub input_hw: [usize; 2],
    /// Output height and width.
    pub output_hw: [usize; 2],
    /// The window hyper-parameters (for adaptive pooling: kernel, stride
    /// and dilation 1, no padding; unused, the windows come from
    /// [`adaptive_window`]).
    pub args: Pool2dArgs,
}

impl Pool2dGeometry {
    /// The input's shape `[N, C, H, W]`.
    pub fn input_shape(&self) -> [usize; 4] {
        let [h, w] = self.input_hw;
        [self.batch, self.channels, h, w]
    }
    /// The output's shape `[N, C, H_out, W_out]`.
    pub fn output_shape(&self) -> [usize; 4] {
        let [h, w] = self.output_hw;
        [self.batch, self.channels, h, w]
    }
    /// Number of `(n, c)` planes, `N * C`.
    pub fn planes(&self) -> usize {
        self.batch * self.channels
    }
}

/// PyTorch's pooled length of one axis: `floor_or_ceil((input + 2*pad -
/// dilation*(kernel-1) - 1) / stride) + 1`, minus one in ceil mode when the
/// last window would start past the input and the left padding. May be
/// zero or negative (the callers reject that); inputs must be positive.
pub fn output_len(
    input: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    ceil_mode: bool,
) -> i128 {
    let (i, k, s, p, d) = (
        input as i128,
        kernel as i128,
        stride.max(1) as i128,
        pad as i128,
        dilation as i128,
    );
    let num = i + 2 * p - d * (k - 1) - 1 + if ceil_mode { s - 1 } else { 0 };
    let mut out = num.div_euclid(s) + 1;
    if ceil_mode && (out - 1) * s >= i + p {
        out -= 1;
    }
    out
}

fn check_args(op: &'static str, args: &Pool2dArgs) -> Result<()> {
    let Pool2dArgs {
        kernel,
        stride,
        padding,
        dilation,
        ..
    } = *args;
    if kernel.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("kernel size should be greater than zero, but got {kernel:?}"),
        ));
    }
    if stride.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("stride should be greater than zero, but got {stride:?}"),
        ));
    }
    if dilation.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("dilation should be greater than zero, but got {dilation:?}"),
        ));
    }
    if padding[0] > kernel[0] / 2 || padding[1] > kernel[1] / 2 {
        return Err(Error::invalid(
            op,
            format!(
                "pad should be at most half of effective kernel size, but got pad={padding:?}, \
                 kernel_size={kernel:?} and dilation={dilation:?}"
            ),
        ));
    }
    Ok(())
}

/// `[N, C, H, W]` with `C`, `H`, `W` nonzero (`N` may be 0), as PyTorch's
/// pooling ops require.
fn split_input(op: &'static str, input: &[usize]) -> Result<(usize, usize, [usize; 2])> {
    match *input {
        [n, c, h, w] if c > 0 && h > 0 && w > 0 => Ok((n, c, [h, w])),
        _ => Err(Error::invalid(
            op,
            format!(
                "expected a 4-D input [N, C, H, W] with nonzero C, H and W (N may be 0), \
                 got shape {input:?}"
            ),
        )),
    }
}

/// Checks a max pooling of `input` `[N, C, H, W]` and returns its
/// geometry. Errors: wrong rank or an empty plane, zero kernel, stride or
/// dilation, padding above half the kernel, an output smaller than 1x1.
/// The planes must also be small enough for I32 indices (`H*W` below
/// 2^31).
pub fn max_pool2d(op: &'static str, input: &[usize], args: &Pool2dArgs) -> Result<Pool2dGeometry> {
    let g = windowed(op, input, args)?;
    let [h, w] = g.input_hw;
    if h.checked_mul(w).is_none_or(|n| n > i32::MAX as usize) {
        return Err(Error::invalid(
            op,
            format!("an input plane of {h}x{w} is too large for I32 indices"),
        ));
    }
    Ok(g)
}

/// The geometry of a windowed pooling (max or avg).
fn windowed(op: &'static str, input: &[usize], args: &Pool2dArgs) -> Result<Pool2dGeometry> {
    check_args(op, args)?;
    let (batch, channels, input_hw) = split_input(op, input)?;
    let mut out = [0i128; 2];
    for (axis, o) in out.iter_mut().enumerate() {
        *o = output_len(
            input_hw[axis],
            args.kernel[axis],
            args.stride[axis],
            args.padding[axis],
            args.dilation[axis],
            args.ceil_mode,
        );
    }
    if out[0] < 1 || out[1] < 1 {
        return Err(Error::invalid(
            op,
            format!(
                "Given input size: ({channels}x{}x{}). Calculated output size: \
                 ({channels}x{}x{}). Output size is too small",
                input_hw[0], input_hw[1], out[0], out[1]
            ),
        ));
    }
    Ok(Pool2dGeometry {
        batch,
        channels,
        input_hw,
        // Positive and at most input + 2*pad, so they fit.
        output_hw: [out[0] as usize, out[1] as usize],
        args: *args,
    })
}

/// Checks an average pooling (as [`max_pool2d`], and dilation must be 1,
/// `divisor_override` nonzero) and returns its geometry.
pub fn avg_pool2d(
    op: &'static str,
    input: &[usize],
    args: &Pool2dArgs,
    divisor_override: Option<usize>,
) -> Result<Pool2dGeometry> {
    if args.dilation != [1, 1] {
        return Err(Error::invalid(
            op,
            format!("average pooling has no dilation, got {:?}", args.dilation),
        ));
    }
    if divisor_override == Some(0) {
        return Err(Error::invalid(op, "divisor must be not zero"));
    }
    windowed(op, input, args)
}

/// Checks an adaptive pooling of `input` `[N, C, H, W]` to `output_hw`
/// (zero output sizes give an empty result) and returns its geometry.
pub fn adaptive_avg_pool2d(
    op: &'static str,
    input: &[usize],
    output_hw: [usize; 2],
) -> Result<Pool2dGeometry> {
    let (batch, channels, input_hw) = split_input(op, input)?;
    Ok(Pool2dGeometry {
        batch,
        channels,
        input_hw,
        output_hw,
        args: Pool2dArgs::new([1, 1]),
    })
}

/// Checks a pooling gradient: `grad_out` must have the shape of the
/// forward output `geometry` describes (the geometry comes from the
/// forward check on `input_shape`).
pub fn backward(op: &'static str, geometry: &Pool2dGeometry, grad_out: &[usize]) -> Result<()> {
    if grad_out == geometry.output_shape() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "grad_output has shape {grad_out:?}, but the pooling of input {:?} gives {:?}",
                geometry.input_shape(),
                geometry.output_shape()
            ),
        ))
    }
}

/// The `[start, end)` input range of output `i` of an adaptive pooling
/// from `input` to `output` positions: `[floor(i*input/output),
/// ceil((i+1)*input/output))`.
pub fn adaptive_window(i: usize, input: usize, output: usize) -> (usize, usize) {
    let start = (i * input) / output;
    let end = ((i + 1) * input).div_ceil(output);
    (start, end)
}

/// The window of average-pooling output `out_hw` = `(oh, ow)` cut to the
/// input, as `[h0, w0]` and `[h1, w1]` (half-open), and its divisor (see
/// the module doc). PyTorch's windows are never empty; an empty one would
/// give `h0 >= h1` or `w0 >= w1`.
pub fn avg_window(
    geometry: &Pool2dGeometry,
    out_hw: [usize; 2],
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> ([i64; 2], [i64; 2], i64) {
    let a = &geometry.args;
    let mut lo = [0i64; 2];
    let mut hi = [0i64; 2];
    let mut padded = 1i64;
    let mut inside = 1i64;
    for axis in 0..2 {
        let size = geometry.input_hw[axis] as i64;
        let pad = a.padding[axis] as i64;
        let start = (out_hw[axis] * a.stride[axis]) as i64 - pad;
        let end = (start + a.kernel[axis] as i64).min(size + pad);
        padded *= end - start;
        lo[axis] = start.max(0);
        hi[axis] = end.min(size);
        inside *= (hi[axis] - lo[axis]).max(0);
    }
    let divisor = match divisor_override {
        Some(d) => d as i64,
        None if count_include_pad => padded,
        None => inside,
    };
    (lo, hi, divisor)
}

/// The outputs (one axis) whose window can cover input position `pos`:
/// `oh` with `oh*stride - pad <= pos <= oh*stride - pad + dilation*(kernel-1)`,
/// as a half-open range cut to `0..output`. With dilation 1 (average
/// pooling) every output in it covers `pos`; with a larger dilation some
/// may step over it.
pub fn covering_outputs(geometry: &Pool2dGeometry, axis: usize, pos: usize) -> (usize, usize) {
    let a = &geometry.args;
    let p = pos + a.padding[axis];
    let span = a.dilation[axis] * (a.kernel[axis] - 1);
    let s = a.stride[axis];
    let lo = if p < span { 0 } else { (p - span).div_ceil(s) };
    let hi = (p / s + 1).min(geometry.output_hw[axis]);
    (lo, hi.max(lo))
}

/// The outputs (one axis) of an adaptive pooling from `input` to `output`
/// positions whose window covers input position `pos`:
/// `[floor(pos*output/input), ceil((pos+1)*output/input))`, cut to `output`.
pub fn adaptive_covering(pos: usize, input: usize, output: usize) -> (usize, usize) {
    let lo = (pos * output) / input;
    let hi = ((pos + 1) * output).div_ceil(input).min(output);
    (lo, hi.max(lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(k: usize, s: usize, p: usize, d: usize, ceil: bool) -> Pool2dArgs {
        Pool2dArgs {
            kernel: [k, k],
            stride: [s, s],
            padding: [p, p],
            dilation: [d, d],
            ceil_mode: ceil,
        }
    }

    #[test]
    fn output_sizes_follow_pytorch() {
        // torch.nn.functional.max_pool2d(torch.zeros(1, 1, 5, 5), 2) -> 2x2;
        // ceil_mode=True -> 3x3.
        let g = max_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 0, 1, false)).unwrap();
        assert_eq!(g.output_shape(), [1, 1, 2, 2]);
        let g = max_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 0, 1, true)).unwrap();
        assert_eq!(g.output_hw, [3, 3]);
        // 6x6, k=3, s=2, p=1: floor -> 3, ceil -> 4 would start at 6 >= 6+1? no:
        // (4-1)*2 = 6 < 7, so 4.
        let g = max_pool2d("p", &[1, 1, 6, 6], &args(3, 2, 1, 1, true)).unwrap();
        assert_eq!(g.output_hw, [4, 4]);
        // 5x5, k=2, s=2, p=1, ceil: (5+2-2+1)/2+1 = 4, (4-1)*2 = 6 >= 6 -> 3.
        let g = max_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 1, 1, true)).unwrap();
        assert_eq!(g.output_hw, [3, 3]);
        let g = max_pool2d("p", &[0, 3, 7, 7], &args(3, 1, 1, 2, false)).unwrap();
        assert_eq!(g.output_shape(), [0, 3, 5, 5]);
    }

    #[test]
    fn bad_pools_are_errors() {
        let e = max_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 2, 1, false)).unwrap_err();
        assert!(e.to_string().contains("at most half"), "{e}");
        assert!(max_pool2d("p", &[1, 1, 5, 5], &args(0, 2, 0, 1, false)).is_err());
        assert!(max_pool2d("p", &[1, 1, 5, 5], &args(2, 0, 0, 1, false)).is_err());
        assert!(max_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 0, 0, false)).is_err());
        assert!(max_pool2d("p", &[1, 5, 5], &args(2, 2, 0, 1, false)).is_err());
        assert!(max_pool2d("p", &[1, 0, 5, 5], &args(2, 2, 0, 1, false)).is_err());
        let e = max_pool2d("p", &[1, 1, 2, 2], &args(3, 1, 0, 1, false)).unwrap_err();
        assert!(e.to_string().contains("too small"), "{e}");
        assert!(avg_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 0, 2, false), None).is_err());
        assert!(avg_pool2d("p", &[1, 1, 5, 5], &args(2, 2, 0, 1, false), Some(0)).is_err());
        assert!(adaptive_avg_pool2d("p", &[1, 1, 0, 5], [1, 1]).is_err());
    }

    #[test]
    fn windows_cover_their_inputs() {
        assert_eq!(adaptive_window(0, 5, 3), (0, 2));
        assert_eq!(adaptive_window(1, 5, 3), (1, 4));
        assert_eq!(adaptive_window(2, 5, 3), (3, 5));
        for (input, output) in [(5, 3), (7, 2), (4, 4), (3, 5), (10, 1)] {
            for pos in 0..input {
                let (lo, hi) = adaptive_covering(pos, input, output);
                for o in 0..output {
                    let (s, e) = adaptive_window(o, input, output);
                    assert_eq!((s..e).contains(&pos), (lo..hi).contains(&o));
                }
            }
        }
        let g = max_pool2d("p", &[1, 1, 9, 9], &args(3, 2, 1, 2, true)).unwrap();
        for pos in 0..9 {
            let (lo, hi) = covering_outputs(&g, 0, pos);
            for o in 0..g.output_hw[0] {
                let start = (o * 2) as i64 - 1;
                let covers = (0..3).any(|i| start + 2 * i == pos as i64);
                assert!(!covers || (lo..hi).contains(&o), "pos {pos} out {o}");
            }
        }
    }

    #[test]
    fn avg_divisors_follow_pytorch() {
        let g = avg_pool2d("p", &[1, 1, 5, 5], &args(3, 2, 1, 1, true), None).unwrap();
        assert_eq!(g.output_hw, [3, 3]);
        // Window 0 covers [-1, 2): 3 padded, 2 inside per axis.
        assert_eq!(avg_window(&g, [0, 0], true, None), ([0, 0], [2, 2], 9));
        assert_eq!(avg_window(&g, [0, 0], false, None).2, 4);
        // Window 2 covers [3, 6) cut to [3, 5+1): 3 padded, 2 inside.
        assert_eq!(avg_window(&g, [2, 2], true, None), ([3, 3], [5, 5], 9));
        assert_eq!(avg_window(&g, [2, 1], false, Some(7)).2, 7);
    }
}
