//! [`GroupNorm`] and [`group_norm`] (`torch.nn.GroupNorm`,
//! `torch.nn.functional.group_norm`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;

/// Normalises each sample's channels in `num_groups` groups: `x` `[N, C, ..]`
/// is viewed as `[N, G, C/G * ..]`, each group is shifted by its mean and
/// divided by `sqrt(biased variance + eps)`, then `weight`/`bias` (`[C]`)
/// scale and shift per channel. `C` must divide by `num_groups`.
pub fn group_norm(
    x: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f32,
) -> Result<Tensor> {
    const OP: &str = "group_norm";
    // Autocast runs the norms in float32 (a no-op outside a region).
    let x = &wgrad_autograd::autocast::full_precision(x)?;
    let mixed = [weight, bias]
        .into_iter()
        .flatten()
        .any(|t| t.dtype() != x.dtype());
    if x.dtype().is_half() && mixed {
        // A 16-bit input with F32 parameters: computed in F32, the output
        // in the input's dtype (PyTorch's mixed-dtype group norm).
        return group_norm(&x.float()?, num_groups, weight, bias, eps)?.cast(x.dtype());
    }
    let shape = x.shape();
    if shape.len() < 2 {
        return Err(Error::invalid(
            OP,
            format!("expected an input [N, C, ..] with at least 2 dims, got shape {shape:?}"),
        ));
    }
    let (n, c) = (shape[0], shape[1]);
    if num_groups == 0 || !c.is_multiple_of(num_groups) {
        return Err(Error::invalid(
            OP,
            format!(
                "expected the number of channels ({c}) to be divisible by num_groups ({num_groups})"
            ),
        ));
    }
    for (what, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t
            && t.shape() != [c]
        {
            return Err(Error::invalid(
                OP,
                format!("{what} must have shape [{c}], got {:?}", t.shape()),
            ));
        }
    }
    // PyTorch's F.group_norm checks the [N * C / G, G, *spatial] view as a
    // batch norm would: one value per group in all is its error.
    let spatial: usize = shape[2..].iter().product();
    let per_group = c / num_groups * spatial;
    if n * per_group == 1 {
        return Err(Error::invalid(
            OP,
            format!(
                "Expected more than 1 value per channel when training, got input size {shape:?}"
            ),
        ));
    }
    // Explicit sizes: a -1 cannot be inferred from an empty batch.
    let grouped = x.reshape(&[n as isize, num_groups as isize, per_group as isize])?;
    let mean = grouped.mean(&[2], true)?;
    let var = grouped.var(&[2], 0, true)?;
    let normalised = grouped
        .sub(&mean)?
        .div(&var.add_scalar(eps)?.sqrt()?)?
        .reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
    let mut per_channel = vec![1isize; shape.len()];
    per_channel[1] = c as isize;
    let mut y = normalised;
    if let Some(w) = weight {
        y = y.mul(&w.reshape(&per_channel)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&b.reshape(&per_channel)?)?;
    }
    Ok(y)
}

/// `torch.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)`:
/// [`group_norm`] with learnable per-channel `weight` (ones) and `bias`
/// (zeros) when affine. The same in training and evaluation.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{GroupNorm, Module};
/// let norm = GroupNorm::new(2, 6, 1e-5, true, &Device::Cpu)?;
/// let y = norm.forward(&Tensor::randn(&[3, 6, 4, 4], &Device::Cpu)?)?;
/// assert_eq!(y.shape(), [3, 6, 4, 4]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct GroupNorm {
    num_groups: usize,
    num_channels: usize,
    eps: f32,
    /// Per-channel scale `[C]`, when affine.
    pub weight: Option<Tensor>,
    /// Per-channel shift `[C]`, when affine.
    pub bias: Option<Tensor>,
    training: bool,
}

impl GroupNorm {
    /// A layer of `num_groups` groups over `num_channels` channels.
    pub fn new(
        num_groups: usize,
        num_channels: usize,
        eps: f32,
        affine: bool,
        device: &Device,
    ) -> Result<Self> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::invalid(
                "GroupNorm",
                format!(
                    "num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
                ),
            ));
        }
        let (weight, bias) = if affine {
            (
                Some(Tensor::ones(&[num_channels], device)?.with_requires_grad(true)?),
                Some(Tensor::zeros(&[num_channels], device)?.with_requires_grad(true)?),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            num_groups,
            num_channels,
            eps,
            weight,
            bias,
            training: true,
        })
    }

    /// The number of groups.
    pub fn num_groups(&self) -> usize {
        self.num_groups
    }

    /// The number of channels.
    pub fn num_channels(&self) -> usize {
        self.num_channels
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.shape().get(1) != Some(&self.num_channels) {
            return Err(Error::invalid(
                "GroupNorm",
                format!(
                    "expected {} channels (axis 1), got input shape {:?}",
                    self.num_channels,
                    x.shape()
                ),
            ));
        }
        group_norm(
            x,
            self.num_groups,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}
