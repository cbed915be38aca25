//! Convolutions: `conv1d`, `conv2d`, `conv_transpose2d` (PyTorch's
//! `torch.nn.functional` semantics) and their backward rules.

use wgrad_core::checks::conv::{self, Conv2dArgs, Conv2dGeometry, ConvTranspose2dArgs};
use wgrad_core::{DType, Error, Result};

use crate::autocast::{self, AutocastGuard, lower_precision};
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Padding of a convolution as PyTorch's `padding=` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvPadding {
    /// `padding="valid"`: no padding.
    Valid,
    /// `padding="same"`: the output has the input's size (stride 1 only);
    /// with an even dilated kernel the extra zero goes after, as in PyTorch.
    Same,
    /// The same number of zeros on both sides of each spatial axis.
    Explicit(usize),
}

/// `(before, after)` zeros for `padding="same"` on one axis.
fn same_padding(kernel: usize, dilation: usize) -> [usize; 2] {
    let total = dilation * kernel.saturating_sub(1);
    [total / 2, total - total / 2]
}

fn float_operand(op: &'static str, t: &Tensor) -> Result<()> {
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

/// Adds `bias` `[C]` to channel axis 1 of `y`, after checking its shape.
fn add_bias(op: &'static str, y: Tensor, bias: Option<&Tensor>, channels: usize) -> Result<Tensor> {
    let Some(b) = bias else { return Ok(y) };
    float_operand(op, b)?;
    if b.shape() != [channels] {
        return Err(Error::invalid(
            op,
            format!(
                "bias must have shape [{channels}] (one value per output channel), got {:?}",
                b.shape()
            ),
        ));
    }
    let mut view = vec![1isize; y.rank()];
    view[1] = channels as isize;
    y.add(&b.reshape(&view)?)
}

/// Runs `f` on a batched (4-D) input: a 3-D `[C, H, W]` input gets a batch
/// dim of 1 for the call and loses it again, as PyTorch's unbatched form.
pub(crate) fn batched(
    op: &'static str,
    input: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    match input.rank() {
        4 => f(input),
        3 => f(&input.unsqueeze(0)?)?.squeeze(0),
        _ => Err(Error::invalid(
            op,
            format!(
                "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {:?}",
                input.shape()
            ),
        )),
    }
}

/// Convolutions (`torch.nn.functional.conv1d`/`conv2d`/`conv_transpose2d`),
/// differentiable in the input, the weight and the bias; see
/// [`Conv2dArgs`] and [`ConvPadding`].
///
/// ```
/// use wgrad_autograd::{Conv2dArgs, ConvPadding, Device, Tensor};
/// let cpu = Device::Cpu;
/// let x = Tensor::ones(&[1, 1, 4, 4], &cpu)?;
/// let w = Tensor::ones(&[2, 1, 3, 3], &cpu)?; // 2 output channels, 3x3
/// let b = Tensor::from_vec(vec![0.0f32, 1.0], &[2], &cpu)?;
/// let y = x.conv2d(&w, Some(&b), &Conv2dArgs::default())?;
/// assert_eq!(y.shape(), [1, 2, 2, 2]);
/// assert_eq!(y.to_vec_f32()?, [9.0, 9.0, 9.0, 9.0, 10.0, 10.0, 10.0, 10.0]);
/// // padding="same" keeps the size.
/// let same = x.conv2d_padded(&w, None, 1, ConvPadding::Same, 1, 1)?;
/// assert_eq!(same.shape(), [1, 2, 4, 4]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// 2-D convolution (`torch.nn.functional.conv2d`): input `[N, C_in, H, W]`
    /// (or unbatched `[C_in, H, W]`), weight `[C_out, C_in / groups, kH, kW]`,
    /// optional bias `[C_out]`; see [`Conv2dArgs`] for stride, per-side
    /// padding, dilation and groups.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        args: &Conv2dArgs,
    ) -> Result<Tensor> {
        self.conv2d_act(weight, bias, false, args)
    }

    /// `relu(conv2d(x, weight, bias))` as one graph node: on a GPU the bias
    /// and the ReLU run in the convolution's store, with the numbers of the
    /// separate ops on either device. What a `Sequential`'s `Conv2d`
    /// followed by `ReLU` runs.
    pub fn conv2d_relu(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        args: &Conv2dArgs,
    ) -> Result<Tensor> {
        self.conv2d_act(weight, bias, true, args)
    }

    fn conv2d_act(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        relu: bool,
        args: &Conv2dArgs,
    ) -> Result<Tensor> {
        const OP: &str = "conv2d";
        if autocast::is_autocast_enabled() {
            let (x, w) = (lower_precision(self)?, lower_precision(weight)?);
            let b = autocast::lower_opt(bias)?;
            let _plain = AutocastGuard::disabled();
            return x.conv2d_act(&w, b.as_ref(), relu, args);
        }
        float_operand(OP, self)?;
        float_operand(OP, weight)?;
        batched(OP, self, |x| {
            let geometry = conv::conv2d(OP, &x.shape(), &weight.shape(), args)?;
            let fusable =
                |b: &Tensor| b.dtype() == x.dtype() && b.shape() == [geometry.out_channels];
            match bias {
                // The bias (and the ReLU) in the convolution itself (on a
                // GPU, in its store), when it takes the input's dtype;
                // otherwise an add that promotes as PyTorch's.
                Some(b) if fusable(b) => {
                    let (w, bs) = (weight.storage(), b.storage());
                    let out = if relu {
                        x.storage().conv2d_relu(&w, Some(&bs), args)?
                    } else {
                        x.storage().conv2d_with_bias(&w, &bs, args)?
                    };
                    let op = Op::Conv2d { geometry, relu };
                    Ok(Tensor::record(out, op, &[x, weight, b]))
                }
                None if relu => {
                    let out = x.storage().conv2d_relu(&weight.storage(), None, args)?;
                    let op = Op::Conv2d { geometry, relu };
                    Ok(Tensor::record(out, op, &[x, weight]))
                }
                _ => {
                    let out = x.storage().conv2d(&weight.storage(), args)?;
                    let op = Op::Conv2d {
                        geometry,
                        relu: false,
                    };
                    let y = add_bias(
                        OP,
                        Tensor::record(out, op, &[x, weight]),
                        bias,
                        geometry.out_channels,
                    )?;
                    if relu { y.relu() } else { Ok(y) }
                }
            }
        })
    }

    /// [`conv2d`](Self::conv2d) with PyTorch's `padding=` forms (an int,
    /// `"same"` or `"valid"`) and square hyper-parameters.
    pub fn conv2d_padded(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        let kernel = match &weight.shape()[..] {
            [_, _, kh, kw] => [*kh, *kw],
            other => {
                return Err(Error::invalid(
                    "conv2d",
                    format!(
                        "expected a 4-D weight [C_out, C_in/groups, kH, kW], got shape {other:?}"
                    ),
                ));
            }
        };
        let padding = conv_padding("conv2d", padding, kernel, [stride; 2], [dilation; 2])?;
        let args = Conv2dArgs {
            stride: [stride; 2],
            padding,
            dilation: [dilation; 2],
            groups,
        };
        self.conv2d(weight, bias, &args)
    }

    /// 1-D convolution (`torch.nn.functional.conv1d`): input `[N, C_in, L]`
    /// (or `[C_in, L]`), weight `[C_out, C_in / groups, k]`, optional bias;
    /// computed as a 2-D convolution of height 1.
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv1d";
        let kernel = match &weight.shape()[..] {
            [_, _, k] => *k,
            other => {
                return Err(Error::invalid(
                    OP,
                    format!("expected a 3-D weight [C_out, C_in/groups, k], got shape {other:?}"),
                ));
            }
        };
        let unbatched = match self.rank() {
            3 => false,
            2 => true,
            _ => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "expected a 2-D [C, L] or 3-D [N, C, L] input, got shape {:?}",
                        self.shape()
                    ),
                ));
            }
        };
        let [_, along] = conv_padding(OP, padding, [1, kernel], [1, stride], [1, dilation])?;
        let args = Conv2dArgs {
            stride: [1, stride],
            padding: [[0, 0], along],
            dilation: [1, dilation],
            groups,
        };
        let x = if unbatched {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let y = x
            .unsqueeze(2)?
            .conv2d(&weight.unsqueeze(2)?, bias, &args)
            .map_err(|e| rename(e, OP))?
            .squeeze(2)?;
        if unbatched { y.squeeze(0) } else { Ok(y) }
    }

    /// Transposed 2-D convolution (`torch.nn.functional.conv_transpose2d`):
    /// input `[N, C_in, H, W]` (or `[C_in, H, W]`), weight
    /// `[C_in, C_out / groups, kH, kW]`, optional bias `[C_out]`. It is the
    /// gradient of `conv2d` with respect to its input.
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        args: &ConvTranspose2dArgs,
    ) -> Result<Tensor> {
        const OP: &str = "conv_transpose2d";
        if autocast::is_autocast_enabled() {
            let (x, w) = (lower_precision(self)?, lower_precision(weight)?);
            let b = autocast::lower_opt(bias)?;
            let _plain = AutocastGuard::disabled();
            return x.conv_transpose2d(&w, b.as_ref(), args);
        }
        float_operand(OP, self)?;
        float_operand(OP, weight)?;
        batched(OP, self, |x| {
            let geometry = conv::conv_transpose2d(OP, &x.shape(), &weight.shape(), args)?;
            let out = x
                .storage()
                .conv2d_input_grad(&weight.storage(), &geometry)?;
            let y = Tensor::record(out, Op::ConvTranspose2d { geometry }, &[x, weight]);
            add_bias(OP, y, bias, geometry.in_channels)
        })
    }
}

