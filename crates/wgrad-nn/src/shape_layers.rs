//! Layers that only rearrange or pad: [`PixelShuffle`], [`PixelUnshuffle`],
//! [`Unflatten`] and the padding modules (`torch.nn.ZeroPad2d`,
//! `ConstantPad1d/2d`, `ReflectionPad1d/2d`, `ReplicationPad1d/2d`,
//! `CircularPad1d/2d`), views and [`Tensor::pad`] on either device.

use wgrad_autograd::{PadMode, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;

/// `[*, C r^2, H, W] -> [*, C, H r, W r]` (`torch.nn.PixelShuffle`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, PixelShuffle};
/// let y = PixelShuffle::new(2).forward(&Tensor::randn(&[1, 8, 3, 3], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [1, 2, 6, 6]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
pub struct PixelShuffle {
    /// `upscale_factor`.
    pub upscale_factor: usize,
    training: bool,
}

/// `[*, C, H r, W r] -> [*, C r^2, H, W]` (`torch.nn.PixelUnshuffle`).
#[derive(Clone, Debug, Module)]
pub struct PixelUnshuffle {
    /// `downscale_factor`.
    pub downscale_factor: usize,
    training: bool,
}

/// The leading dims of a `[*, C, H, W]` input flattened into one, with C,
/// H and W, or PyTorch's error for fewer than 3 dims.
fn split_chw(op: &'static str, x: &Tensor) -> Result<(Vec<usize>, [usize; 4])> {
    let shape = x.shape();
    if shape.len() < 3 {
        return Err(Error::invalid(
            op,
            format!(
                "{op} expects input to have at least 3 dimensions, but got input with {} dimension(s)",
                shape.len()
            ),
        ));
    }
    let r = shape.len();
    let lead = shape[..r - 3].to_vec();
    let batch = lead.iter().product();
    Ok((lead, [batch, shape[r - 3], shape[r - 2], shape[r - 1]]))
}

fn with_lead(lead: &[usize], tail: [usize; 3]) -> Vec<isize> {
    lead.iter()
        .chain(tail.iter())
        .map(|&d| d as isize)
        .collect()
}

impl PixelShuffle {
    /// The module with `upscale_factor` (at least 1).
    pub fn new(upscale_factor: usize) -> Self {
        PixelShuffle {
            upscale_factor,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        const OP: &str = "pixel_shuffle";
        let r = self.upscale_factor;
        if r == 0 {
            return Err(Error::invalid(OP, "upscale_factor must be greater than 0"));
        }
        let (lead, [b, c, h, w]) = split_chw(OP, x)?;
        if c % (r * r) != 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}",
                    r * r
                ),
            ));
        }
        let oc = c / (r * r);
        let s = |v: &[usize]| v.iter().map(|&d| d as isize).collect::<Vec<_>>();
        x.reshape(&s(&[b, oc, r, r, h, w]))?
            .permute(&[0, 1, 4, 2, 5, 3])?
            .reshape(&with_lead(&lead, [oc, h * r, w * r]))
    }
}

impl PixelUnshuffle {
    /// The module with `downscale_factor` (at least 1).
    pub fn new(downscale_factor: usize) -> Self {
        PixelUnshuffle {
            downscale_factor,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        const OP: &str = "pixel_unshuffle";
        let r = self.downscale_factor;
        if r == 0 {
            return Err(Error::invalid(
                OP,
                "downscale_factor must be greater than 0",
            ));
        }
        let (lead, [b, c, h, w]) = split_chw(OP, x)?;
        if h % r != 0 || w % r != 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "pixel_unshuffle expects height ({h}) and width ({w}) to be divisible by downscale_factor ({r})"
                ),
            ));
        }
        let (oh, ow) = (h / r, w / r);
        let s = |v: &[usize]| v.iter().map(|&d| d as isize).collect::<Vec<_>>();
        x.reshape(&s(&[b, c, oh, r, ow, r]))?
            .permute(&[0, 1, 3, 5, 2, 4])?
            .reshape(&with_lead(&lead, [c * r * r, oh, ow]))
    }
}

/// Splits dim `dim` into `sizes` (one may be -1) (`torch.nn.Unflatten`).
#[derive(Clone, Debug, Module)]
pub struct Unflatten {
    /// The dim to split (negative counts from the end).
    pub dim: isize,
    /// Its new sizes.
    pub sizes: Vec<isize>,
    training: bool,
}

