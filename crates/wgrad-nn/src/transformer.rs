//! [`TransformerEncoderLayer`] and [`TransformerDecoderLayer`]
//! (`torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer`):
//! attention, a two-layer feed-forward block, layer norms, dropout and
//! residual connections, post-norm by default or pre-norm (`norm_first`),
//! with PyTorch's parameter names.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::Result;

use crate::attention::{AttentionOptions, MultiheadAttention};
use crate::dropout::Dropout;
use crate::layer_norm::LayerNorm;
use crate::linear::Linear;
use crate::module::Module;

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

/// The parts every layer has: the feed-forward block and its dropouts.
struct FeedForward {
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    activation: Activation,
}

impl FeedForward {
    fn new(o: &TransformerOptions, device: &Device) -> Result<Self> {
        Ok(FeedForward {
            linear1: Linear::new(o.d_model, o.dim_feedforward, o.bias, device)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::new(o.dim_feedforward, o.d_model, o.bias, device)?,
            activation: o.activation,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.linear1.forward(x)?;
        let h = match self.activation {
            Activation::Relu => h.relu()?,
            Activation::Gelu => h.gelu()?,
        };
        self.linear2.forward(&self.dropout.forward(&h)?)
    }

    fn train(&mut self, on: bool) {
        self.linear1.train(on);
        self.dropout.train(on);
        self.linear2.train(on);
    }

    fn move_to(&mut self, device: &Device) -> Result<()> {
        self.linear1.to_device(device)?;
        self.linear2.to_device(device)
    }
}

fn norm(o: &TransformerOptions, device: &Device) -> Result<LayerNorm> {
    LayerNorm::new(&[o.d_model], o.layer_norm_eps, true, device)
}

/// Prefixes every name of `m`'s parameters with `prefix.`.
fn prefixed(out: &mut Vec<(String, Tensor)>, prefix: &str, m: &dyn Module) {
    out.extend(
        m.named_parameters()
            .into_iter()
            .map(|(n, t)| (format!("{prefix}.{n}"), t)),
    );
}

/// Masks of one attention call.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerMasks<'a> {
    /// `attn_mask` (`[T, S]` or `[N * nhead, T, S]`; boolean true = not
    /// allowed, or additive float).
    pub mask: Option<&'a Tensor>,
    /// `key_padding_mask` (`[N, S]`; boolean true = padding).
    pub key_padding_mask: Option<&'a Tensor>,
    /// Causal self-attention (a hint when `mask` is given).
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
pub struct TransformerEncoderLayer {
    /// `self_attn`.
    pub self_attn: MultiheadAttention,
    ff: FeedForward,
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
            ff: FeedForward::new(o, device)?,
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
        let ff = |x: &Tensor| self.dropout2.forward(&self.ff.forward(x)?);
        if self.norm_first {
            let x = src.add(&sa(&self.norm1.forward(src)?)?)?;
            x.add(&ff(&self.norm2.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&src.add(&sa(src)?)?)?;
            self.norm2.forward(&x.add(&ff(&x)?)?)
        }
    }
}

impl Module for TransformerEncoderLayer {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, &LayerMasks::default())
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        prefixed(&mut out, "self_attn", &self.self_attn);
        prefixed(&mut out, "linear1", &self.ff.linear1);
        prefixed(&mut out, "linear2", &self.ff.linear2);
        prefixed(&mut out, "norm1", &self.norm1);
        prefixed(&mut out, "norm2", &self.norm2);
        out
    }

    fn train(&mut self, on: bool) {
        self.training = on;
        self.self_attn.train(on);
        self.ff.train(on);
        self.norm1.train(on);
        self.norm2.train(on);
        self.dropout1.train(on);
        self.dropout2.train(on);
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.self_attn.to_device(device)?;
        self.ff.move_to(device)?;
        self.norm1.to_device(device)?;
        self.norm2.to_device(device)
    }
}

/// `torch.nn.TransformerDecoderLayer`: self-attention, attention over the
/// encoder's memory, then feed-forward.
pub struct TransformerDecoderLayer {
    /// `self_attn`.
    pub self_attn: MultiheadAttention,
    /// `multihead_attn` (over the memory).
    pub multihead_attn: MultiheadAttention,
    ff: FeedForward,
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
            ff: FeedForward::new(o, device)?,
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
        let ff = |x: &Tensor| self.dropouts[2].forward(&self.ff.forward(x)?);
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
}

impl Module for TransformerDecoderLayer {
    /// Decoding `x` with itself as the memory (PyTorch's layer needs a
    /// memory; use [`TransformerDecoderLayer::forward_masked`]).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, x, &LayerMasks::default(), &LayerMasks::default())
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        prefixed(&mut out, "self_attn", &self.self_attn);
        prefixed(&mut out, "multihead_attn", &self.multihead_attn);
        prefixed(&mut out, "linear1", &self.ff.linear1);
        prefixed(&mut out, "linear2", &self.ff.linear2);
        prefixed(&mut out, "norm1", &self.norm1);
        prefixed(&mut out, "norm2", &self.norm2);
        prefixed(&mut out, "norm3", &self.norm3);
        out
    }

    fn train(&mut self, on: bool) {
        self.training = on;
        self.self_attn.train(on);
        self.multihead_attn.train(on);
        self.ff.train(on);
        for n in [&mut self.norm1, &mut self.norm2, &mut self.norm3] {
            n.train(on);
        }
        for d in &mut self.dropouts {
            d.train(on);
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.self_attn.to_device(device)?;
        self.multihead_attn.to_device(device)?;
        self.ff.move_to(device)?;
        self.norm1.to_device(device)?;
        self.norm2.to_device(device)?;
        self.norm3.to_device(device)
    }
}
