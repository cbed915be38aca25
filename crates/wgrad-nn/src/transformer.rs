//! [`TransformerEncoderLayer`] and [`TransformerDecoderLayer`]
//! (`torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer`):
//! attention, a two-layer feed-forward block, layer norms, dropout and
//! residual connections, post-norm by default or pre-norm (`norm_first`),
//! with PyTorch's parameter names.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{DType, Result};

use crate::Module;
use crate::attention::{AttentionOptions, MultiheadAttention};
use crate::dropout::Dropout;
use crate::layer_norm::LayerNorm;
use crate::linear::Linear;

/// The feed-forward block's activation (PyTorch's `activation="relu"` /
/// `"gelu"`; gelu is the exact, erf form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `relu` (PyTorch's default).
    Relu,
    /// `gelu`.
    Gelu,
}

/// The sizes and switches of a transformer layer, PyTorch's constructor
/// arguments with its defaults ([`TransformerOptions::new`]).
#[derive(Clone, Copy, Debug)]
pub struct TransformerOptions {
    /// `d_model`.
    pub d_model: usize,
    /// `nhead`.
    pub nhead: usize,
    /// `dim_feedforward` (default 2048).
    pub dim_feedforward: usize,
    /// `dropout` (default 0.1), for attention weights and every block.
    pub dropout: f32,
    /// `activation` (default relu).
    pub activation: Activation,
    /// `layer_norm_eps` (default 1e-5).
    pub layer_norm_eps: f32,
    /// `batch_first` (default false: `[T, N, E]`).
    pub batch_first: bool,
    /// `norm_first` (default false: post-norm).
    pub norm_first: bool,
    /// `bias` (default true) for the linear layers and norms.
    pub bias: bool,
}

impl TransformerOptions {
    /// PyTorch's defaults for `d_model` and `nhead`.
    pub fn new(d_model: usize, nhead: usize) -> Self {
        TransformerOptions {
            d_model,
            nhead,
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: Activation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// The feed-forward block, `linear2(dropout(activation(linear1(x))))`.
/// Its layers are fields of each transformer layer, as in PyTorch, so that
/// they are named `linear1.weight`, not `ff.linear1.weight`.
fn feed_forward(
    linear1: &Linear,
    activation: Activation,
    dropout: &Dropout,
    linear2: &Linear,
    x: &Tensor,
) -> Result<Tensor> {
    let h = linear1.forward(x)?;
    let h = match activation {
        Activation::Relu => h.relu()?,
        Activation::Gelu => h.gelu()?,
    };
    linear2.forward(&dropout.forward(&h)?)
}

/// `nn.Transformer.generate_square_subsequent_mask(size)`: the additive
/// causal mask `[size, size]`, `-inf` above the diagonal and 0 on and
/// below it, for `is_causal` layers and `MultiheadAttention`.
pub fn generate_square_subsequent_mask(size: usize, device: &Device) -> Result<Tensor> {
    Tensor::full(&[size, size], f64::NEG_INFINITY, DType::F32, device)?.triu(1)
}

/// A layer's LayerNorm: without a shift under `bias = false`, as PyTorch
/// passes `bias` to the norms too.
fn norm(o: &TransformerOptions, device: &Device) -> Result<LayerNorm> {
    Ok(LayerNorm::new(&[o.d_model], o.layer_norm_eps, true, device)?.with_bias(o.bias))
}

/// Masks of one attention call.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerMasks<'a> {
    /// `attn_mask` (`[T, S]` or `[N * nhead, T, S]`; boolean true = not
    /// allowed, or additive float).
    pub mask: Option<&'a Tensor>,
    /// `key_padding_mask` (`[N, S]`; boolean true = padding).
    pub key_padding_mask: Option<&'a Tensor>,
    /// PyTorch's hint that `mask` is causal; an error without `mask`.
    pub is_causal: bool,
}

impl LayerMasks<'_> {
    fn options(&self) -> AttentionOptions<'_> {
        AttentionOptions {
            key_padding_mask: self.key_padding_mask,
            need_weights: false,
            attn_mask: self.mask,
            average_attn_weights: true,
            is_causal: self.is_causal,
        }
    }
}

/// `torch.nn.TransformerEncoderLayer`: self-attention then feed-forward.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, TransformerEncoderLayer, TransformerOptions};
/// let mut options = TransformerOptions::new(8, 2);
/// options.dim_feedforward = 16;
/// options.batch_first = true;
/// let layer = TransformerEncoderLayer::new(&options, &Device::Cpu)?;
/// let x = Tensor::randn(&[2, 5, 8], &Device::Cpu)?;
/// assert_eq!(layer.forward(&x)?.shape(), [2, 5, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct TransformerEncoderLayer {
    /// `self_attn`.
    pub self_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    #[module(skip)]
    activation: Activation,
    /// `norm1`.
    pub norm1: LayerNorm,
    /// `norm2`.
    pub norm2: LayerNorm,
    dropout1: Dropout,
    dropout2: Dropout,
    norm_first: bool,
    training: bool,
}

