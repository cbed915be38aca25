//! Pooling: `max_pool2d`, `avg_pool2d`, `adaptive_avg_pool2d`,
//! `adaptive_max_pool2d` and their 1-D forms (PyTorch's
//! `torch.nn.functional` semantics).

use wgrad_core::checks::pool::Pool2dArgs;
use wgrad_core::{DType, Error, Result};

use crate::graph::Op;
use crate::ops::conv::batched;
use crate::tensor::Tensor;

fn float_input(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::DTypeMismatch {
            op,
            expected: DType::F32,
            got: t.dtype(),
        })
    }
}

/// Runs a 2-D pool on a 1-D input `[N, C, L]` (or `[C, L]`) as height 1.
fn as_2d(
    op: &'static str,
    input: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    match input.rank() {
        2 | 3 => f(&input.unsqueeze(-2)?)?.squeeze(-2),
        _ => Err(Error::invalid(
            op,
            format!(
                "expected a 2-D [C, L] or 3-D [N, C, L] input, got shape {:?}",
                input.shape()
            ),
        )),
    }
}

/// A 1-D pooling's hyper-parameters as the 2-D ones of height 1.
fn args_1d(
    kernel: usize,
    stride: Option<usize>,
    padding: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Pool2dArgs {
    Pool2dArgs {
        kernel: [1, kernel],
        stride: [1, stride.unwrap_or(kernel)],
        padding: [0, padding],
        dilation: [1, dilation],
        ceil_mode,
    }
}

/// Pooling (`torch.nn.functional`): `max_pool2d` (also with indices),
/// `avg_pool2d`, `adaptive_avg_pool2d` and the 1-D forms, on `[N, C, H, W]`
/// or unbatched `[C, H, W]`; see [`Pool2dArgs`].
///
/// ```
/// use wgrad_autograd::{Device, Pool2dArgs, Tensor};
/// let x = Tensor::arange(0.0, 16.0, 1.0, wgrad_autograd::DType::F32, &Device::Cpu)?
///     .reshape(&[1, 1, 4, 4])?;
/// let pooled = x.max_pool2d(&Pool2dArgs::new([2, 2]))?; // stride = kernel
/// assert_eq!(pooled.to_vec_f32()?, [5.0, 7.0, 13.0, 15.0]);
/// let avg = x.avg_pool2d(&Pool2dArgs::new([2, 2]), true, None)?;
/// assert_eq!(avg.to_vec_f32()?, [2.5, 4.5, 10.5, 12.5]);
/// assert_eq!(x.adaptive_avg_pool2d([1, 1])?.to_vec_f32()?, [7.5]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.nn.functional.max_pool2d` of `[N, C, H, W]` (or `[C, H, W]`).
    /// NaN in a window wins; of equal maxima the first (row-major) does.
    pub fn max_pool2d(&self, args: &Pool2dArgs) -> Result<Tensor> {
        Ok(self.max_pool2d_with_indices(args)?.0)
    }

    /// [`max_pool2d`](Self::max_pool2d) with `return_indices=True`: also the
    /// I32 flat index `h*W + w` of each maximum in its input plane.
    pub fn max_pool2d_with_indices(&self, args: &Pool2dArgs) -> Result<(Tensor, Tensor)> {
        const OP: &str = "max_pool2d";
        float_input(OP, self)?;
        let mut indices = None;
        let values = batched(OP, self, |x| {
            let (values, idx) = x.storage().max_pool2d(args)?;
            let out = Tensor::record(
                values,
                Op::MaxPool2d {
                    indices: idx.clone(),
                    args: *args,
                },
                &[x],
            );
            indices = Some(Tensor::from_storage_leaf(idx));
            Ok(out)
        })?;
        let indices = match indices {
            Some(i) if i.rank() != values.rank() => i.squeeze(0)?,
            Some(i) => i,
            None => return Err(Error::invalid(OP, "no indices were produced")),
        };
        Ok((values, indices))
    }

    /// `torch.nn.functional.avg_pool2d` of `[N, C, H, W]` (or `[C, H, W]`):
    /// each window's mean, divided by `divisor_override` if given, else by
    /// the window's size within the padded input (`count_include_pad`, as
    /// PyTorch's default) or within the input.
    pub fn avg_pool2d(
        &self,
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Tensor> {
        const OP: &str = "avg_pool2d";
        float_input(OP, self)?;
        batched(OP, self, |x| {
            let out = x
                .storage()
                .avg_pool2d(args, count_include_pad, divisor_override)?;
            Ok(Tensor::record(
                out,
                Op::AvgPool2d {
                    args: *args,
                    count_include_pad,
                    divisor_override,
                },
                &[x],
            ))
        })
    }

    /// `torch.nn.functional.adaptive_avg_pool2d`: averages over windows
    /// `[floor(i*H/Ho), ceil((i+1)*H/Ho))` so the output is `output_hw`.
    pub fn adaptive_avg_pool2d(&self, output_hw: [usize; 2]) -> Result<Tensor> {
        const OP: &str = "adaptive_avg_pool2d";
        float_input(OP, self)?;
        batched(OP, self, |x| {
            let out = x.storage().adaptive_avg_pool2d(output_hw)?;
            Ok(Tensor::record(out, Op::AdaptiveAvgPool2d, &[x]))
        })
    }

    /// `torch.nn.functional.adaptive_avg_pool1d` of `[N, C, L]` (or
    /// `[C, L]`): the 2-D op over a height of 1.
    pub fn adaptive_avg_pool1d(&self, output_size: usize) -> Result<Tensor> {
        as_2d("adaptive_avg_pool1d", self, |x| {
            x.adaptive_avg_pool2d([1, output_size])
        })
    }

    /// `torch.nn.functional.adaptive_max_pool2d` (values; no indices) of
    /// `[N, C, H, W]` (or `[C, H, W]`): the max over windows
    /// `[floor(i*H/Ho), ceil((i+1)*H/Ho))`, as PyTorch's. Sizes that divide
    /// evenly run as one max pool; others as one max per window, joined.
    pub fn adaptive_max_pool2d(&self, output_hw: [usize; 2]) -> Result<Tensor> {
        const OP: &str = "adaptive_max_pool2d";
        float_input(OP, self)?;
        batched(OP, self, |x| {
            let (h, w) = (x.shape()[2], x.shape()[3]);
            let [oh, ow] = output_hw;
            if h == 0 || w == 0 {
                return Err(Error::invalid(
                    OP,
                    format!("input size [{h}, {w}] must be non-zero"),
                ));
            }
            if oh == 0 || ow == 0 {
                // PyTorch's empty output, still in the graph.
                let (n, c) = (x.shape()[0], x.shape()[1]);
                return x.sum(&[2, 3], true)?.expand(&[n, c, oh, ow]);
            }
            if h % oh == 0 && w % ow == 0 {
                return x.max_pool2d(&Pool2dArgs::new([h / oh, w / ow]));
            }
            let window =
                |i: usize, n: usize, out: usize| (i * n / out, ((i + 1) * n).div_ceil(out));
            let mut rows = Vec::with_capacity(oh);
            for i in 0..oh {
                let (h0, h1) = window(i, h, oh);
                let band = x.narrow(2, h0, h1 - h0)?;
                let mut cells = Vec::with_capacity(ow);
                for j in 0..ow {
                    let (w0, w1) = window(j, w, ow);
                    cells.push(band.narrow(3, w0, w1 - w0)?.max(&[2, 3], true)?);
                }
                rows.push(Tensor::cat(&cells.iter().collect::<Vec<_>>(), 3)?);
            }
            Tensor::cat(&rows.iter().collect::<Vec<_>>(), 2)
        })
    }

    /// `torch.nn.functional.adaptive_max_pool1d` (values) of `[N, C, L]`
    /// (or `[C, L]`).
    pub fn adaptive_max_pool1d(&self, output_size: usize) -> Result<Tensor> {
        as_2d("adaptive_max_pool1d", self, |x| {
            x.adaptive_max_pool2d([1, output_size])
        })
    }

    /// `torch.nn.functional.max_pool1d` of `[N, C, L]` (or `[C, L]`);
    /// `stride` defaults to the kernel size.
    pub fn max_pool1d(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        dilation: usize,
        ceil_mode: bool,
    ) -> Result<Tensor> {
        let args = args_1d(kernel, stride, padding, dilation, ceil_mode);
        as_2d("max_pool1d", self, |x| x.max_pool2d(&args))
    }

    /// `torch.nn.functional.avg_pool1d` of `[N, C, L]` (or `[C, L]`).
    pub fn avg_pool1d(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> Result<Tensor> {
        let args = args_1d(kernel, stride, padding, 1, ceil_mode);
        as_2d("avg_pool1d", self, |x| {
            x.avg_pool2d(&args, count_include_pad, None)
        })
    }
}