impl Tensor {
    /// Transposed 1-D convolution (`torch.nn.functional.conv_transpose1d`,
    /// PyTorch's argument order): input `[N, C_in, L]` (or `[C_in, L]`),
    /// weight `[C_in, C_out / groups, k]`, optional bias `[C_out]`; the 2-D
    /// op over a height of 1.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
        output_padding: usize,
        groups: usize,
        dilation: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv_transpose1d";
        if weight.rank() != 3 {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected a 3-D weight [C_in, C_out/groups, k], got shape {:?}",
                    weight.shape()
                ),
            ));
        }
        let unbatched = match self.rank() {
            3 => false,
            2 => true,
            _ => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: {:?}",
                        self.shape()
                    ),
                ));
            }
        };
        let args = ConvTranspose2dArgs {
            stride: [1, stride],
            padding: [0, padding],
            output_padding: [0, output_padding],
            groups,
            dilation: [1, dilation],
        };
        let x = if unbatched {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let y = x
            .unsqueeze(2)?
            .conv_transpose2d(&weight.unsqueeze(2)?, bias, &args)
            .map_err(|e| rename(e, OP))?
            .squeeze(2)?;
        if unbatched { y.squeeze(0) } else { Ok(y) }
    }
}

/// Per-side padding for `padding` on a 2-D kernel.
fn conv_padding(
    op: &'static str,
    padding: ConvPadding,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
) -> Result<[[usize; 2]; 2]> {
    Ok(match padding {
        ConvPadding::Valid => [[0, 0], [0, 0]],
        ConvPadding::Explicit(p) => [[p, p], [p, p]],
        ConvPadding::Same => {
            if stride != [1, 1] {
                return Err(Error::invalid(
                    op,
                    format!(
                        "padding='same' is not supported for strided convolutions (stride {stride:?})"
                    ),
                ));
            }
            [
                same_padding(kernel[0], dilation[0]),
                same_padding(kernel[1], dilation[1]),
            ]
        }
    })
}

