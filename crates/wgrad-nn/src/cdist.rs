//! `torch.cdist`: the p-norm distance between every pair of rows of two
//! batched collections, composed from differentiable ops.
//!
//! ```
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::cdist;
//! let cpu = Device::Cpu;
//! let a = Tensor::from_vec(vec![0.0f32, 0.0, 1.0, 1.0], &[2, 2], &cpu)?;
//! let b = Tensor::from_vec(vec![3.0f32, 4.0], &[1, 2], &cpu)?;
//! assert_eq!(cdist(&a, &b, 2.0)?.shape(), [2, 1]);
//! assert_eq!(cdist(&a, &b, 1.0)?.to_vec_f32()?, [7.0, 5.0]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

use wgrad_autograd::Tensor;
use wgrad_core::shape::broadcast_shapes;
use wgrad_core::{Error, Result};

/// Above this many rows on either side, PyTorch's default compute mode
/// (`use_mm_for_euclid_dist_if_necessary`) takes `p = 2` through a matrix
/// product; at or below it, through the differences.
const MM_ROWS: usize = 25;

/// `torch.cdist(x1, x2, p)`: for `x1` of shape `[.., P, M]` and `x2` of shape
/// `[.., R, M]` (batch dims broadcast), the `[.., P, R]` distances
/// `||x1[.., i, :] - x2[.., j, :]||_p`, for any `p >= 0` (`inf` too), with
/// PyTorch's default compute mode: for `p = 2` with more than 25 rows on a
/// side, `sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))` through one batched product
/// (no `[.., P, R, M]` intermediate; its rounding, as PyTorch's), otherwise
/// the norm of the differences. Gradients are PyTorch's: 0 at a zero
/// distance for `p = 2` (either way), `sign(diff)` for `p = 1`, and for
/// `p = inf` each tied largest coordinate gets the whole gradient.
///
/// PyTorch's errors: inputs of rank below 2, different column counts,
/// non-float dtypes, negative or NaN `p`.
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f32) -> Result<Tensor> {
    const OP: &str = "cdist";
    for (name, x) in [("X1", x1), ("X2", x2)] {
        if x.rank() < 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "cdist only supports at least 2D tensors, {name} got: {}D",
                    x.rank()
                ),
            ));
        }
    }
    let (s1, s2) = (x1.shape(), x2.shape());
    let (cols1, cols2) = (s1[s1.len() - 1], s2[s2.len() - 1]);
    if cols1 != cols2 {
        return Err(Error::invalid(
            OP,
            format!("X1 and X2 must have the same number of columns. X1: {cols1} X2: {cols2}"),
        ));
    }
    for (name, x) in [("X1", x1), ("X2", x2)] {
        if !x.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "cdist only supports floating-point dtypes, {name} got: {}",
                    x.dtype().name()
                ),
            ));
        }
    }
    if p.is_nan() || p < 0.0 {
        return Err(Error::invalid(
            OP,
            "cdist only supports non-negative p values",
        ));
    }
    // The batch dims broadcast (PyTorch's error for those that do not).
    broadcast_shapes(OP, &s1[..s1.len() - 2], &s2[..s2.len() - 2])?;
    let (rows1, rows2) = (s1[s1.len() - 2], s2[s2.len() - 2]);
    let empty = x1.numel() == 0 || x2.numel() == 0;
    if p == 2.0 && !empty && (rows1 > MM_ROWS || rows2 > MM_ROWS) {
        return euclidean_by_product(x1, x2);
    }
    // [.., P, 1, M] - [.., 1, R, M]: every pair's difference.
    let diff = x1.unsqueeze(-2)?.sub(&x2.unsqueeze(-3)?)?;
    if cols1 == 0 {
        // No coordinates: every distance is 0 (for every p), still in the graph.
        return diff.abs()?.sum(&[-1], false);
    }
    if p == f32::INFINITY {
        return max_abs_ties_whole(&diff);
    }
    diff.norm(p, &[-1], false)
}

/// PyTorch's `_euclidean_dist`: `[-2 a, |a|^2, 1] . [b, 1, |b|^2]` in one
/// batched product, clamped at 0, square-rooted. The root is taken of
/// `max(v, 0)` through a `where`, so at a zero distance the gradient is 0
/// (PyTorch's `_euclidean_dist_backward` masks `grad / res` there) and
/// elsewhere it is `g (a - b) / res`, as PyTorch's.
fn euclidean_by_product(x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    let n1 = x1.square()?.sum(&[-1], true)?;
    let n2 = x2.square()?.sum(&[-1], true)?;
    let a = Tensor::cat(&[&x1.mul_scalar(-2.0)?, &n1, &n1.ones_like()?], -1)?;
    let b = Tensor::cat(&[x2, &n2.ones_like()?, &n2], -1)?;
    let v = a.matmul_t(&b, false, true)?;
    // NaN is not <= 0, so it stays NaN, as clamp_min(NaN, 0) does.
    let at_most_zero = v.le_scalar(0.0)?;
    let one = Tensor::ones(&[], &v.device())?;
    let zero = Tensor::zeros(&[], &v.device())?;
    let root = Tensor::where_cond(&at_most_zero, &one, &v)?.sqrt()?;
    Tensor::where_cond(&at_most_zero, &zero, &root)
}

/// `max |diff|` over the last dim where, as in PyTorch's cdist backward,
/// every coordinate tied at the maximum gets the whole gradient (`amax`
/// would split it): the value is `max` exactly (`max + (s - s)`), the
/// gradient that of `s`, the sum of the tied magnitudes. An infinite or NaN
/// maximum keeps `amax` (its `s - s` would be NaN).
fn max_abs_ties_whole(diff: &Tensor) -> Result<Tensor> {
    let a = diff.abs()?;
    let m = a.max(&[-1], true)?;
    let m_value = m.detach();
    let tied = a.detach().eq(&m_value)?;
    let zero = Tensor::zeros(&[], &a.device())?;
    let s = Tensor::where_cond(&tied, &a, &zero)?.sum(&[-1], false)?;
    let m_value = m_value.squeeze(-1)?;
    let whole = m_value.add(&s.sub(&s.detach())?)?;
    let finite = m_value.lt_scalar(f32::INFINITY)?;
    Tensor::where_cond(&finite, &whole, &m.squeeze(-1)?)
}
