//! Pooling layers: [`MaxPool2d`], [`AvgPool2d`], [`AdaptiveAvgPool2d`]
//! (`torch.nn.MaxPool2d`, `AvgPool2d`, `AdaptiveAvgPool2d`). No parameters.

use wgrad_autograd::{Device, Pool2dArgs, Tensor};
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
