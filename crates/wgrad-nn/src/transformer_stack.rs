//! The stacks: [`TransformerEncoder`], [`TransformerDecoder`]
//! (`torch.nn.TransformerEncoder` / `TransformerDecoder`: `num_layers`
//! layers, then an optional final norm) and [`Transformer`]
//! (`torch.nn.Transformer`: an encoder and a decoder stack, each with a
//! final LayerNorm), with PyTorch's state_dict names (`layers.0.self_attn
//! .in_proj_weight`, `encoder.norm.weight`, ...).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::layer_norm::LayerNorm;
use crate::transformer::{
    LayerMasks, TransformerDecoderLayer, TransformerEncoderLayer, TransformerOptions,
};

/// `num_layers` layers from `make_layer`.
fn build_layers<L>(make_layer: impl FnMut() -> Result<L>, num_layers: usize) -> Result<Vec<L>> {
    let mut make_layer = make_layer;
    (0..num_layers).map(|_| make_layer()).collect()
}

/// `layers`, or an error naming the stack `op` when there are none.
fn non_empty<L>(op: &'static str, layers: Vec<L>) -> Result<Vec<L>> {
    if layers.is_empty() {
        return Err(Error::invalid(op, "num_layers must be at least 1"));
    }
    Ok(layers)
}

/// `torch.nn.TransformerEncoder(encoder_layer, num_layers, norm)`: layers
/// built by `make_layer` (PyTorch deep-copies one layer, so every layer
/// starts with the same weights; call [`TransformerEncoder::from_layers`]
/// with copies for that), then `norm`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, TransformerEncoder, TransformerEncoderLayer, TransformerOptions};
/// let mut o = TransformerOptions::new(8, 2);
/// o.dim_feedforward = 16;
/// o.batch_first = true;
/// let d = Device::Cpu;
/// let enc = TransformerEncoder::new(|| TransformerEncoderLayer::new(&o, &d), 2, None)?;
/// assert_eq!(enc.forward(&Tensor::randn(&[2, 5, 8], &d)?)?.shape(), [2, 5, 8]);
/// assert_eq!(enc.named_parameters()[0].0, "layers.0.self_attn.in_proj_weight");
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct TransformerEncoder {
    /// The layers, named `layers.0`, `layers.1`, ...
    pub layers: Vec<TransformerEncoderLayer>,
    /// The final norm (`norm.weight`, `norm.bias`), if any.
    pub norm: Option<LayerNorm>,
    training: bool,
}

impl TransformerEncoder {
    /// `num_layers` layers from `make_layer`, then `norm`.
    pub fn new(
        make_layer: impl FnMut() -> Result<TransformerEncoderLayer>,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        Self::from_layers(build_layers(make_layer, num_layers)?, norm)
    }

    /// The stack of the given layers.
    pub fn from_layers(
        layers: Vec<TransformerEncoderLayer>,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        Ok(TransformerEncoder {
            layers: non_empty("TransformerEncoder", layers)?,
            norm,
            training: true,
        })
    }

    /// PyTorch's `forward(src, mask, src_key_padding_mask, is_causal)`.
    pub fn forward_masked(&self, src: &Tensor, masks: &LayerMasks) -> Result<Tensor> {
        let mut x = src.clone();
        for layer in &self.layers {
            x = layer.forward_masked(&x, masks)?;
        }
        match &self.norm {
            Some(norm) => norm.forward(&x),
            None => Ok(x),
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, &LayerMasks::default())
    }
}

/// `torch.nn.TransformerDecoder(decoder_layer, num_layers, norm)`, built
/// as [`TransformerEncoder`]; as a [`Module`], `forward(x)` decodes `x`
/// with itself as the memory.
#[derive(Module)]
pub struct TransformerDecoder {
    /// The layers, named `layers.0`, `layers.1`, ...
    pub layers: Vec<TransformerDecoderLayer>,
    /// The final norm, if any.
    pub norm: Option<LayerNorm>,
    training: bool,
}

impl TransformerDecoder {
    /// `num_layers` layers from `make_layer`, then `norm`.
    pub fn new(
        make_layer: impl FnMut() -> Result<TransformerDecoderLayer>,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        Self::from_layers(build_layers(make_layer, num_layers)?, norm)
    }

