//! Scaled dot-product attention (`torch.nn.functional.
//! scaled_dot_product_attention`): hyper-parameters, operand checks, the
//! output shape and the per-element rules both backends follow.
//!
//! `q` is `[..., L, E]`, `k` is `[..., S, E]`, `v` is `[..., S, Ev]`; their
//! batch dims (everything before the last two) broadcast to one batch
//! shape, the output is `[batch..., L, Ev]`. For one batch item, row `i`
//! of the output is `sum_j p[i, j] * v[j]` with
//! `p[i, :] = softmax(scale * q[i] . k[:] + bias[i, :])`, where the bias is
//! the additive mask (F32), or 0 / -inf from a boolean mask (U32, nonzero =
//! take part) or from `is_causal` (`j <= i`: PyTorch's top-left aligned
//! `ones(L, S).tril()`). A row with no key left (every bias -inf) gives
//! zeros and zero gradients, as PyTorch's safe softmax does. With dropout,
//! `p[i, j]` is zeroed when the uniform draw [`dropout_keep`] says so and
//! the rest scaled by `1 / (1 - dropout_p)`; the softmax normaliser is the
//! undropped sum (so the same as PyTorch's `dropout(softmax(..))`).

use crate::random::{bits_to_unit, random_bits, seed_keys};
use crate::shape::broadcast_shapes;
use crate::{DType, Error, MAX_RANK, Result};

/// The name both backends report errors under.
pub const OP: &str = "scaled_dot_product_attention";

/// The keyword arguments of `scaled_dot_product_attention` besides the
/// mask, with PyTorch's defaults from [`AttentionArgs::default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionArgs {
    /// Probability of zeroing an attention weight, in `[0, 1)`.
    pub dropout_p: f64,
    /// Mask out keys after the query position (`j > i`).
    pub is_causal: bool,
    /// Factor on `q . k`; `None` is `1 / sqrt(E)`.
    pub scale: Option<f64>,
}

impl Default for AttentionArgs {
    fn default() -> Self {
        AttentionArgs {
            dropout_p: 0.0,
            is_causal: false,
            scale: None,
        }
    }
}

/// How the optional mask enters the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskKind {
    /// No mask.
    None,
    /// U32: nonzero keeps the key, zero gives the score -inf.
    Boolean,
    /// F32: added to the scaled scores.
    Additive,
}

/// Every size and flag of one attention call, checked: what a backend
/// needs to run the forward or the backward.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionGeometry {
    /// The broadcast batch shape of q, k and v (may be empty).
    pub batch: Vec<usize>,
    /// Query length `L`.
    pub q_len: usize,
    /// Key / value length `S`.
    pub kv_len: usize,
    /// Query / key feature size `E`.
    pub head_dim: usize,
    /// Value feature size `Ev`.
    pub v_dim: usize,
    /// The factor on `q . k`.
    pub scale: f32,
    /// Whether keys after the query position are masked.
    pub is_causal: bool,
    /// How the mask operand is read.
    pub mask: MaskKind,
    /// Dropout probability (0 = none).
    pub dropout_p: f32,
    /// Keys of the dropout draw (see [`dropout_keep`]).
    pub dropout_keys: [u32; 2],
}

impl AttentionGeometry {
    /// Number of batch items (product of [`Self::batch`]).
    pub fn batch_items(&self) -> usize {
        self.batch.iter().product()
    }

    /// The output's shape `[batch..., L, Ev]`.
    pub fn output_shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend([self.q_len, self.v_dim]);
        s
    }

    /// The shape of the per-row log-sum-exp the forward saves: `[batch..., L]`.
    pub fn lse_shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.push(self.q_len);
        s
    }

    /// The shape every operand is broadcast to for its gradient:
    /// `[batch..., rows, cols]`.
    pub fn batched(&self, rows: usize, cols: usize) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend([rows, cols]);
        s
    }

    /// Whether causality lets query `i` see key `j` (always without
    /// `is_causal`).
    pub fn causal_allows(&self, i: usize, j: usize) -> bool {
        !self.is_causal || j <= i
    }
}

/// Whether dropout keeps attention weight `(item, i, j)`: the uniform draw
/// of counter `(item * L + i) * S + j` (wrapping) is at least `p`. The
/// GPU kernels compute the same function (`kernels/attention/`).
pub fn dropout_keep(geometry: &AttentionGeometry, item: usize, i: usize, j: usize) -> bool {
    let counter = ((item * geometry.q_len + i) * geometry.kv_len + j) as u32;
    bits_to_unit(random_bits(geometry.dropout_keys, 0, counter)) >= geometry.dropout_p
}

