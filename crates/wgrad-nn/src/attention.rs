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

/// [`MultiheadAttention::with_options`]'s arguments beyond `embed_dim` and
/// `num_heads`: PyTorch's keyword arguments with their defaults
/// (`Default`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiheadAttentionOptions {
    /// Dropout on the attention weights (default 0).
    pub dropout: f32,
    /// Biases on the input and output projections (default true).
    pub bias: bool,
    /// A learned key and value row appended to every sequence (`bias_k`,
    /// `bias_v`, `[1, 1, embed_dim]`; default false).
    pub add_bias_kv: bool,
    /// A zero key and value row appended to every head's sequence after
    /// the projection (default false).
    pub add_zero_attn: bool,
    /// Features of the key (default `None`: `embed_dim`).
    pub kdim: Option<usize>,
    /// Features of the value (default `None`: `embed_dim`).
    pub vdim: Option<usize>,
    /// `[N, T, E]` inputs instead of `[T, N, E]` (default false).
    pub batch_first: bool,
}

impl Default for MultiheadAttentionOptions {
    fn default() -> Self {
        MultiheadAttentionOptions {
            dropout: 0.0,
            bias: true,
            add_bias_kv: false,
            add_zero_attn: false,
            kdim: None,
            vdim: None,
            batch_first: false,
        }
    }
}

/// Multi-head attention over `embed_dim` features split into `num_heads`
/// heads. Parameters as PyTorch names and orders them: `in_proj_weight`
/// `[3E, E]` (query, key and value projections stacked) or, where the key
/// or value has other features (`kdim`/`vdim`), `q_proj_weight` `[E, E]`,
/// `k_proj_weight` `[E, kdim]` and `v_proj_weight` `[E, vdim]`;
/// `in_proj_bias` `[3E]`; `bias_k`/`bias_v` `[1, 1, E]` under
/// `add_bias_kv`; `out_proj.weight`, `out_proj.bias`. Inputs are
/// `[L, N, E]`, or `[N, L, E]` with `batch_first`, or unbatched `[L, E]`.
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
    /// `[3 * embed_dim, embed_dim]`, when key and value have `embed_dim`
    /// features.
    pub in_proj_weight: Option<Tensor>,
    /// `[embed_dim, embed_dim]`, when the key or value has other features.
    pub q_proj_weight: Option<Tensor>,
    /// `[embed_dim, kdim]`, likewise.
    pub k_proj_weight: Option<Tensor>,
    /// `[embed_dim, vdim]`, likewise.
    pub v_proj_weight: Option<Tensor>,
    /// `[3 * embed_dim]`, when the layer has biases.
    pub in_proj_bias: Option<Tensor>,
    /// `[1, 1, embed_dim]`, under `add_bias_kv`.
    pub bias_k: Option<Tensor>,
    /// `[1, 1, embed_dim]`, under `add_bias_kv`.
    pub bias_v: Option<Tensor>,
    /// The output projection.
    pub out_proj: Linear,
    embed_dim: usize,
    kdim: usize,
    vdim: usize,
    num_heads: usize,
    dropout: f32,
    add_zero_attn: bool,
    batch_first: bool,
    training: bool,
}

impl MultiheadAttention {
    /// A layer with PyTorch's initialisation: `xavier_uniform_` input
    /// projections, zero biases, the output projection's weight as a
    /// default `Linear`'s. `dropout` is the attention-weight dropout.
    /// `MultiheadAttention(embed_dim, num_heads, dropout, bias,
    /// batch_first=batch_first)`; [`with_options`](Self::with_options)
    /// takes every argument.
    pub fn new(
        embed_dim: usize,
        num_heads: usize,
        dropout: f32,
        bias: bool,
        batch_first: bool,
        device: &Device,
    ) -> Result<Self> {
        let options = MultiheadAttentionOptions {
            dropout,
            bias,
            batch_first,
            ..MultiheadAttentionOptions::default()
        };
        Self::with_options(embed_dim, num_heads, &options, device)
    }