    /// The stack of the given layers.
    pub fn from_layers(
        layers: Vec<TransformerDecoderLayer>,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        Ok(TransformerDecoder {
            layers: non_empty("TransformerDecoder", layers)?,
            norm,
            training: true,
        })
    }

    /// PyTorch's `forward(tgt, memory, tgt_mask, memory_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask, ...)`, the masks
    /// grouped per attention.
    pub fn forward_masked(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        tgt_masks: &LayerMasks,
        memory_masks: &LayerMasks,
    ) -> Result<Tensor> {
        let mut x = tgt.clone();
        for layer in &self.layers {
            x = layer.forward_masked(&x, memory, tgt_masks, memory_masks)?;
        }
        match &self.norm {
            Some(norm) => norm.forward(&x),
            None => Ok(x),
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, x, &LayerMasks::default(), &LayerMasks::default())
    }
}

/// `torch.nn.Transformer`: an encoder of `num_encoder_layers` and a
/// decoder of `num_decoder_layers` layers with the options' sizes, each
/// stack ending in a LayerNorm (`encoder.norm`, `decoder.norm`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{LayerMasks, Transformer, TransformerOptions, generate_square_subsequent_mask};
/// let mut o = TransformerOptions::new(8, 2);
/// o.dim_feedforward = 16;
/// o.batch_first = true;
/// let d = Device::Cpu;
/// let model = Transformer::new(&o, 2, 1, &d)?;
/// let (src, tgt) = (Tensor::randn(&[2, 6, 8], &d)?, Tensor::randn(&[2, 4, 8], &d)?);
/// let causal = generate_square_subsequent_mask(4, &d)?;
/// let tgt_masks = LayerMasks { mask: Some(&causal), ..LayerMasks::default() };
/// let y = model.forward_seq2seq(&src, &tgt, &LayerMasks::default(), &tgt_masks, &LayerMasks::default())?;
/// assert_eq!(y.shape(), [2, 4, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct Transformer {
    /// The encoder stack.
    pub encoder: TransformerEncoder,
    /// The decoder stack.
    pub decoder: TransformerDecoder,
    training: bool,
}

impl Transformer {
    /// `nn.Transformer(d_model, nhead, num_encoder_layers,
    /// num_decoder_layers, dim_feedforward, dropout, activation, ...)`, the
    /// per-layer settings from `options`.
    pub fn new(
        options: &TransformerOptions,
        num_encoder_layers: usize,
        num_decoder_layers: usize,
        device: &Device,
    ) -> Result<Self> {
        let norm = || -> Result<LayerNorm> {
            Ok(
                LayerNorm::new(&[options.d_model], options.layer_norm_eps, true, device)?
                    .with_bias(options.bias),
            )
        };
        let encoder = TransformerEncoder::new(
            || TransformerEncoderLayer::new(options, device),
            num_encoder_layers,
            Some(norm()?),
        )?;
        let decoder = TransformerDecoder::new(
            || TransformerDecoderLayer::new(options, device),
            num_decoder_layers,
            Some(norm()?),
        )?;
        Ok(Transformer {
            encoder,
            decoder,
            training: true,
        })
    }

    /// PyTorch's `forward(src, tgt, src_mask, tgt_mask, memory_mask,
    /// src_key_padding_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask)`: the source's masks for the encoder, the
    /// target's for the decoder's self-attention, the memory's for its
    /// attention over the encoder output.
    pub fn forward_seq2seq(
        &self,
        src: &Tensor,
        tgt: &Tensor,
        src_masks: &LayerMasks,
        tgt_masks: &LayerMasks,
        memory_masks: &LayerMasks,
    ) -> Result<Tensor> {
        let memory = self.encoder.forward_masked(src, src_masks)?;
        self.decoder
            .forward_masked(tgt, &memory, tgt_masks, memory_masks)
    }

    /// `forward_seq2seq(x, x, ..)` without masks.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let none = LayerMasks::default();
        self.forward_seq2seq(x, x, &none, &none, &none)
    }
}