/// Checks q, k, v (and the mask) and returns the geometry. `seed` draws the
/// dropout keys (ignored without dropout).
pub fn attention_geometry(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    mask: Option<(&[usize], DType)>,
    args: &AttentionArgs,
    seed: u64,
) -> Result<AttentionGeometry> {
    for (name, shape) in [("query", q), ("key", k), ("value", v)] {
        if shape.len() < 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "{name} must have at least 2 dims ([..., length, features]), got shape {shape:?}"
                ),
            ));
        }
    }
    let split = |s: &[usize]| (s[..s.len() - 2].to_vec(), s[s.len() - 2], s[s.len() - 1]);
    let (qb, q_len, head_dim) = split(q);
    let (kb, kv_len, k_dim) = split(k);
    let (vb, v_len, v_dim) = split(v);
    if k_dim != head_dim {
        return Err(Error::invalid(
            OP,
            format!("query and key feature sizes differ: query {q:?}, key {k:?}"),
        ));
    }
    if v_len != kv_len {
        return Err(Error::invalid(
            OP,
            format!("key and value lengths differ: key {k:?}, value {v:?}"),
        ));
    }
    let batch = broadcast_shapes(OP, &qb, &kb)
        .and_then(|qk| broadcast_shapes(OP, &qk, &vb))
        .map_err(|_| {
            Error::invalid(
                OP,
                format!("batch dims of query {q:?}, key {k:?} and value {v:?} do not broadcast"),
            )
        })?;
    if batch.len() + 2 > MAX_RANK {
        return Err(Error::invalid(
            OP,
            format!("batch shape {batch:?} has more than {} dims", MAX_RANK - 2),
        ));
    }
    if !(0.0..1.0).contains(&args.dropout_p) {
        return Err(Error::invalid(
            OP,
            format!("dropout_p must be in [0, 1), got {}", args.dropout_p),
        ));
    }
    let scale = args.scale.unwrap_or(1.0 / (head_dim as f64).sqrt());
    if !scale.is_finite() {
        return Err(Error::invalid(
            OP,
            format!("scale must be finite, got {scale}"),
        ));
    }
    let mut geometry = AttentionGeometry {
        batch,
        q_len,
        kv_len,
        head_dim,
        v_dim,
        scale: scale as f32,
        is_causal: args.is_causal,
        mask: MaskKind::None,
        dropout_p: args.dropout_p as f32,
        dropout_keys: if args.dropout_p > 0.0 {
            seed_keys(seed)
        } else {
            [0, 0]
        },
    };
    if let Some((shape, dtype)) = mask {
        if args.is_causal {
            return Err(Error::invalid(
                OP,
                "an explicit attn_mask cannot be combined with is_causal=True",
            ));
        }
        geometry.mask = match dtype {
            DType::U32 => MaskKind::Boolean,
            DType::F32 | DType::F16 | DType::BF16 => MaskKind::Additive,
            got => {
                return Err(Error::invalid(
                    OP,
                    format!("attn_mask must be boolean (U32) or float (F32), got {got}"),
                ));
            }
        };
        let target = geometry.batched(q_len, kv_len);
        let fits = shape.len() <= target.len()
            && shape
                .iter()
                .rev()
                .zip(target.iter().rev())
                .all(|(&m, &t)| m == t || m == 1);
        if !fits {
            return Err(Error::invalid(
                OP,
                format!(
                    "attn_mask of shape {shape:?} does not broadcast to the scores' shape {target:?}"
                ),
            ));
        }
    }
    Ok(geometry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(q: &[usize], k: &[usize], v: &[usize]) -> Result<AttentionGeometry> {
        attention_geometry(q, k, v, None, &AttentionArgs::default(), 0)
    }

    #[test]
    fn batch_dims_broadcast_and_shapes_follow() {
        let g = geo(&[2, 1, 3, 4], &[1, 3, 5, 4], &[5, 2]).unwrap();
        assert_eq!(g.batch, vec![2, 3]);
        assert_eq!(g.output_shape(), vec![2, 3, 3, 2]);
        assert_eq!(g.lse_shape(), vec![2, 3, 3]);
        assert!((g.scale - 0.5).abs() < 1e-7);
    }

    #[test]
    fn bad_operands_name_the_shapes() {
        let msg = |r: Result<AttentionGeometry>| r.unwrap_err().to_string();
        assert!(msg(geo(&[3, 4], &[5, 3], &[5, 2])).contains("feature sizes"));
        assert!(msg(geo(&[3, 4], &[5, 4], &[6, 2])).contains("lengths differ"));
        assert!(msg(geo(&[2, 3, 4], &[3, 5, 4], &[5, 2])).contains("do not broadcast"));
        assert!(msg(geo(&[4], &[5, 4], &[5, 2])).contains("at least 2 dims"));
        let args = AttentionArgs {
            dropout_p: 1.0,
            ..AttentionArgs::default()
        };
        assert!(
            attention_geometry(&[3, 4], &[5, 4], &[5, 2], None, &args, 0)
                .unwrap_err()
                .to_string()
                .contains("dropout_p")
        );
        let bad_mask = attention_geometry(
            &[3, 4],
            &[5, 4],
            &[5, 2],
            Some((&[3, 4], DType::U32)),
            &AttentionArgs::default(),
            0,
        );
        assert!(msg(bad_mask).contains("does not broadcast"));
        let causal = AttentionArgs {
            is_causal: true,
            ..AttentionArgs::default()
        };
        let both = attention_geometry(
            &[3, 4],
            &[5, 4],
            &[5, 2],
            Some((&[5], DType::F32)),
            &causal,
            0,
        );
        assert!(msg(both).contains("is_causal"));
        let int_mask = attention_geometry(
            &[3, 4],
            &[5, 4],
            &[5, 2],
            Some((&[5], DType::I32)),
            &AttentionArgs::default(),
            0,
        );
        assert!(msg(int_mask).contains("boolean"));
    }

    #[test]
    fn dropout_keeps_about_one_minus_p() {
        let args = AttentionArgs {
            dropout_p: 0.25,
            ..AttentionArgs::default()
        };
        let g = attention_geometry(&[64, 4], &[64, 4], &[64, 4], None, &args, 9).unwrap();
        let kept = (0..64)
            .flat_map(|i| (0..64).map(move |j| (i, j)))
            .filter(|&(i, j)| dropout_keep(&g, 0, i, j))
            .count();
        let frac = kept as f64 / 4096.0;
        assert!((frac - 0.75).abs() < 0.03, "kept fraction {frac}");
    }
}