    /// `torch.nn.MultiheadAttention(embed_dim, num_heads, **options)`, with
    /// PyTorch's initialisation (`xavier_uniform_` input projections and
    /// `bias_k`/`bias_v`, zero biases).
    pub fn with_options(
        embed_dim: usize,
        num_heads: usize,
        options: &MultiheadAttentionOptions,
        device: &Device,
    ) -> Result<Self> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::invalid(
                OP,
                format!("embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"),
            ));
        }
        let o = *options;
        Dropout::new(o.dropout)?;
        let (kdim, vdim) = (o.kdim.unwrap_or(embed_dim), o.vdim.unwrap_or(embed_dim));
        let param = |shape: &[usize]| -> Result<Tensor> {
            let t = Tensor::zeros(shape, device)?;
            init::xavier_uniform_(&t, 1.0)?;
            t.with_requires_grad(true)
        };
        // PyTorch's `_qkv_same_embed_dim`: one stacked weight, else three.
        let same = kdim == embed_dim && vdim == embed_dim;
        let (in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight) = if same {
            (Some(param(&[3 * embed_dim, embed_dim])?), None, None, None)
        } else {
            (
                None,
                Some(param(&[embed_dim, embed_dim])?),
                Some(param(&[embed_dim, kdim])?),
                Some(param(&[embed_dim, vdim])?),
            )
        };
        let mut out_proj = Linear::new(embed_dim, embed_dim, o.bias, device)?;
        if let Some(b) = &out_proj.bias {
            init::zeros_(b)?;
        }
        out_proj.train(true);
        let in_proj_bias = if o.bias {
            Some(Tensor::zeros(&[3 * embed_dim], device)?.with_requires_grad(true)?)
        } else {
            None
        };
        let (bias_k, bias_v) = if o.add_bias_kv {
            (
                Some(param(&[1, 1, embed_dim])?),
                Some(param(&[1, 1, embed_dim])?),
            )
        } else {
            (None, None)
        };
        Ok(MultiheadAttention {
            in_proj_weight,
            q_proj_weight,
            k_proj_weight,
            v_proj_weight,
            in_proj_bias,
            bias_k,
            bias_v,
            out_proj,
            embed_dim,
            kdim,
            vdim,
            num_heads,
            dropout: o.dropout,
            add_zero_attn: o.add_zero_attn,
            batch_first: o.batch_first,
            training: true,
        })
    }

    /// `embed_dim`.
    pub fn embed_dim(&self) -> usize {
        self.embed_dim
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

    /// Projection `which` (0 query, 1 key, 2 value) of `x` `[N, T, features]`:
    /// `[N, T, E]`.
    fn project(&self, x: &Tensor, which: usize) -> Result<Tensor> {
        let e = self.embed_dim;
        let separate = [
            &self.q_proj_weight,
            &self.k_proj_weight,
            &self.v_proj_weight,
        ][which];
        let w = match (&self.in_proj_weight, separate) {
            (Some(w), _) => w.narrow(0, which * e, e)?,
            (None, Some(w)) => w.clone(),
            (None, None) => {
                return Err(Error::invalid(
                    OP,
                    "the layer has neither in_proj_weight nor its q/k/v_proj_weight",
                ));
            }
        };
        let b = match &self.in_proj_bias {
            Some(b) => Some(b.narrow(0, which * e, e)?),
            None => None,
        };
        // F.linear, as PyTorch's in-projection: the bias rides in the product.
        x.linear(&w, b.as_ref())
    }

    /// `[N, T, E]` split into heads: `[N, H, T, E / H]`.
    fn heads(&self, y: &Tensor) -> Result<Tensor> {
        let (n, t) = (y.shape()[0], y.shape()[1]);
        let (e, h) = (self.embed_dim, self.num_heads);
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
        let e = self.embed_dim;
        let unbatched = query.rank() == 2;
        for (name, t, dim, dim_name) in [
            ("query", query, e, "embed_dim"),
            ("key", key, self.kdim, "kdim"),
            ("value", value, self.vdim, "vdim"),
        ] {
            let rank_ok = if unbatched {
                t.rank() == 2
            } else {
                t.rank() == 3
            };
            if !rank_ok || t.shape().last() != Some(&dim) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{name} must be {} with {dim_name} {dim} last, got shape {:?}",
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
        // PyTorch's multi_head_attention_forward: under is_causal, without
        // a key padding mask or weights to return, the mask is dropped and
        // attention runs causal (top-left aligned over the keys, so rows
        // appended by add_bias_kv/add_zero_attn are not attended);
        // otherwise the mask is what counts.
        let causal =
            options.is_causal && options.key_padding_mask.is_none() && !options.need_weights;
        let mask = if causal {
            None
        } else {
            self.merged_mask(options, n, l, s, unbatched, &q.device())?
        };
        let (mut kp, mut vp) = (self.project(&k, 1)?, self.project(&v, 2)?);
        // Appended key/value rows (PyTorch's order: bias_k/bias_v after the
        // projection, then the zero row per head); the masks let every
        // query see them (a zero column each).
        let mut extra = 0;
        if let (Some(bk), Some(bv)) = (&self.bias_k, &self.bias_v) {
            kp = Tensor::cat(&[&kp, &bk.expand(&[n, 1, e])?], 1)?;
            vp = Tensor::cat(&[&vp, &bv.expand(&[n, 1, e])?], 1)?;
            extra += 1;
        }
        let (qh, mut kh, mut vh) = (
            self.heads(&self.project(&q, 0)?)?,
            self.heads(&kp)?,
            self.heads(&vp)?,
        );
        if self.add_zero_attn {
            let zeros = Tensor::zeros(&[n, self.num_heads, 1, e / self.num_heads], &q.device())?;
            kh = Tensor::cat(&[&kh, &zeros], 2)?;
            vh = Tensor::cat(&[&vh, &zeros], 2)?;
            extra += 1;
        }
        let mask = match mask {
            Some(m) if extra > 0 => {
                let mut shape = m.shape().to_vec();
                let last = shape.len() - 1;
                shape[last] = extra;
                let open = Tensor::zeros(&shape, &m.device())?;
                Some(Tensor::cat(&[&m, &open], -1)?)
            }
            m => m,
        };
        let p = if self.training { self.dropout } else { 0.0 };
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
