//! [`MultiheadAttention`] (`torch.nn.MultiheadAttention`): projections,
//! the fused `scaled_dot_product_attention` over the heads, and the output
//! projection, with PyTorch's parameter names, masks and defaults.

use wgrad_autograd::{DType, Device, Tensor};
use wgrad_core::{Error, Result};

use crate::Module;
use crate::dropout::Dropout;
use crate::init;
use crate::linear::Linear;

const OP: &str = "MultiheadAttention";

/// The optional arguments of [`MultiheadAttention::forward_attention`],
/// PyTorch's keyword arguments with their defaults (`Default`).
#[derive(Clone, Copy, Debug)]
pub struct AttentionOptions<'a> {
    /// `[N, S]` (or `[S]` unbatched): a boolean (U32) mask whose true
    /// entries are padding keys that no query attends to, or a float mask
    /// added to the scores.
    pub key_padding_mask: Option<&'a Tensor>,
    /// Return the attention weights (averaged over the heads when
    /// `average_attn_weights`). This runs the unfused attention, as PyTorch
    /// does; without it the fused kernel runs.
    pub need_weights: bool,
    /// `[L, S]` or `[N * num_heads, L, S]`: boolean (true = not allowed)
    /// or additive float.
    pub attn_mask: Option<&'a Tensor>,
    /// Average the returned weights over the heads.
    pub average_attn_weights: bool,
    /// PyTorch's hint that `attn_mask` is causal (the mask is used); an
    /// error without `attn_mask`, as in PyTorch.
    pub is_causal: bool,
}

impl Default for AttentionOptions<'_> {
    fn default() -> Self {
        AttentionOptions {
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
        }
    }
}

/// Multi-head attention over `embed_dim` features split into `num_heads`
/// heads. Parameters as PyTorch names them: `in_proj_weight` `[3E, E]`
/// (query, key and value projections stacked), `in_proj_bias` `[3E]`,
/// `out_proj.weight`, `out_proj.bias`. Inputs are `[L, N, E]`, or
/// `[N, L, E]` with `batch_first`, or unbatched `[L, E]`.
///
/// Key and value dims other than `embed_dim` (PyTorch's `kdim`/`vdim`) and
/// `add_bias_kv`/`add_zero_attn` are not supported.
///
/// As a [`Module`], `forward(x)` is self-attention of `x` without weights
/// (the fused path); [`forward_attention`](Self::forward_attention) takes
/// separate query, key and value, masks and options.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Module, MultiheadAttention};
/// let device = Device::Cpu;
/// let mha = MultiheadAttention::new(8, 2, 0.0, true, true, &device)?;
/// let x = Tensor::randn(&[3, 5, 8], &device)?; // [N, L, E], batch_first
/// assert_eq!(mha.forward(&x)?.shape(), [3, 5, 8]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct MultiheadAttention {
    /// `[3 * embed_dim, embed_dim]`.
    pub in_proj_weight: Tensor,
    /// `[3 * embed_dim]`, when the layer has biases.
    pub in_proj_bias: Option<Tensor>,
    /// The output projection.
    pub out_proj: Linear,
    num_heads: usize,
    dropout: f32,
    batch_first: bool,
    training: bool,
}

