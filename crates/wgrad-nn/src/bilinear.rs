//! [`Bilinear`]: `y = x1^T A x2 + b` (`torch.nn.Bilinear`), over
//! [`Tensor::einsum`].

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::init;

/// `y[.., o] = sum_ij x1[.., i] weight[o, i, j] x2[.., j] + bias[o]`
/// (`torch.nn.Bilinear(in1_features, in2_features, out_features, bias)`):
/// `weight` `[out, in1, in2]` and `bias` `[out]` drawn from
/// `U(-1/sqrt(in1), 1/sqrt(in1))`, as PyTorch. It takes two inputs, so it
/// is not a one-input [`Module`](crate::Module): call
/// [`forward`](Self::forward) (a model field of this type needs
/// `#[module(skip)]` or a hand-written `named_parameters`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::Bilinear;
/// let d = Device::Cpu;
/// let layer = Bilinear::new(3, 4, 5, true, &d)?;
/// let y = layer.forward(&Tensor::randn(&[2, 3], &d)?, &Tensor::randn(&[2, 4], &d)?)?;
/// assert_eq!(y.shape(), [2, 5]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub struct Bilinear {
    /// `[out_features, in1_features, in2_features]`.
    pub weight: Tensor,
    /// `[out_features]`, when the layer has one.
    pub bias: Option<Tensor>,
}

impl Bilinear {
    /// The layer with PyTorch's initialisation from the default generator.
    pub fn new(
        in1_features: usize,
        in2_features: usize,
        out_features: usize,
        bias: bool,
        device: &Device,
    ) -> Result<Self> {
        let bound = if in1_features > 0 {
            1.0 / (in1_features as f32).sqrt()
        } else {
            0.0
        };
        let weight = Tensor::zeros(&[out_features, in1_features, in2_features], device)?;
        init::uniform_(&weight, -bound, bound)?;
        let bias = if bias {
            let b = Tensor::zeros(&[out_features], device)?;
            init::uniform_(&b, -bound, bound)?;
            Some(b.with_requires_grad(true)?)
        } else {
            None
        };
        Ok(Bilinear {
            weight: weight.with_requires_grad(true)?,
            bias,
        })
    }

    /// `layer(x1, x2)`: `x1` `[*, in1]` and `x2` `[*, in2]` with the same
    /// leading dims give `[*, out]`.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        let (in1, in2) = (self.weight.shape()[1], self.weight.shape()[2]);
        let (s1, s2) = (x1.shape(), x2.shape());
        if s1.is_empty()
            || s2.is_empty()
            || s1[s1.len() - 1] != in1
            || s2[s2.len() - 1] != in2
            || s1[..s1.len() - 1] != s2[..s2.len() - 1]
        {
            return Err(Error::invalid(
                "Bilinear",
                format!(
                    "input1 {:?} and input2 {:?} must end in {in1} and {in2} features with equal leading dims",
                    s1.as_slice(),
                    s2.as_slice()
                ),
            ));
        }
        let y = Tensor::einsum("...i,oij,...j->...o", &[x1, &self.weight, x2])?;
        match &self.bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }

    /// The parameters under PyTorch's names (`weight`, `bias`).
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![("weight".to_string(), self.weight.clone())];
        if let Some(b) = &self.bias {
            out.push(("bias".to_string(), b.clone()));
        }
        out
    }
}
