//! Convolution layers: [`Conv1d`], [`Conv2d`], [`ConvTranspose2d`]
//! (`torch.nn.Conv1d`, `Conv2d`, `ConvTranspose2d`), PyTorch's defaults,
//! initialisation and `state_dict` names (`weight`, `bias`).

use wgrad_autograd::{Conv2dArgs, ConvPadding, ConvTranspose2dArgs, Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::init::{self, FanMode, Nonlinearity};

/// PyTorch's default parameters of a convolution: the weight from
/// `kaiming_uniform_(a = sqrt(5))` and the bias from `U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in))`, where `fan_in` is computed from `weight_shape` with
/// `fan_axis` as the input-channel axis (1; 0 for transposed convs).
fn default_parameters(
    weight_shape: &[usize],
    bias_len: Option<usize>,
    device: &Device,
) -> Result<(Tensor, Option<Tensor>)> {
    let weight = Tensor::zeros(weight_shape, device)?;
    init::kaiming_uniform_(
        &weight,
        5f32.sqrt(),
        FanMode::FanIn,
        Nonlinearity::LeakyRelu,
    )?;
    let bias = match bias_len {
        Some(n) => {
            let (fan_in, _) = init::calculate_fan_in_and_fan_out(weight_shape)?;
            let b = Tensor::zeros(&[n], device)?;
            let bound = if fan_in > 0 {
                1.0 / (fan_in as f32).sqrt()
            } else {
                0.0
            };
            init::uniform_(&b, -bound, bound)?;
            Some(b.with_requires_grad(true)?)
        }
        None => None,
    };
    Ok((weight.with_requires_grad(true)?, bias))
}

fn check_channels(
    op: &'static str,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
) -> Result<()> {
    if groups == 0 || !in_channels.is_multiple_of(groups) || !out_channels.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups ({groups}) must be positive and divide in_channels ({in_channels}) and \
                 out_channels ({out_channels})"
            ),
        ));
    }
    Ok(())
}

/// Options of a 2-D convolution layer, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct Conv2dOptions {
    /// Stride (default 1).
    pub stride: [usize; 2],
    /// Padding: an int, `"same"` or `"valid"` (default `Explicit(0)`).
    pub padding: ConvPadding,
    /// Dilation (default 1).
    pub dilation: [usize; 2],
    /// Channel groups (default 1).
    pub groups: usize,
    /// Whether the layer has a bias (default true).
    pub bias: bool,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            stride: [1, 1],
            padding: ConvPadding::Explicit(0),
            dilation: [1, 1],
            groups: 1,
            bias: true,
        }
    }
}

/// `torch.nn.Conv2d`: input `[N, C_in, H, W]` (or `[C_in, H, W]`), weight
/// `[C_out, C_in / groups, kH, kW]`, bias `[C_out]`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Conv2d, Module};
/// let conv = Conv2d::new(3, 8, 3, &Device::Cpu)?;
/// let y = conv.forward(&Tensor::randn(&[2, 3, 10, 10], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 8, 8, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
#[module(forward_relu = forward_relu)]
pub struct Conv2d {
    /// `[out_channels, in_channels / groups, kH, kW]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    #[module(skip)]
    args: Conv2dArgs,
    training: bool,
}

impl Conv2d {
    /// `Conv2d(in_channels, out_channels, kernel_size)` with PyTorch's
    /// defaults (stride 1, no padding, bias).
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: usize,
        device: &Device,
    ) -> Result<Self> {
        Conv2d::with_options(
            in_channels,
            out_channels,
            [kernel; 2],
            Conv2dOptions::default(),
            device,
        )
    }

    /// A layer with every option (rectangular kernels included).
    pub fn with_options(
        in_channels: usize,
        out_channels: usize,
        kernel: [usize; 2],
        options: Conv2dOptions,
        device: &Device,
    ) -> Result<Self> {
        const OP: &str = "Conv2d";
        check_channels(OP, in_channels, out_channels, options.groups)?;
        if kernel.contains(&0) {
            return Err(Error::invalid(
                OP,
                format!("kernel_size must be positive, got {kernel:?}"),
            ));
        }
        let padding = match options.padding {
            ConvPadding::Valid => [[0, 0], [0, 0]],
            ConvPadding::Explicit(p) => [[p, p], [p, p]],
            ConvPadding::Same => {
                if options.stride != [1, 1] {
                    return Err(Error::invalid(
                        OP,
                        "padding='same' is not supported for strided convolutions",
                    ));
                }
                let side = |k: usize, d: usize| {
                    let total = d * (k - 1);
                    [total / 2, total - total / 2]
                };
                [
                    side(kernel[0], options.dilation[0]),
                    side(kernel[1], options.dilation[1]),
                ]
            }
        };
        let shape = [
            out_channels,
            in_channels / options.groups,
            kernel[0],
            kernel[1],
        ];
        let (weight, bias) =
            default_parameters(&shape, options.bias.then_some(out_channels), device)?;
        Ok(Conv2d {
            weight,
            bias,
            args: Conv2dArgs {
                stride: options.stride,
                padding,
                dilation: options.dilation,
                groups: options.groups,
            },
            training: true,
        })
    }

    /// The stride, per-side padding, dilation and groups the layer uses.
    pub fn args(&self) -> &Conv2dArgs {
        &self.args
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d(&self.weight, self.bias.as_ref(), &self.args)
    }

    /// `relu(forward(x))` in one node, the bias and ReLU in the
    /// convolution's store.
    fn forward_relu(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d_relu(&self.weight, self.bias.as_ref(), &self.args)
    }
}

