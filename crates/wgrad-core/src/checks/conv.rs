//! 2-D convolution (`conv2d`, and through it `conv1d` and
//! `conv_transpose2d`): hyper-parameters, operand checks and output shapes,
//! with PyTorch's semantics (`torch.nn.functional.conv2d`).
//!
//! Both backends implement three primitives over NCHW f32 tensors, all
//! described by one [`Conv2dGeometry`]:
//! - forward: `out[n, o, y, x] = sum_{c in group(o), i, j}
//!   input[n, c, y*sh - pt + i*dh, x*sw - pl + j*dw] * weight[o, c', i, j]`
//!   (out-of-range input positions read 0);
//! - input gradient (`conv_transpose2d` is this op): `grad_input = forward^T(grad_out)`;
//! - weight gradient: `grad_weight[o, c', i, j] = sum_{n, y, x} grad_out[n, o, y, x] * input[n, c, ..]`.

use crate::{Error, Result};

/// Stride, padding, dilation and groups of a 2-D convolution.
///
/// Padding is per side, `[[top, bottom], [left, right]]`, so PyTorch's
/// `padding="same"` with an even kernel (more padding after than before)
/// is expressible; symmetric padding `p` is `[[p, p], [p, p]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dArgs {
    /// Step between output positions, `[height, width]` (PyTorch default 1).
    pub stride: [usize; 2],
    /// Zeros added around the input, `[[top, bottom], [left, right]]`.
    pub padding: [[usize; 2]; 2],
    /// Spacing between kernel taps, `[height, width]` (PyTorch default 1).
    pub dilation: [usize; 2],
    /// Input and output channels split into this many independent groups
    /// (`groups == in_channels` is a depthwise convolution).
    pub groups: usize,
}

impl Default for Conv2dArgs {
    /// PyTorch's defaults: stride 1, no padding, dilation 1, one group.
    fn default() -> Self {
        Conv2dArgs {
            stride: [1, 1],
            padding: [[0, 0], [0, 0]],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

/// Every size of one convolution, checked: what a backend needs to run any
/// of the three primitives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dGeometry {
    /// The hyper-parameters.
    pub args: Conv2dArgs,
    /// Batch size.
    pub batch: usize,
    /// Input channels (all groups).
    pub in_channels: usize,
    /// Output channels (all groups).
    pub out_channels: usize,
    /// Input height and width.
    pub input_hw: [usize; 2],
    /// Kernel height and width.
    pub kernel_hw: [usize; 2],
    /// Output height and width.
    pub output_hw: [usize; 2],
}

impl Conv2dGeometry {
    /// The input's shape `[N, C_in, H, W]`.
    pub fn input_shape(&self) -> [usize; 4] {
        [
            self.batch,
            self.in_channels,
            self.input_hw[0],
            self.input_hw[1],
        ]
    }
    /// The weight's shape `[C_out, C_in / groups, kH, kW]`.
    pub fn weight_shape(&self) -> [usize; 4] {
        [
            self.out_channels,
            self.in_channels / self.args.groups,
            self.kernel_hw[0],
            self.kernel_hw[1],
        ]
    }
    /// The output's shape `[N, C_out, H_out, W_out]`.
    pub fn output_shape(&self) -> [usize; 4] {
        [
            self.batch,
            self.out_channels,
            self.output_hw[0],
            self.output_hw[1],
        ]
    }
    /// Input channels per group.
    pub fn in_per_group(&self) -> usize {
        self.in_channels / self.args.groups
    }
    /// Output channels per group.
    pub fn out_per_group(&self) -> usize {
        self.out_channels / self.args.groups
    }
}

/// Output length of one spatial axis: `floor((in + pad_before + pad_after -
/// dilation*(kernel-1) - 1) / stride) + 1`, or an error when the padded input
/// is smaller than the dilated kernel.
pub fn output_len(
    op: &'static str,
    input: usize,
    padding: [usize; 2],
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> Result<usize> {
    let padded = input
        .checked_add(padding[0])
        .and_then(|v| v.checked_add(padding[1]))
        .ok_or_else(|| Error::invalid(op, "padded input size overflows"))?;
    let span = kernel
        .checked_sub(1)
        .and_then(|k| k.checked_mul(dilation))
        .and_then(|k| k.checked_add(1))
        .ok_or_else(|| Error::invalid(op, format!("kernel size {kernel} must be positive")))?;
    if padded < span {
        return Err(Error::invalid(
            op,
            format!(
                "the padded input size ({padded}) is smaller than the dilated kernel size \
                 ({span}); the output would be empty"
            ),
        ));
    }
    Ok((padded - span) / stride + 1)
}

fn check_args(op: &'static str, args: &Conv2dArgs) -> Result<()> {
    if args.stride.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("stride must be positive, got {:?}", args.stride),
        ));
    }
    if args.dilation.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("dilation must be positive, got {:?}", args.dilation),
        ));
    }
    if args.groups == 0 {
        return Err(Error::invalid(op, "groups must be positive"));
    }
    Ok(())
}

