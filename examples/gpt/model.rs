//! A nanoGPT-shaped character model: token and position embeddings,
//! pre-norm blocks (causal self-attention through the fused
//! `scaled_dot_product_attention`, GELU MLP), a final LayerNorm and a head
//! tied to the token embedding. The structs are nanoGPT's, field for field,
//! so `#[derive(Module)]` gives the parameters nanoGPT's names
//! (`transformer.h.0.attn.c_attn.weight`, ...); the state_dict also holds
//! `lm_head.weight`, the same tensor as `transformer.wte.weight`, as
//! PyTorch's does.
#![allow(dead_code)]

use wgrad::nn::{Dropout, Embedding, LayerNorm, Linear, Module, init};
use wgrad::prelude::*;

/// The model's sizes.
#[derive(Clone, Copy, Debug)]
pub struct GptConfig {
    pub vocab_size: usize,
    pub block_size: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_embd: usize,
    pub dropout: f32,
}

/// Multi-head causal self-attention.
#[derive(Module)]
struct CausalSelfAttention {
    /// Query, key and value projections in one.
    c_attn: Linear,
    c_proj: Linear,
    resid_dropout: Dropout,
    n_head: usize,
    dropout: f32,
    training: bool,
}

impl CausalSelfAttention {
    fn new(c: &GptConfig, device: &Device) -> Result<Self> {
        let e = c.n_embd;
        Ok(CausalSelfAttention {
            c_attn: Linear::new(e, 3 * e, true, device)?,
            c_proj: Linear::new(e, e, true, device)?,
            resid_dropout: Dropout::new(c.dropout)?,
            n_head: c.n_head,
            dropout: c.dropout,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, e) = (x.shape()[0] as isize, x.shape()[1] as isize, x.shape()[2]);
        let h = self.n_head as isize;
        let heads = |y: Tensor| y.reshape(&[b, t, h, e as isize / h])?.transpose(1, 2);
        let qkv = self.c_attn.forward(x)?.split(e, -1)?;
        let (q, k, v) = (
            heads(qkv[0].clone())?,
            heads(qkv[1].clone())?,
            heads(qkv[2].clone())?,
        );
        let p = if self.training {
            f64::from(self.dropout)
        } else {
            0.0
        };
        let y = q.scaled_dot_product_attention(&k, &v, None, p, true, None)?;
        let y = y.transpose(1, 2)?.reshape(&[b, t, e as isize])?;
        self.resid_dropout.forward(&self.c_proj.forward(&y)?)
    }
}

/// The feed-forward part: expand 4x, GELU, project back.
#[derive(Module)]
struct Mlp {
    c_fc: Linear,
    c_proj: Linear,
    dropout: Dropout,
}

impl Mlp {
    fn new(c: &GptConfig, device: &Device) -> Result<Self> {
        Ok(Mlp {
            c_fc: Linear::new(c.n_embd, 4 * c.n_embd, true, device)?,
            c_proj: Linear::new(4 * c.n_embd, c.n_embd, true, device)?,
            dropout: Dropout::new(c.dropout)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.c_fc.forward(x)?.gelu()?;
        self.dropout.forward(&self.c_proj.forward(&h)?)
    }
}

/// A pre-norm transformer block.
#[derive(Module)]
struct Block {
    ln_1: LayerNorm,
    attn: CausalSelfAttention,
    ln_2: LayerNorm,
    mlp: Mlp,
}

impl Block {
    fn new(c: &GptConfig, device: &Device) -> Result<Self> {
        Ok(Block {
            ln_1: LayerNorm::new(&[c.n_embd], 1e-5, true, device)?,
            attn: CausalSelfAttention::new(c, device)?,
            ln_2: LayerNorm::new(&[c.n_embd], 1e-5, true, device)?,
            mlp: Mlp::new(c, device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = x.add(&self.attn.forward(&self.ln_1.forward(x)?)?)?;
        x.add(&self.mlp.forward(&self.ln_2.forward(&x)?)?)
    }
}

/// nanoGPT's `transformer` ModuleDict.
#[derive(Module)]
#[module(forward = hidden_states)]
struct Transformer {
    wte: Embedding,
    wpe: Embedding,
    drop: Dropout,
    h: Vec<Block>,
    ln_f: LayerNorm,
}

impl Transformer {
    /// The final hidden states `[B, T, n_embd]` for token ids `[B, T]`.
    fn hidden_states(&self, idx: &Tensor) -> Result<Tensor> {
        let t = idx.shape()[1];
        let tok = self.wte.forward(idx)?;
        let pos = self.wpe.weight.narrow(0, 0, t)?;
        let mut x = self.drop.forward(&tok.add(&pos)?)?;
        for block in &self.h {
            x = block.forward(&x)?;
        }
        self.ln_f.forward(&x)
    }
}

/// The model.
pub struct Gpt {
    pub config: GptConfig,
    transformer: Transformer,
}

impl Gpt {
    /// nanoGPT's initialisation: N(0, 0.02) weights, zero biases, the
    /// residual projections at 0.02 / sqrt(2 * n_layer).
    pub fn new(config: GptConfig, device: &Device) -> Result<Gpt> {
        let c = &config;
        let gpt = Gpt {
            transformer: Transformer {
                wte: Embedding::new(c.vocab_size, c.n_embd, device)?,
                wpe: Embedding::new(c.block_size, c.n_embd, device)?,
                drop: Dropout::new(c.dropout)?,
                h: (0..c.n_layer)
                    .map(|_| Block::new(c, device))
                    .collect::<Result<_>>()?,
                ln_f: LayerNorm::new(&[c.n_embd], 1e-5, true, device)?,
            },
            config,
        };
        let proj_std = 0.02 / (2.0 * c.n_layer as f32).sqrt();
        for (name, p) in gpt.named_parameters() {
            if name.ends_with("c_proj.weight") {
                init::normal_(&p, 0.0, proj_std)?;
            } else if name.ends_with(".bias") && !name.contains("ln_") {
                init::zeros_(&p)?;
            } else if !name.contains("ln_") {
                init::normal_(&p, 0.0, 0.02)?;
            }
        }
        Ok(gpt)
    }

    /// Logits `[B, T, vocab]` for token ids `[B, T]` (I32).
    pub fn logits(&self, idx: &Tensor) -> Result<Tensor> {
        let t = idx.shape()[1];
        if t > self.config.block_size {
            return Err(Error::invalid(
                "gpt",
                format!(
                    "sequence of {t} tokens exceeds block size {}",
                    self.config.block_size
                ),
            ));
        }
        let x = self.transformer.hidden_states(idx)?;
        // The head shares the token embedding's weight (weight tying).
        x.matmul_t(&self.transformer.wte.weight, false, true)
    }

    /// Mean cross-entropy of the next-token predictions.
    pub fn loss(&self, idx: &Tensor, targets: &Tensor) -> Result<Tensor> {
        let logits = self.logits(idx)?;
        let v = self.config.vocab_size as isize;
        wgrad::nn::loss::cross_entropy(
            &logits.reshape(&[-1, v])?,
            &targets.reshape(&[-1])?,
            Default::default(),
        )
    }

    /// Parameters that get weight decay (matrices and embeddings) and
    /// those that do not (biases and norms), nanoGPT's two groups.
    pub fn decay_groups(&self) -> (Vec<Tensor>, Vec<Tensor>) {
        self.parameters().into_iter().partition(|p| p.rank() >= 2)
    }

    /// Appends `max_new` tokens to `idx` `[1, T]`, each sampled from the
    /// softmax of the last logits divided by `temperature`, restricted to
    /// the `top_k` most likely when given. Stays on the device until the
    /// caller reads the result.
    pub fn generate(
        &self,
        idx: &Tensor,
        max_new: usize,
        temperature: f32,
        top_k: Option<usize>,
    ) -> Result<Tensor> {
        let _guard = wgrad::no_grad();
        let mut idx = idx.clone();
        for _ in 0..max_new {
            let t = idx.shape()[1];
            let start = t.saturating_sub(self.config.block_size);
            let context = idx.narrow(1, start, t - start)?;
            let logits = self.logits(&context)?;
            let last = logits.select(1, -1)?.mul_scalar(1.0 / temperature)?;
            let last = match top_k {
                Some(k) if k < self.config.vocab_size => {
                    let (values, _) = last.topk(k, -1, true, true)?;
                    let kth = values.narrow(-1, k - 1, 1)?;
                    let below = last.lt(&kth)?;
                    last.masked_fill(&below, f64::NEG_INFINITY)?
                }
                _ => last,
            };
            let next = last.softmax(-1)?.multinomial(1, false)?;
            idx = Tensor::cat(&[&idx, &next], 1)?;
        }
        Ok(idx)
    }
}

/// Written out (the parts are derived) for the tied head: parameters are
/// listed once, as `model.named_parameters()` lists them in PyTorch, while
/// the state_dict names the shared tensor twice, `lm_head.weight` included,
/// as nanoGPT's `state_dict()` does.
impl Module for Gpt {
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        self.logits(idx)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        prefixed("transformer", self.transformer.named_parameters())
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        prefixed("transformer", self.transformer.named_buffers())
    }

    fn named_state(&self) -> Vec<(String, Tensor)> {
        let mut state = prefixed("transformer", self.transformer.named_state());
        state.push((
            "lm_head.weight".to_string(),
            self.transformer.wte.weight.clone(),
        ));
        state
    }

    fn train(&mut self, on: bool) {
        self.transformer.train(on);
    }

    fn is_training(&self) -> bool {
        self.transformer.is_training()
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.transformer.to_device(device)
    }
}

fn prefixed(prefix: &str, named: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    named
        .into_iter()
        .map(|(name, t)| (format!("{prefix}.{name}"), t))
        .collect()
}

/// nanoGPT's learning rate: linear warm-up over `warmup` steps, then
/// cosine decay to `min_lr` at `decay_steps`, `min_lr` after.
pub fn lr_at(step: usize, max_lr: f64, min_lr: f64, warmup: usize, decay_steps: usize) -> f64 {
    if step < warmup {
        return max_lr * (step + 1) as f64 / (warmup + 1) as f64;
    }
    if step > decay_steps {
        return min_lr;
    }
    let ratio = (step - warmup) as f64 / (decay_steps - warmup).max(1) as f64;
    let coeff = 0.5 * (1.0 + (std::f64::consts::PI * ratio).cos());
    min_lr + coeff * (max_lr - min_lr)
}