impl MultiheadAttention {
    /// A layer with PyTorch's initialisation: `xavier_uniform_` input
    /// projections, zero biases, the output projection's weight as a
    /// default `Linear`'s. `dropout` is the attention-weight dropout.
    pub fn new(
        embed_dim: usize,
        num_heads: usize,
        dropout: f32,
        bias: bool,
        batch_first: bool,
        device: &Device,
    ) -> Result<Self> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::invalid(
                OP,
                format!("embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"),
            ));
        }
        Dropout::new(dropout)?;
        let in_proj_weight = Tensor::zeros(&[3 * embed_dim, embed_dim], device)?;
        init::xavier_uniform_(&in_proj_weight, 1.0)?;
        let mut out_proj = Linear::new(embed_dim, embed_dim, bias, device)?;
        if let Some(b) = &out_proj.bias {
            init::zeros_(b)?;
        }
        out_proj.train(true);
        let in_proj_bias = if bias {
            Some(Tensor::zeros(&[3 * embed_dim], device)?.with_requires_grad(true)?)
        } else {
            None
        };
        Ok(MultiheadAttention {
            in_proj_weight: in_proj_weight.with_requires_grad(true)?,
            in_proj_bias,
            out_proj,
            num_heads,
            dropout,
            batch_first,
            training: true,
        })
    }

    /// `embed_dim`.
    pub fn embed_dim(&self) -> usize {
        self.in_proj_weight.shape().get(1).copied().unwrap_or(0)
    }

    /// `num_heads`.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// Self-attention of `x` without weights (the fused path).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let options = AttentionOptions {
            need_weights: false,
            ..AttentionOptions::default()
        };
        Ok(self.forward_attention(x, x, x, &options)?.0)
    }

    /// Projection `which` (0 query, 1 key, 2 value) of `x` `[N, T, E]`,
    /// split into heads: `[N, H, T, E / H]`.
    fn project(&self, x: &Tensor, which: usize) -> Result<Tensor> {
        let e = self.embed_dim();
        let w = self.in_proj_weight.narrow(0, which * e, e)?;
        let b = match &self.in_proj_bias {
            Some(b) => Some(b.narrow(0, which * e, e)?),
            None => None,
        };
        // F.linear, as PyTorch's in-projection: the bias rides in the product.
        let y = x.linear(&w, b.as_ref())?;
        let (n, t) = (x.shape()[0], x.shape()[1]);
        let h = self.num_heads;
        y.reshape(&[n as isize, t as isize, h as isize, (e / h) as isize])?
            .transpose(1, 2)
    }

    /// Self-attention or attention of `query` over `key`/`value`, as
    /// PyTorch's `forward(query, key, value, ...)`: the output (in the
    /// input's layout) and, with `need_weights`, the attention weights
    /// `[N, L, S]` (or `[N, H, L, S]` unaveraged; unbatched without `N`).
    pub fn forward_attention(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        options: &AttentionOptions,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let e = self.embed_dim();
        let unbatched = query.rank() == 2;
        for (name, t) in [("query", query), ("key", key), ("value", value)] {
            let rank_ok = if unbatched {
                t.rank() == 2
            } else {
                t.rank() == 3
            };
            if !rank_ok || t.shape().last() != Some(&e) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{name} must be {} with embed_dim {e} last, got shape {:?}",
                        if unbatched { "[L, E]" } else { "3-D" },
                        t.shape()
                    ),
                ));
            }
        }
        // To [N, T, E].
        let batched = |t: &Tensor| -> Result<Tensor> {
            if unbatched {
                t.unsqueeze(0)
            } else if self.batch_first {
                Ok(t.clone())
            } else {
                t.transpose(0, 1)
            }
        };
        let (q, k, v) = (batched(query)?, batched(key)?, batched(value)?);
        let (n, l, s) = (q.shape()[0], q.shape()[1], k.shape()[1]);
        if k.shape()[0] != n || v.shape()[0] != n || v.shape()[1] != s {
            return Err(Error::invalid(
                OP,
                format!(
                    "query {:?}, key {:?} and value {:?} disagree in batch size or key length",
                    query.shape(),
                    key.shape(),
                    value.shape()
                ),
            ));
        }
        if options.is_causal && options.attn_mask.is_none() {
            // PyTorch's error: the flag is only a hint about the mask.
            return Err(Error::invalid(
                OP,
                "is_causal needs attn_mask: it is a hint that the mask is causal \
                 (make one with generate_square_subsequent_mask), as in PyTorch",
            ));
        }
        let mask = self.merged_mask(options, n, l, s, unbatched, &q.device())?;
        let (qh, kh, vh) = (
            self.project(&q, 0)?,
            self.project(&k, 1)?,
            self.project(&v, 2)?,
        );
        let p = if self.training { self.dropout } else { 0.0 };
        let causal = options.is_causal && mask.is_none();
        let (heads, weights) = if options.need_weights {
            self.unfused(&qh, &kh, &vh, mask.as_ref(), causal, p)?
        } else {
            let y = qh.scaled_dot_product_attention(
                &kh,
                &vh,
                mask.as_ref(),
                f64::from(p),
                causal,
                None,
            )?;
            (y, None)
        };
        let y = heads
            .transpose(1, 2)?
            .reshape(&[n as isize, l as isize, e as isize])?;
        let y = self.out_proj.forward(&y)?;
        let y = if unbatched {
            y.squeeze(0)?
        } else if self.batch_first {
            y
        } else {
            y.transpose(0, 1)?
        };
        let weights = match weights {
            Some(w) => {
                let w = if options.average_attn_weights {
                    w.mean(&[1], false)?
                } else {
                    w
                };
                Some(if unbatched { w.squeeze(0)? } else { w })
            }
            None => None,
        };
        Ok((y, weights))
    }

    /// The attention written out (softmax of the scores, dropout, product
    /// with the values), for `need_weights`: `([N, H, L, D], [N, H, L, S])`.
    fn unfused(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        p: f32,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let d = q.shape()[3];
        let mut scores = q
            .matmul_t(k, false, true)?
            .mul_scalar(1.0 / (d as f32).sqrt())?;
        if let Some(m) = mask {
            scores = scores.add(m)?;
        }
        if causal {
            let (l, s) = (scores.shape()[2], scores.shape()[3]);
            let dev = q.device();
            let ones = Tensor::ones(&[l, s], &dev)?;
            let allowed = ones.tril(0)?.gt_scalar(0.5)?;
            let ninf = Tensor::full(&[], f64::NEG_INFINITY, DType::F32, &dev)?;
            scores = Tensor::where_cond(&allowed, &scores, &ninf)?;
        }
        let mut weights = scores.softmax(-1)?;
        if p > 0.0 {
            let mut drop = Dropout::new(p)?;
            drop.train(true);
            weights = drop.forward(&weights)?;
        }
        Ok((weights.matmul(v)?, Some(weights)))
    }

    /// `attn_mask` and `key_padding_mask` as one additive float mask that
    /// broadcasts to `[N, H, L, S]` (booleans: true -> -inf), as PyTorch
    /// canonicalises them; `None` without masks.
    fn merged_mask(
        &self,
        options: &AttentionOptions,
        n: usize,
        l: usize,
        s: usize,
        unbatched: bool,
        device: &Device,
    ) -> Result<Option<Tensor>> {
        let additive = |m: &Tensor, what: &str| -> Result<Tensor> {
            match m.dtype() {
                DType::F32 | DType::F16 | DType::BF16 => Ok(m.clone()),
                DType::U32 => {
                    let ninf = Tensor::full(&[], f64::NEG_INFINITY, DType::F32, device)?;
                    let zero = Tensor::zeros(&[], device)?;
                    Tensor::where_cond(m, &ninf, &zero)
                }
                got => Err(Error::invalid(
                    OP,
                    format!("{what} must be boolean (U32) or float (F32), got {got}"),
                )),
            }
        };
        let h = self.num_heads;
        let attn = match options.attn_mask {
            None => None,
            Some(m) => {
                let m = additive(m, "attn_mask")?;
                Some(match m.shape()[..] {
                    [ml, ms] if ml == l && ms == s => m,
                    [b, ml, ms] if b == n * h && ml == l && ms == s => {
                        m.reshape(&[n as isize, h as isize, l as isize, s as isize])?
                    }
                    _ => {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "attn_mask must be [{l}, {s}] or [{}, {l}, {s}], got {:?}",
                                n * h,
                                m.shape()
                            ),
                        ));
                    }
                })
            }
        };
        let padding = match options.key_padding_mask {
            None => None,
            Some(m) => {
                let want: Vec<usize> = if unbatched { vec![s] } else { vec![n, s] };
                if m.shape() != want.as_slice() {
                    return Err(Error::invalid(
                        OP,
                        format!("key_padding_mask must be {want:?}, got {:?}", m.shape()),
                    ));
                }
                let m = additive(m, "key_padding_mask")?;
                Some(m.reshape(&[n as isize, 1, 1, s as isize])?)
            }
        };
        Ok(match (attn, padding) {
            (Some(a), Some(p)) => Some(a.add(&p)?),
            (a, p) => a.or(p),
        })
    }
}