/// A convolution's bias: `[channels]`, one value per output channel.
pub fn bias(op: &'static str, bias: &[usize], channels: usize) -> Result<()> {
    if bias != [channels] {
        return Err(Error::invalid(
            op,
            format!(
                "bias must have shape [{channels}] (one value per output channel), got {bias:?}"
            ),
        ));
    }
    Ok(())
}

/// Checks a forward convolution of `input` `[N, C_in, H, W]` with `weight`
/// `[C_out, C_in / groups, kH, kW]` and returns its geometry. Errors name
/// the op and the shapes: wrong ranks, channel counts that do not match or
/// do not divide by `groups`, zero stride/dilation/groups, or a padded input
/// smaller than the dilated kernel.
pub fn conv2d(
    op: &'static str,
    input: &[usize],
    weight: &[usize],
    args: &Conv2dArgs,
) -> Result<Conv2dGeometry> {
    check_args(op, args)?;
    let &[batch, in_channels, h, w] = input else {
        return Err(Error::invalid(
            op,
            format!("expected a 4-D input [N, C, H, W], got shape {input:?}"),
        ));
    };
    let &[out_channels, in_per_group, kh, kw] = weight else {
        return Err(Error::invalid(
            op,
            format!("expected a 4-D weight [C_out, C_in/groups, kH, kW], got shape {weight:?}"),
        ));
    };
    let groups = args.groups;
    if !in_channels.is_multiple_of(groups) || !out_channels.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups ({groups}) must divide the input channels ({in_channels}) and the \
                 output channels ({out_channels})"
            ),
        ));
    }
    if in_per_group * groups != in_channels {
        return Err(Error::invalid(
            op,
            format!(
                "input shape {input:?} has {in_channels} channels, but weight shape {weight:?} \
                 with groups={groups} expects {}",
                in_per_group * groups
            ),
        ));
    }
    let out_h = output_len(op, h, args.padding[0], kh, args.stride[0], args.dilation[0])?;
    let out_w = output_len(op, w, args.padding[1], kw, args.stride[1], args.dilation[1])?;
    Ok(Conv2dGeometry {
        args: *args,
        batch,
        in_channels,
        out_channels,
        input_hw: [h, w],
        kernel_hw: [kh, kw],
        output_hw: [out_h, out_w],
    })
}

/// The geometry of the forward convolution whose input gradient is
/// `conv_transpose2d(input, weight, stride, padding, output_padding, groups,
/// dilation)` (PyTorch's `torch.nn.functional.conv_transpose2d`):
/// `input` `[N, C_in, H, W]` plays the convolution's output gradient,
/// `weight` `[C_in, C_out / groups, kH, kW]` its weight, and the result
/// `[N, C_out, H_out, W_out]` its input, with
/// `H_out = (H - 1)*stride - 2*padding + dilation*(kH - 1) + output_padding + 1`.
/// `output_padding` must be smaller than the stride or the dilation.
pub fn conv_transpose2d(
    op: &'static str,
    input: &[usize],
    weight: &[usize],
    t: &ConvTranspose2dArgs,
) -> Result<Conv2dGeometry> {
    let ConvTranspose2dArgs {
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    } = *t;
    let args = Conv2dArgs {
        stride,
        padding: [[padding[0], padding[0]], [padding[1], padding[1]]],
        dilation,
        groups,
    };
    check_args(op, &args)?;
    let &[batch, in_channels, h, w] = input else {
        return Err(Error::invalid(
            op,
            format!("expected a 4-D input [N, C, H, W], got shape {input:?}"),
        ));
    };
    let &[weight_in, out_per_group, kh, kw] = weight else {
        return Err(Error::invalid(
            op,
            format!("expected a 4-D weight [C_in, C_out/groups, kH, kW], got shape {weight:?}"),
        ));
    };
    if weight_in != in_channels {
        return Err(Error::invalid(
            op,
            format!(
                "input shape {input:?} has {in_channels} channels, but weight shape {weight:?} \
                 expects {weight_in}"
            ),
        ));
    }
    if !in_channels.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!("groups ({groups}) must divide the input channels ({in_channels})"),
        ));
    }
    let mut out_hw = [0; 2];
    for axis in 0..2 {
        let (size, k) = ([h, w][axis], [kh, kw][axis]);
        if output_padding[axis] >= stride[axis] && output_padding[axis] >= dilation[axis] {
            return Err(Error::invalid(
                op,
                format!(
                    "output_padding {output_padding:?} must be smaller than either stride \
                     {stride:?} or dilation {dilation:?}"
                ),
            ));
        }
        if size == 0 || k == 0 {
            return Err(Error::invalid(
                op,
                format!("input shape {input:?} and weight shape {weight:?} need nonzero H, W"),
            ));
        }
        let full = (size - 1) * stride[axis] + dilation[axis] * (k - 1) + output_padding[axis] + 1;
        // An output size of exactly 0 is an empty result, as PyTorch's CPU
        // computes it on its oneDNN path, except where PyTorch takes
        // `slow_conv_transpose2d` (one ungrouped image, or an
        // output_padding not below its stride on either axis), which
        // raises; a negative size always raises. (Checked against PyTorch
        // 2.15 on 202 random zero-size cases.)
        let empty_ok = (batch != 1 || groups != 1)
            && output_padding
                .iter()
                .zip(stride.iter())
                .all(|(op, s)| op < s);
        out_hw[axis] = full
            .checked_sub(2 * padding[axis])
            .filter(|&v| v > 0 || (v == 0 && empty_ok))
            .ok_or_else(|| {
                Error::invalid(
                    op,
                    format!("padding {padding:?} leaves no output for input shape {input:?}"),
                )
            })?;
    }
    // The forward convolution from the result back to `input`. Its output
    // size is `input`'s H, W as given (with output_padding >= stride, which
    // PyTorch allows when it is below the dilation, the size formula would
    // give more rows; the primitives use the stored sizes, never the formula).
    let geometry = Conv2dGeometry {
        args,
        batch,
        in_channels: out_per_group * groups,
        out_channels: in_channels,
        input_hw: out_hw,
        kernel_hw: [kh, kw],
        output_hw: [h, w],
    };
    Ok(geometry)
}