impl TransformerEncoderLayer {
    /// A layer initialised as PyTorch's (see [`TransformerOptions`]).
    pub fn new(o: &TransformerOptions, device: &Device) -> Result<Self> {
        Ok(TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(
                o.d_model,
                o.nhead,
                o.dropout,
                o.bias,
                o.batch_first,
                device,
            )?,
            linear1: Linear::new(o.d_model, o.dim_feedforward, o.bias, device)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::new(o.dim_feedforward, o.d_model, o.bias, device)?,
            activation: o.activation,
            norm1: norm(o, device)?,
            norm2: norm(o, device)?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            norm_first: o.norm_first,
            training: true,
        })
    }

    /// PyTorch's `forward(src, src_mask, src_key_padding_mask, is_causal)`.
    pub fn forward_masked(&self, src: &Tensor, masks: &LayerMasks) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self
                .self_attn
                .forward_attention(x, x, x, &masks.options())?;
            self.dropout1.forward(&y)
        };
        let ff = |x: &Tensor| {
            let y = feed_forward(
                &self.linear1,
                self.activation,
                &self.dropout,
                &self.linear2,
                x,
            )?;
            self.dropout2.forward(&y)
        };
        if self.norm_first {
            let x = src.add(&sa(&self.norm1.forward(src)?)?)?;
            x.add(&ff(&self.norm2.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&src.add(&sa(src)?)?)?;
            self.norm2.forward(&x.add(&ff(&x)?)?)
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, &LayerMasks::default())
    }
}

/// `torch.nn.TransformerDecoderLayer`: self-attention, attention over the
/// encoder's memory, then feed-forward.
///
/// As a [`Module`], `forward(x)` decodes `x` with itself as the memory
/// (PyTorch's layer needs a memory; use
/// [`forward_masked`](Self::forward_masked)).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{LayerMasks, Module, TransformerDecoderLayer, TransformerOptions};
/// let mut options = TransformerOptions::new(8, 2);
/// options.dim_feedforward = 16;
/// let layer = TransformerDecoderLayer::new(&options, &Device::Cpu)?;
/// let tgt = Tensor::randn(&[4, 2, 8], &Device::Cpu)?; // [T, N, E]
/// let memory = Tensor::randn(&[6, 2, 8], &Device::Cpu)?;
/// let none = LayerMasks::default();
/// assert_eq!(layer.forward_masked(&tgt, &memory, &none, &none)?.shape(), [4, 2, 8]);
/// assert_eq!(layer.forward(&tgt)?.shape(), [4, 2, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct TransformerDecoderLayer {
    /// `self_attn`.
    pub self_attn: MultiheadAttention,
    /// `multihead_attn` (over the memory).
    pub multihead_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    #[module(skip)]
    activation: Activation,
    /// `norm1`.
    pub norm1: LayerNorm,
    /// `norm2`.
    pub norm2: LayerNorm,
    /// `norm3`.
    pub norm3: LayerNorm,
    dropouts: [Dropout; 3],
    norm_first: bool,
    training: bool,
}

impl TransformerDecoderLayer {
    /// A layer initialised as PyTorch's (see [`TransformerOptions`]).
    pub fn new(o: &TransformerOptions, device: &Device) -> Result<Self> {
        let attn = || {
            MultiheadAttention::new(o.d_model, o.nhead, o.dropout, o.bias, o.batch_first, device)
        };
        Ok(TransformerDecoderLayer {
            self_attn: attn()?,
            multihead_attn: attn()?,
            linear1: Linear::new(o.d_model, o.dim_feedforward, o.bias, device)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::new(o.dim_feedforward, o.d_model, o.bias, device)?,
            activation: o.activation,
            norm1: norm(o, device)?,
            norm2: norm(o, device)?,
            norm3: norm(o, device)?,
            dropouts: [
                Dropout::new(o.dropout)?,
                Dropout::new(o.dropout)?,
                Dropout::new(o.dropout)?,
            ],
            norm_first: o.norm_first,
            training: true,
        })
    }

    /// PyTorch's `forward(tgt, memory, tgt_mask, memory_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
    /// memory_is_causal)`, the masks grouped per attention.
    pub fn forward_masked(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        tgt_masks: &LayerMasks,
        memory_masks: &LayerMasks,
    ) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self
                .self_attn
                .forward_attention(x, x, x, &tgt_masks.options())?;
            self.dropouts[0].forward(&y)
        };
        let mha = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self.multihead_attn.forward_attention(
                x,
                memory,
                memory,
                &memory_masks.options(),
            )?;
            self.dropouts[1].forward(&y)
        };
        let ff = |x: &Tensor| {
            let y = feed_forward(
                &self.linear1,
                self.activation,
                &self.dropout,
                &self.linear2,
                x,
            )?;
            self.dropouts[2].forward(&y)
        };
        if self.norm_first {
            let x = tgt.add(&sa(&self.norm1.forward(tgt)?)?)?;
            let x = x.add(&mha(&self.norm2.forward(&x)?)?)?;
            x.add(&ff(&self.norm3.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&tgt.add(&sa(tgt)?)?)?;
            let x = self.norm2.forward(&x.add(&mha(&x)?)?)?;
            self.norm3.forward(&x.add(&ff(&x)?)?)
        }
    }

    /// Decoding `x` with itself as the memory.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, x, &LayerMasks::default(), &LayerMasks::default())
    }
}
