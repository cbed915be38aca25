//! A nanoGPT-shaped character model: token and position embeddings,
//! pre-norm blocks (causal self-attention through the fused
//! `scaled_dot_product_attention`, GELU MLP), a final LayerNorm and a head
//! tied to the token embedding. Parameter names are nanoGPT's
//! (`transformer.h.0.attn.c_attn.weight`, ..., `lm_head.weight` being the
//! same tensor as `transformer.wte.weight`).
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

struct Block {
    ln_1: LayerNorm,
    c_attn: Linear,
    attn_proj: Linear,
    ln_2: LayerNorm,
    c_fc: Linear,
    mlp_proj: Linear,
    resid_dropout: Dropout,
    n_head: usize,
    dropout: f32,
}

impl Block {
    fn new(c: &GptConfig, device: &Device) -> Result<Block> {
        let e = c.n_embd;
        Ok(Block {
            ln_1: LayerNorm::new(&[e], 1e-5, true, device)?,
            c_attn: Linear::new(e, 3 * e, true, device)?,
            attn_proj: Linear::new(e, e, true, device)?,
            ln_2: LayerNorm::new(&[e], 1e-5, true, device)?,
            c_fc: Linear::new(e, 4 * e, true, device)?,
            mlp_proj: Linear::new(4 * e, e, true, device)?,
            resid_dropout: Dropout::new(c.dropout)?,
            n_head: c.n_head,
            dropout: c.dropout,
        })
    }

    fn attention(&self, x: &Tensor, training: bool) -> Result<Tensor> {
        let (b, t, e) = (x.shape()[0] as isize, x.shape()[1] as isize, x.shape()[2]);
        let h = self.n_head as isize;
        let heads = |y: Tensor| y.reshape(&[b, t, h, e as isize / h])?.transpose(1, 2);
        let qkv = self.c_attn.forward(x)?.split(e, -1)?;
        let (q, k, v) = (
            heads(qkv[0].clone())?,
            heads(qkv[1].clone())?,
            heads(qkv[2].clone())?,
        );
        let p = if training {
            f64::from(self.dropout)
        } else {
            0.0
        };
        let y = q.scaled_dot_product_attention(&k, &v, None, p, true, None)?;
        let y = y.transpose(1, 2)?.reshape(&[b, t, e as isize])?;
        self.resid_dropout.forward(&self.attn_proj.forward(&y)?)
    }

    fn forward(&self, x: &Tensor, training: bool) -> Result<Tensor> {
        let x = x.add(&self.attention(&self.ln_1.forward(x)?, training)?)?;
        let m = self
            .mlp_proj
            .forward(&self.c_fc.forward(&self.ln_2.forward(&x)?)?.gelu()?)?;
        x.add(&self.resid_dropout.forward(&m)?)
    }

    fn named(&self, prefix: &str) -> Vec<(String, Tensor)> {
        let parts: [(&str, &dyn Module); 6] = [
            ("ln_1", &self.ln_1),
            ("attn.c_attn", &self.c_attn),
            ("attn.c_proj", &self.attn_proj),
            ("ln_2", &self.ln_2),
            ("mlp.c_fc", &self.c_fc),
            ("mlp.c_proj", &self.mlp_proj),
        ];
        parts
            .iter()
            .flat_map(|(name, m)| {
                m.named_parameters()
                    .into_iter()
                    .map(move |(k, t)| (format!("{prefix}.{name}.{k}"), t))
            })
            .collect()
    }

    fn modules_mut(&mut self) -> [&mut dyn Module; 7] {
        [
            &mut self.ln_1,
            &mut self.c_attn,
            &mut self.attn_proj,
            &mut self.ln_2,
            &mut self.c_fc,
            &mut self.mlp_proj,
            &mut self.resid_dropout,
        ]
    }
}

/// The model.
pub struct Gpt {
    pub config: GptConfig,
    wte: Embedding,
    wpe: Embedding,
    drop: Dropout,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    training: bool,
}

impl Gpt {
    /// nanoGPT's initialisation: N(0, 0.02) weights, zero biases, the
    /// residual projections at 0.02 / sqrt(2 * n_layer).
    pub fn new(config: GptConfig, device: &Device) -> Result<Gpt> {
        let c = &config;
        let gpt = Gpt {
            wte: Embedding::new(c.vocab_size, c.n_embd, device)?,
            wpe: Embedding::new(c.block_size, c.n_embd, device)?,
            drop: Dropout::new(c.dropout)?,
            blocks: (0..c.n_layer)
                .map(|_| Block::new(c, device))
                .collect::<Result<_>>()?,
            ln_f: LayerNorm::new(&[c.n_embd], 1e-5, true, device)?,
            config,
            training: true,
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
        let tok = self.wte.forward(idx)?;
        let pos = self.wpe.weight.narrow(0, 0, t)?;
        let mut x = self.drop.forward(&tok.add(&pos)?)?;
        for b in &self.blocks {
            x = b.forward(&x, self.training)?;
        }
        let x = self.ln_f.forward(&x)?;
        // The head shares the token embedding's weight (weight tying).
        x.matmul_t(&self.wte.weight, false, true)
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

impl Module for Gpt {
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        self.logits(idx)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![
            (
                "transformer.wte.weight".to_string(),
                self.wte.weight.clone(),
            ),
            (
                "transformer.wpe.weight".to_string(),
                self.wpe.weight.clone(),
            ),
        ];
        for (i, b) in self.blocks.iter().enumerate() {
            out.extend(b.named(&format!("transformer.h.{i}")));
        }
        for (k, t) in self.ln_f.named_parameters() {
            out.push((format!("transformer.ln_f.{k}"), t));
        }
        out.push(("lm_head.weight".to_string(), self.wte.weight.clone()));
        out
    }

    fn train(&mut self, on: bool) {
        self.training = on;
        self.drop.train(on);
        self.wte.train(on);
        self.wpe.train(on);
        self.ln_f.train(on);
        for b in &mut self.blocks {
            for m in b.modules_mut() {
                m.train(on);
            }
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.wte.to_device(device)?;
        self.wpe.to_device(device)?;
        self.ln_f.to_device(device)?;
        for b in &mut self.blocks {
            for m in b.modules_mut() {
                m.to_device(device)?;
            }
        }
        Ok(())
    }
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