/// `torch.nn.Conv1d`: input `[N, C_in, L]` (or `[C_in, L]`), weight
/// `[C_out, C_in / groups, k]`, bias `[C_out]`.
///
/// ```
/// use wgrad_autograd::{ConvPadding, Device, Tensor};
/// use wgrad_nn::{Conv1d, Module};
/// let device = Device::Cpu;
/// let conv = Conv1d::new(4, 6, 3, 1, ConvPadding::Explicit(1), 1, 1, true, &device)?;
/// let y = conv.forward(&Tensor::randn(&[2, 4, 10], &device)?)?;
/// assert_eq!(y.shape(), [2, 6, 10]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct Conv1d {
    /// `[out_channels, in_channels / groups, k]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    stride: usize,
    #[module(skip)]
    padding: ConvPadding,
    dilation: usize,
    groups: usize,
    training: bool,
}

impl Conv1d {
    /// `Conv1d(in_channels, out_channels, kernel_size, stride, padding,
    /// dilation, groups, bias)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: usize,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        check_channels("Conv1d", in_channels, out_channels, groups)?;
        let shape = [out_channels, in_channels / groups, kernel];
        let (weight, bias) = default_parameters(&shape, bias.then_some(out_channels), device)?;
        Ok(Conv1d {
            weight,
            bias,
            stride,
            padding,
            dilation,
            groups,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv1d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )
    }
}

/// `torch.nn.ConvTranspose2d`: input `[N, C_in, H, W]`, weight
/// `[C_in, C_out / groups, kH, kW]`, bias `[C_out]`.
///
/// ```
/// use wgrad_autograd::{ConvTranspose2dArgs, Device, Tensor};
/// use wgrad_nn::{ConvTranspose2d, Module};
/// let device = Device::Cpu;
/// let args = ConvTranspose2dArgs {
///     stride: [2, 2],
///     ..ConvTranspose2dArgs::default()
/// };
/// let up = ConvTranspose2d::new(4, 2, [2, 2], args, true, &device)?;
/// let y = up.forward(&Tensor::randn(&[1, 4, 5, 5], &device)?)?;
/// assert_eq!(y.shape(), [1, 2, 10, 10]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct ConvTranspose2d {
    /// `[in_channels, out_channels / groups, kH, kW]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    #[module(skip)]
    args: ConvTranspose2dArgs,
    training: bool,
}

impl ConvTranspose2d {
    /// `ConvTranspose2d(in_channels, out_channels, kernel_size, ...)`; PyTorch
    /// initialises its weight as a convolution's (fan_in from axis 1).
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: [usize; 2],
        args: ConvTranspose2dArgs,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        check_channels("ConvTranspose2d", in_channels, out_channels, args.groups)?;
        let shape = [
            in_channels,
            out_channels / args.groups,
            kernel[0],
            kernel[1],
        ];
        let (weight, bias) = default_parameters(&shape, bias.then_some(out_channels), device)?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            args,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv_transpose2d(&self.weight, self.bias.as_ref(), &self.args)
    }
}

/// `torch.nn.ConvTranspose1d`: input `[N, C_in, L]` (or `[C_in, L]`),
/// weight `[C_in, C_out / groups, k]`, bias `[C_out]`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{ConvTranspose1d, Module};
/// let up = ConvTranspose1d::new(4, 2, 3, 2, 1, 1, 1, true, 1, &Device::Cpu)?;
/// let y = up.forward(&Tensor::randn(&[1, 4, 5], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [1, 2, 10]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct ConvTranspose1d {
    /// `[in_channels, out_channels / groups, k]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    stride: usize,
    padding: usize,
    output_padding: usize,
    groups: usize,
    dilation: usize,
    training: bool,
}

impl ConvTranspose1d {
    /// `ConvTranspose1d(in_channels, out_channels, kernel_size, stride,
    /// padding, output_padding, groups, bias, dilation)` (PyTorch's order;
    /// its defaults are 1, 0, 0, 1, true, 1); the weight initialised as a
    /// convolution's (fan_in from axis 1).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        output_padding: usize,
        groups: usize,
        bias: bool,
        dilation: usize,
        device: &Device,
    ) -> Result<Self> {
        check_channels("ConvTranspose1d", in_channels, out_channels, groups)?;
        let shape = [in_channels, out_channels / groups, kernel];
        let (weight, bias) = default_parameters(&shape, bias.then_some(out_channels), device)?;
        Ok(ConvTranspose1d {
            weight,
            bias,
            stride,
            padding,
            output_padding,
            groups,
            dilation,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv_transpose1d(
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.output_padding,
            self.groups,
            self.dilation,
        )
    }
}