/// An error from the 2-D op that implements a 1-D one, named after the latter.
fn rename(e: Error, op: &'static str) -> Error {
    match e {
        Error::InvalidArgument { message, .. } => Error::InvalidArgument { op, message },
        other => other,
    }
}

/// Input and weight gradients of `conv2d` (only those the inputs need).
pub(crate) fn conv2d_grads(
    g: &Storage,
    input: impl FnOnce() -> Result<Storage>,
    weight: impl FnOnce() -> Result<Storage>,
    needs: &[bool],
    geometry: &Conv2dGeometry,
) -> Result<Vec<Option<Storage>>> {
    let w = if needs[0] { Some(weight()?) } else { None };
    let gx = match &w {
        Some(w) => Some(g.conv2d_input_grad(w, geometry)?),
        None => None,
    };
    // A fused bias (a third input): its gradient sums g over batch and
    // pixels, from the weight gradient's pass when both are needed.
    let needs_bias = needs.get(2).copied();
    let (gw, gb) = match (needs[1], needs_bias) {
        (true, Some(true)) => {
            let (w, b) = input()?.conv2d_weight_and_bias_grad(g, geometry)?;
            (Some(w), Some(b))
        }
        (true, _) => (Some(input()?.conv2d_weight_grad(g, geometry)?), None),
        (false, Some(true)) => (None, Some(g.sum(&[0, 2, 3], false)?)),
        (false, _) => (None, None),
    };
    let mut grads = vec![gx, gw];
    if needs_bias.is_some() {
        grads.push(gb);
    }
    Ok(grads)
}

/// Input and weight gradients of `conv_transpose2d` `y = conv2d_input_grad(x, w)`:
/// the input's is the forward convolution of `g` (cut to `x`'s size, which
/// output_padding can leave smaller), the weight's is the weight gradient
/// with `g` as the convolution's input and `x` as its output gradient.
pub(crate) fn conv_transpose2d_grads(
    g: &Storage,
    input: impl FnOnce() -> Result<Storage>,
    weight: impl FnOnce() -> Result<Storage>,
    needs: [bool; 2],
    geometry: &Conv2dGeometry,
) -> Result<Vec<Option<Storage>>> {
    let gx = if needs[0] {
        let mut gx = g.conv2d(&weight()?, &geometry.args)?;
        for (axis, &len) in geometry.output_hw.iter().enumerate() {
            if gx.shape()[2 + axis] != len {
                gx = gx.narrow(2 + axis as isize, 0, len)?;
            }
        }
        Some(gx)
    } else {
        None
    };
    let gw = if needs[1] {
        Some(g.conv2d_weight_grad(&input()?, geometry)?)
    } else {
        None
    };
    Ok(vec![gx, gw])
}