/// `conv_transpose2d`'s hyper-parameters in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvTranspose2dArgs {
    /// Stride of the forward convolution it transposes (default 1).
    pub stride: [usize; 2],
    /// Implicit zero padding removed from both sides of the output (default 0).
    pub padding: [usize; 2],
    /// Extra size added to one side of the output (default 0).
    pub output_padding: [usize; 2],
    /// Channel groups (default 1).
    pub groups: usize,
    /// Spacing between kernel taps (default 1).
    pub dilation: [usize; 2],
}

impl Default for ConvTranspose2dArgs {
    /// PyTorch's defaults.
    fn default() -> Self {
        ConvTranspose2dArgs {
            stride: [1, 1],
            padding: [0, 0],
            output_padding: [0, 0],
            groups: 1,
            dilation: [1, 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_sizes_follow_pytorch() {
        let g = conv2d(
            "conv2d",
            &[2, 3, 28, 28],
            &[8, 3, 3, 3],
            &Conv2dArgs::default(),
        )
        .unwrap();
        assert_eq!(g.output_shape(), [2, 8, 26, 26]);
        let args = Conv2dArgs {
            stride: [2, 2],
            padding: [[1, 1], [1, 1]],
            ..Conv2dArgs::default()
        };
        let g = conv2d("conv2d", &[1, 64, 56, 56], &[128, 64, 3, 3], &args).unwrap();
        assert_eq!(g.output_hw, [28, 28]);
        let args = Conv2dArgs {
            dilation: [2, 3],
            groups: 4,
            ..Conv2dArgs::default()
        };
        let g = conv2d("conv2d", &[1, 8, 10, 12], &[4, 2, 3, 3], &args).unwrap();
        assert_eq!(g.output_hw, [6, 6]);
        assert_eq!((g.in_per_group(), g.out_per_group()), (2, 1));
    }

    #[test]
    fn transposed_sizes_follow_pytorch() {
        // torch: conv_transpose2d([2, 4, 5, 6], w[4, 3, 3, 3], stride=2, padding=1,
        // output_padding=1) -> [2, 3, 10, 12].
        let t = ConvTranspose2dArgs {
            stride: [2, 2],
            padding: [1, 1],
            output_padding: [1, 1],
            ..ConvTranspose2dArgs::default()
        };
        let g = conv_transpose2d("conv_transpose2d", &[2, 4, 5, 6], &[4, 3, 3, 3], &t).unwrap();
        assert_eq!(g.input_shape(), [2, 3, 10, 12]);
        assert_eq!(g.output_shape(), [2, 4, 5, 6]);
        assert_eq!(g.weight_shape(), [4, 3, 3, 3]);
        let bad = ConvTranspose2dArgs {
            output_padding: [2, 0],
            ..t
        };
        assert!(conv_transpose2d("conv_transpose2d", &[2, 4, 5, 6], &[4, 3, 3, 3], &bad).is_err());
    }

    #[test]
    fn bad_convolutions_are_errors_naming_the_shapes() {
        let d = Conv2dArgs::default();
        let e = conv2d("conv2d", &[1, 3, 5, 5], &[4, 2, 3, 3], &d).unwrap_err();
        assert!(e.to_string().contains("[4, 2, 3, 3]"), "{e}");
        assert!(conv2d("conv2d", &[3, 5, 5], &[4, 3, 3, 3], &d).is_err());
        assert!(conv2d("conv2d", &[1, 3, 2, 2], &[4, 3, 3, 3], &d).is_err());
        let grouped = Conv2dArgs { groups: 2, ..d };
        assert!(conv2d("conv2d", &[1, 3, 5, 5], &[4, 1, 3, 3], &grouped).is_err());
        let zero = Conv2dArgs {
            stride: [0, 1],
            ..d
        };
        assert!(conv2d("conv2d", &[1, 3, 5, 5], &[4, 3, 3, 3], &zero).is_err());
    }
}
