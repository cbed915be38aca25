//! Pooling and resizing layers: [`MaxPool2d`], [`AvgPool2d`],
//! [`AdaptiveAvgPool2d`], [`MaxPool1d`], [`AvgPool1d`], [`Upsample`]
//! (`torch.nn`'s, same names). No parameters.

use wgrad_autograd::{Device, InterpolateMode, Pool2dArgs, Tensor};
use wgrad_core::Result;

use crate::module::Module;

/// Declares the parameterless parts of a pooling layer's `Module` impl.
macro_rules! stateless_module {
    ($name:ident, |$s:ident, $x:ident| $forward:expr) => {
        impl Module for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $s = self;
                $forward
            }
            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                Vec::new()
            }
            fn train(&mut self, on: bool) {
                self.training = on;
            }
            fn is_training(&self) -> bool {
                self.training
            }
            fn to_device(&mut self, _device: &Device) -> Result<()> {
                Ok(())
            }
        }
    };
}

/// `torch.nn.MaxPool2d`: see [`Tensor::max_pool2d`].
#[derive(Clone, Debug)]
pub struct MaxPool2d {
    /// Kernel, stride, padding, dilation and ceil_mode.
    pub args: Pool2dArgs,
    training: bool,
}

impl MaxPool2d {
    /// `MaxPool2d(kernel_size)`: stride = kernel, no padding.
    pub fn new(kernel: usize) -> Self {
        MaxPool2d::with_args(Pool2dArgs::new([kernel; 2]))
    }
    /// A layer with every option.
    pub fn with_args(args: Pool2dArgs) -> Self {
        MaxPool2d {
            args,
            training: true,
        }
    }
}

stateless_module!(MaxPool2d, |s, x| x.max_pool2d(&s.args));

/// `torch.nn.AvgPool2d`: see [`Tensor::avg_pool2d`].
#[derive(Clone, Debug)]
pub struct AvgPool2d {
    /// Kernel, stride, padding and ceil_mode (dilation must stay 1).
    pub args: Pool2dArgs,
    /// Count padding zeros in the divisor (PyTorch's default: true).
    pub count_include_pad: bool,
    /// Divide by this instead of the window size.
    pub divisor_override: Option<usize>,
    training: bool,
}

impl AvgPool2d {
    /// `AvgPool2d(kernel_size)`: stride = kernel, no padding.
    pub fn new(kernel: usize) -> Self {
        AvgPool2d::with_args(Pool2dArgs::new([kernel; 2]), true, None)
    }
    /// A layer with every option.
    pub fn with_args(
        args: Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Self {
        AvgPool2d {
            args,
            count_include_pad,
            divisor_override,
            training: true,
        }
    }
}

stateless_module!(AvgPool2d, |s, x| x.avg_pool2d(
    &s.args,
    s.count_include_pad,
    s.divisor_override
));

/// `torch.nn.AdaptiveAvgPool2d`: see [`Tensor::adaptive_avg_pool2d`].
#[derive(Clone, Debug)]
pub struct AdaptiveAvgPool2d {
    /// The output height and width.
    pub output_hw: [usize; 2],
    training: bool,
}

impl AdaptiveAvgPool2d {
    /// A layer producing `output_hw` (`[1, 1]`: global average pooling).
    pub fn new(output_hw: [usize; 2]) -> Self {
        AdaptiveAvgPool2d {
            output_hw,
            training: true,
        }
    }
}

stateless_module!(AdaptiveAvgPool2d, |s, x| x.adaptive_avg_pool2d(s.output_hw));

/// `torch.nn.MaxPool1d`: see [`Tensor::max_pool1d`] (input `[N, C, L]` or `[C, L]`).
#[derive(Clone, Debug)]
pub struct MaxPool1d {
    /// Window length.
    pub kernel: usize,
    /// Step between windows (`None`: the kernel size, PyTorch's default).
    pub stride: Option<usize>,
    /// Implicit `-inf` padding on both sides.
    pub padding: usize,
    /// Spacing between window taps.
    pub dilation: usize,
    /// Round the output length up instead of down.
    pub ceil_mode: bool,
    training: bool,
}

impl MaxPool1d {
    /// `MaxPool1d(kernel_size)`: stride = kernel, no padding.
    pub fn new(kernel: usize) -> Self {
        MaxPool1d {
            kernel,
            stride: None,
            padding: 0,
            dilation: 1,
            ceil_mode: false,
            training: true,
        }
    }
}

stateless_module!(MaxPool1d, |s, x| x.max_pool1d(
    s.kernel,
    s.stride,
    s.padding,
    s.dilation,
    s.ceil_mode
));

/// `torch.nn.AvgPool1d`: see [`Tensor::avg_pool1d`] (input `[N, C, L]` or `[C, L]`).
#[derive(Clone, Debug)]
pub struct AvgPool1d {
    /// Window length.
    pub kernel: usize,
    /// Step between windows (`None`: the kernel size, PyTorch's default).
    pub stride: Option<usize>,
    /// Implicit zero padding on both sides.
    pub padding: usize,
    /// Round the output length up instead of down.
    pub ceil_mode: bool,
    /// Count padding zeros in the divisor (PyTorch's default: true).
    pub count_include_pad: bool,
    training: bool,
}

impl AvgPool1d {
    /// `AvgPool1d(kernel_size)`: stride = kernel, no padding.
    pub fn new(kernel: usize) -> Self {
        AvgPool1d {
            kernel,
            stride: None,
            padding: 0,
            ceil_mode: false,
            count_include_pad: true,
            training: true,
        }
    }
}

stateless_module!(AvgPool1d, |s, x| x.avg_pool1d(
    s.kernel,
    s.stride,
    s.padding,
    s.ceil_mode,
    s.count_include_pad
));

/// `torch.nn.Upsample`: [`Tensor::interpolate`] to a `size` or by a
/// `scale_factor` (exactly one of them), `mode` nearest by default.
#[derive(Clone, Debug)]
pub struct Upsample {
    /// Output spatial size.
    pub size: Option<Vec<usize>>,
    /// Factor per spatial dim (one value applies to all).
    pub scale_factor: Option<Vec<f64>>,
    /// Sampling mode.
    pub mode: InterpolateMode,
    /// Corner alignment of linear modes (PyTorch's default: false).
    pub align_corners: bool,
    training: bool,
}

impl Upsample {
    /// `Upsample(scale_factor=factor, mode=mode)`.
    pub fn with_scale(factor: f64, mode: InterpolateMode) -> Self {
        Upsample {
            size: None,
            scale_factor: Some(vec![factor]),
            mode,
            align_corners: false,
            training: true,
        }
    }
    /// `Upsample(size=size, mode=mode)`.
    pub fn with_size(size: &[usize], mode: InterpolateMode) -> Self {
        Upsample {
            size: Some(size.to_vec()),
            scale_factor: None,
            mode,
            align_corners: false,
            training: true,
        }
    }
}

stateless_module!(Upsample, |s, x| x.interpolate(
    s.size.as_deref(),
    s.scale_factor.as_deref(),
    s.mode,
    s.align_corners
));
