//! Pooling and resizing layers: [`MaxPool2d`], [`AvgPool2d`],
//! [`AdaptiveAvgPool2d`], [`MaxPool1d`], [`AvgPool1d`], [`Upsample`]
//! (`torch.nn`'s, same names). No parameters.

use wgrad_autograd::{InterpolateMode, Pool2dArgs, Tensor};
use wgrad_core::Result;

use crate::Module;

/// `torch.nn.MaxPool2d`: see [`Tensor::max_pool2d`].
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{MaxPool2d, Module};
/// let pool = MaxPool2d::new(2);
/// let y = pool.forward(&Tensor::randn(&[1, 3, 8, 8], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [1, 3, 4, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct MaxPool2d {
    /// Kernel, stride, padding, dilation and ceil_mode.
    #[module(skip)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool2d(&self.args)
    }
}

/// `torch.nn.AvgPool2d`: see [`Tensor::avg_pool2d`].
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{AvgPool2d, Module};
/// let pool = AvgPool2d::new(2);
/// let y = pool.forward(&Tensor::randn(&[1, 3, 8, 8], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [1, 3, 4, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct AvgPool2d {
    /// Kernel, stride, padding and ceil_mode (dilation must stay 1).
    #[module(skip)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool2d(&self.args, self.count_include_pad, self.divisor_override)
    }
}

/// `torch.nn.AdaptiveAvgPool2d`: see [`Tensor::adaptive_avg_pool2d`].
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{AdaptiveAvgPool2d, Module};
/// let pool = AdaptiveAvgPool2d::new([1, 1]);
/// let y = pool.forward(&Tensor::randn(&[2, 3, 5, 7], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 3, 1, 1]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_avg_pool2d(self.output_hw)
    }
}

/// `torch.nn.MaxPool1d`: see [`Tensor::max_pool1d`] (input `[N, C, L]` or `[C, L]`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{MaxPool1d, Module};
/// let pool = MaxPool1d::new(2);
/// let y = pool.forward(&Tensor::randn(&[2, 3, 8], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 3, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool1d(
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

/// `torch.nn.AvgPool1d`: see [`Tensor::avg_pool1d`] (input `[N, C, L]` or `[C, L]`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{AvgPool1d, Module};
/// let pool = AvgPool1d::new(4);
/// let y = pool.forward(&Tensor::randn(&[2, 3, 8], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [2, 3, 2]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool1d(
            self.kernel,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )
    }
}

/// `torch.nn.Upsample`: [`Tensor::interpolate`] to a `size` or by a
/// `scale_factor` (exactly one of them), `mode` nearest by default.
///
/// ```
/// use wgrad_autograd::{Device, InterpolateMode, Tensor};
/// use wgrad_nn::{Module, Upsample};
/// let up = Upsample::with_scale(2.0, InterpolateMode::Nearest);
/// let y = up.forward(&Tensor::randn(&[1, 2, 3, 3], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [1, 2, 6, 6]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct Upsample {
    /// Output spatial size.
    pub size: Option<Vec<usize>>,
    /// Factor per spatial dim (one value applies to all).
    pub scale_factor: Option<Vec<f64>>,
    /// Sampling mode.
    #[module(skip)]
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.interpolate(
            self.size.as_deref(),
            self.scale_factor.as_deref(),
            self.mode,
            self.align_corners,
        )
    }
}

/// `torch.nn.AdaptiveAvgPool1d`: see [`Tensor::adaptive_avg_pool1d`].
#[derive(Clone, Debug, Module)]
pub struct AdaptiveAvgPool1d {
    /// The output length.
    pub output_size: usize,
    training: bool,
}

impl AdaptiveAvgPool1d {
    /// A layer producing `output_size` (1: global average pooling).
    pub fn new(output_size: usize) -> Self {
        AdaptiveAvgPool1d {
            output_size,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_avg_pool1d(self.output_size)
    }
}

/// `torch.nn.AdaptiveMaxPool2d` (values only, `return_indices=False`):
/// see [`Tensor::adaptive_max_pool2d`].
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{AdaptiveMaxPool2d, Module};
/// let pool = AdaptiveMaxPool2d::new([3, 2]);
/// assert_eq!(pool.forward(&Tensor::randn(&[2, 4, 7, 5], &Device::Cpu)?)?.shape(), [2, 4, 3, 2]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct AdaptiveMaxPool2d {
    /// The output height and width.
    pub output_hw: [usize; 2],
    training: bool,
}

impl AdaptiveMaxPool2d {
    /// A layer producing `output_hw` (`[1, 1]`: global max pooling).
    pub fn new(output_hw: [usize; 2]) -> Self {
        AdaptiveMaxPool2d {
            output_hw,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_max_pool2d(self.output_hw)
    }
}

/// `torch.nn.AdaptiveMaxPool1d` (values only): see
/// [`Tensor::adaptive_max_pool1d`].
#[derive(Clone, Debug, Module)]
pub struct AdaptiveMaxPool1d {
    /// The output length.
    pub output_size: usize,
    training: bool,
}

impl AdaptiveMaxPool1d {
    /// A layer producing `output_size`.
    pub fn new(output_size: usize) -> Self {
        AdaptiveMaxPool1d {
            output_size,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_max_pool1d(self.output_size)
    }
}