impl Unflatten {
    /// The module splitting `dim` into `sizes`.
    pub fn new(dim: isize, sizes: &[isize]) -> Self {
        Unflatten {
            dim,
            sizes: sizes.to_vec(),
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let shape = x.shape();
        let rank = shape.len() as isize;
        let d = if self.dim < 0 {
            rank + self.dim
        } else {
            self.dim
        };
        if d < 0 || d >= rank {
            return Err(Error::invalid(
                "unflatten",
                format!(
                    "dim {} is out of range for shape {:?}",
                    self.dim,
                    shape.as_slice()
                ),
            ));
        }
        let d = d as usize;
        let known: isize = self.sizes.iter().filter(|&&s| s != -1).product();
        let free = self.sizes.iter().filter(|&&s| s == -1).count();
        let fits = match free {
            0 => known == shape[d] as isize,
            1 => known > 0 && shape[d] as isize % known == 0,
            _ => false,
        };
        if !fits || self.sizes.iter().any(|&s| s < -1) {
            return Err(Error::invalid(
                "unflatten",
                format!(
                    "provided sizes {:?} don't multiply up to the size of dim {} ({}) in the input tensor",
                    self.sizes, self.dim, shape[d]
                ),
            ));
        }
        // The free size resolved here: reshape cannot infer a -1 from an
        // input with no elements, but the dim's own size fixes it.
        let resolved = self.sizes.iter().map(|&s| {
            if s == -1 {
                shape[d] as isize / known
            } else {
                s
            }
        });
        let mut new: Vec<isize> = shape[..d].iter().map(|&s| s as isize).collect();
        new.extend(resolved);
        new.extend(shape[d + 1..].iter().map(|&s| s as isize));
        x.reshape(&new)
    }
}

/// PyTorch's input-rank rule of a padding module: `lo`-D (unbatched) or
/// `hi`-D (batched).
fn check_pad_rank(op: &'static str, x: &Tensor, (lo, hi): (usize, usize)) -> Result<()> {
    if x.rank() < lo || x.rank() > hi {
        return Err(Error::invalid(
            op,
            format!(
                "expected {lo}D or {hi}D input, got {}D input of shape {:?}",
                x.rank(),
                x.shape().as_slice()
            ),
        ));
    }
    Ok(())
}

/// Declares a padding module over `SIDES` sides (2: `[left, right]`, 4:
/// `[left, right, top, bottom]`) of an input of the ranks `RANKS`, in mode
/// `MODE`.
macro_rules! pad_module {
    ($(#[$doc:meta])* $name:ident, $sides:expr, $ranks:expr, $mode:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Module)]
        pub struct $name {
            /// `[left, right]` or `[left, right, top, bottom]`.
            pub padding: [isize; $sides],
            training: bool,
        }

        impl $name {
            /// The module padding every side by `padding`.
            pub fn uniform(padding: isize) -> Self {
                Self::with_sides([padding; $sides])
            }

            /// The module with one padding per side.
            pub fn with_sides(padding: [isize; $sides]) -> Self {
                $name {
                    padding,
                    training: true,
                }
            }

            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                check_pad_rank(stringify!($name), x, $ranks)?;
                x.pad(&self.padding, $mode)
            }
        }
    };
}

pad_module!(
    /// Zeros around the last dim (`torch.nn.ZeroPad1d`); negative pads crop.
    ZeroPad1d, 2, (2, 3), PadMode::Constant(0.0)
);
pad_module!(
    /// Zeros around the last two dims (`torch.nn.ZeroPad2d`); negative pads crop.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{Module, ZeroPad2d};
    /// let y = ZeroPad2d::with_sides([1, 2, 0, 1]).forward(&Tensor::ones(&[1, 1, 2, 2], &Device::Cpu)?)?;
    /// assert_eq!(y.shape(), [1, 1, 3, 5]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    ZeroPad2d, 4, (3, 4), PadMode::Constant(0.0)
);
pad_module!(
    /// Mirrored edges of the last dim (`torch.nn.ReflectionPad1d`).
    ReflectionPad1d, 2, (2, 3), PadMode::Reflect
);
pad_module!(
    /// Mirrored edges of the last two dims (`torch.nn.ReflectionPad2d`).
    ReflectionPad2d, 4, (3, 4), PadMode::Reflect
);
pad_module!(
    /// Repeated edges of the last dim (`torch.nn.ReplicationPad1d`).
    ReplicationPad1d, 2, (2, 3), PadMode::Replicate
);
pad_module!(
    /// Repeated edges of the last two dims (`torch.nn.ReplicationPad2d`).
    ReplicationPad2d, 4, (3, 4), PadMode::Replicate
);
pad_module!(
    /// Wrapped-around edges of the last dim (`torch.nn.CircularPad1d`).
    CircularPad1d, 2, (2, 3), PadMode::Circular
);
pad_module!(
    /// Wrapped-around edges of the last two dims (`torch.nn.CircularPad2d`).
    CircularPad2d, 4, (3, 4), PadMode::Circular
);

/// `value` around the last dim (`torch.nn.ConstantPad1d`).
#[derive(Clone, Debug, Module)]
pub struct ConstantPad1d {
    /// `[left, right]`.
    pub padding: [isize; 2],
    /// The fill value.
    pub value: f32,
    training: bool,
}

/// `value` around the last two dims (`torch.nn.ConstantPad2d`).
#[derive(Clone, Debug, Module)]
pub struct ConstantPad2d {
    /// `[left, right, top, bottom]`.
    pub padding: [isize; 4],
    /// The fill value.
    pub value: f32,
    training: bool,
}

impl ConstantPad1d {
    /// The module with `padding` and `value`.
    pub fn new(padding: [isize; 2], value: f32) -> Self {
        ConstantPad1d {
            padding,
            value,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        check_pad_rank("ConstantPad1d", x, (2, 3))?;
        x.pad(&self.padding, PadMode::Constant(self.value))
    }
}

impl ConstantPad2d {
    /// The module with `padding` and `value`.
    pub fn new(padding: [isize; 4], value: f32) -> Self {
        ConstantPad2d {
            padding,
            value,
            training: true,
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        check_pad_rank("ConstantPad2d", x, (3, 4))?;
        x.pad(&self.padding, PadMode::Constant(self.value))
    }
}
