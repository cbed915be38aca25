//! How the fused attention lays out what it writes: the dense tensors
//! (the output and its gradient, and dq/dk/dv unless packed) in the
//! order the kernels' ROWS_OUTER names, and the check that lets dq,
//! dk and dv be written where q, k and v are read (GRADS_AS_INPUTS:
//! disjoint views of one buffer, the split of one qkv projection).

use wgrad_core::checks::attention::OP;
use wgrad_core::{DType, Layout, Result};

use crate::GpuTensor;

/// How many leading batch dims form the outer of the two merged batch
/// dims whose inner has `inner` items (the rest, a suffix, multiply to
/// `inner`), or `None` if no suffix does.
pub(super) fn outer_dims(batch: &[usize], inner: usize) -> Option<usize> {
    let mut size = 1;
    for d in (0..batch.len()).rev() {
        size *= batch[d];
        if size == inner {
            return Some(d);
        }
        if size > inner {
            return None;
        }
    }
    None
}

/// The order in memory of a dense `[batch..., rows, width]` tensor's dims
/// under ROWS_OUTER (`outer` leading batch dims, then rows, then the
/// other batch dims, then width), and its inverse.
pub(super) fn rows_outer_order(rank: usize, outer: usize) -> (Vec<isize>, Vec<isize>) {
    let nb = rank - 2;
    let order: Vec<usize> = (0..outer)
        .chain([nb])
        .chain(outer..nb)
        .chain([nb + 1])
        .collect();
    let mut inverse = vec![0; rank];
    for (i, &d) in order.iter().enumerate() {
        inverse[d] = i as isize;
    }
    (order.iter().map(|&d| d as isize).collect(), inverse)
}

/// A fresh dense tensor of logical shape `shape` as the kernels write it:
/// contiguous, or (`rows_outer` = its outer batch dims) a permuted view of
/// a contiguous `[outer..., rows, inner..., width]` buffer.
pub(super) fn dense_empty(
    like: &GpuTensor,
    shape: &[usize],
    rows_outer: Option<usize>,
) -> Result<GpuTensor> {
    let Some(outer) = rows_outer else {
        return like.empty_like_device(OP, shape, DType::F32);
    };
    let (order, inverse) = rows_outer_order(shape.len(), outer);
    let stored: Vec<usize> = order.iter().map(|&d| shape[d as usize]).collect();
    let t = like.empty_like_device(OP, &stored, DType::F32)?;
    Ok(t.with_layout(t.layout.permute(&inverse)?))
}

/// `t` as the kernels read a dense tensor (see [`dense_empty`]); a copy
/// only where it is not laid out so already.
pub(super) fn dense_view(t: &GpuTensor, rows_outer: Option<usize>) -> Result<GpuTensor> {
    let Some(outer) = rows_outer else {
        return t.contiguous();
    };
    let (order, inverse) = rows_outer_order(t.rank(), outer);
    let stored = t.with_layout(t.layout.permute(&order)?).contiguous()?;
    Ok(stored.with_layout(stored.layout.permute(&inverse)?))
}

/// The element count of the buffer that dq, dk and dv fill when written
/// where q, k and v are read, or `None` unless that is safe and cheap:
/// all three views of one buffer, each reaching every element once, no
/// two sharing one, with the same strides, and their gradients filling
/// at least half of that buffer (q, k and v split out of one projection
/// fill all of it).
pub(super) fn packed_grads_len(q: &GpuTensor, k: &GpuTensor, v: &GpuTensor) -> Option<usize> {
    let views = [&q.layout, &k.layout, &v.layout];
    let same_buffer = q.buffer.id() == k.buffer.id() && q.buffer.id() == v.buffer.id();
    let numel: usize = views.iter().map(|l| l.numel()).sum();
    if !same_buffer
        || views.iter().any(|l| l.numel() == 0 || !one_to_one(l))
        || views.iter().any(|l| l.strides() != q.layout.strides())
    {
        return None;
    }
    let disjoint = |a: &Layout, b: &Layout| !overlap(a, b);
    if !(disjoint(views[0], views[1])
        && disjoint(views[0], views[2])
        && disjoint(views[1], views[2]))
    {
        return None;
    }
    let len = views.iter().map(|l| l.span_end()).max()?;
    (len <= 2 * numel).then_some(len)
}

/// Whether every index of `l` reaches a different element: sorted by
/// stride, each dim (of size > 1) steps past all that the smaller ones
/// reach (sufficient, and true of every view a reshape, transpose or
/// narrow of a dense tensor gives).
fn one_to_one(l: &Layout) -> bool {
    let mut dims: Vec<(usize, usize)> = l
        .shape()
        .iter()
        .zip(l.strides())
        .filter(|(size, _)| **size > 1)
        .map(|(&size, &stride)| (stride, size))
        .collect();
    dims.sort_unstable();
    let mut reach = 0usize;
    for (stride, size) in dims {
        if stride <= reach {
            return false;
        }
        reach += (size - 1) * stride;
    }
    true
}

/// Whether views `a` and `b` (same strides and rank) share an element:
/// whether their offsets' difference is `sum_d (i_d - j_d) * stride_d`
/// for some in-range indices i of `a` and j of `b`. A search over the
/// dims by decreasing stride, pruned by what the smaller strides can
/// still add; unsure (a search past its budget) counts as sharing.
fn overlap(a: &Layout, b: &Layout) -> bool {
    let mut dims: Vec<(i64, i64, i64)> = a
        .shape()
        .iter()
        .zip(b.shape())
        .zip(a.strides())
        .filter(|&(_, &stride)| stride > 0)
        .map(|((&sa, &sb), &stride)| (stride as i64, -(sb as i64 - 1), sa as i64 - 1))
        .collect();
    dims.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
    // What the dims from i on can add, at least and at most.
    let mut low = vec![0i64; dims.len() + 1];
    let mut high = vec![0i64; dims.len() + 1];
    for i in (0..dims.len()).rev() {
        let (stride, lo, hi) = dims[i];
        low[i] = low[i + 1] + lo * stride;
        high[i] = high[i + 1] + hi * stride;
    }
    let delta = b.offset() as i64 - a.offset() as i64;
    let mut budget = 10_000u32;
    search(&dims, &low, &high, 0, delta, &mut budget)
}

fn search(
    dims: &[(i64, i64, i64)],
    low: &[i64],
    high: &[i64],
    i: usize,
    rest: i64,
    budget: &mut u32,
) -> bool {
    if i == dims.len() {
        return rest == 0;
    }
    if *budget == 0 {
        return true;
    }
    *budget -= 1;
    let (stride, lo, hi) = dims[i];
    // rest - j * stride must stay within [low[i + 1], high[i + 1]].
    let first = (rest - high[i + 1]).div_euclid(stride)
        + i64::from((rest - high[i + 1]).rem_euclid(stride) != 0);
    let last = (rest - low[i + 1]).div_euclid(stride);
    (first.max(lo)..=last.min(hi))
        .any(|j| search(dims, low, high, i + 1, rest - j * stride, budget))
}

#[cfg(test)]
mod tests {
    use super::{one_to_one, outer_dims, overlap, rows_outer_order};
    use wgrad_core::Layout;

    /// q, k, v split out of a [B, T, 3 C] projection, viewed as [B, H, T, D].
    fn head_view(b: usize, t: usize, h: usize, d: usize, part: usize) -> Layout {
        let c = h * d;
        Layout::contiguous(&[b, t, 3 * c])
            .narrow(2, part * c, c)
            .unwrap()
            .reshape(&[b as isize, t as isize, h as isize, d as isize])
            .unwrap()
            .unwrap()
            .transpose(1, 2)
            .unwrap()
    }

    #[test]
    fn split_projection_views_are_disjoint_and_one_to_one() {
        let (q, k, v) = (
            head_view(2, 5, 3, 4, 0),
            head_view(2, 5, 3, 4, 1),
            head_view(2, 5, 3, 4, 2),
        );
        assert!(one_to_one(&q) && one_to_one(&k) && one_to_one(&v));
        assert!(!overlap(&q, &k) && !overlap(&k, &v) && !overlap(&q, &v));
        assert!(overlap(&q, &q));
        // Overlapping windows: columns 0..12 and 8..20 of a row.
        let a = Layout::contiguous(&[4, 24]).narrow(1, 0, 12).unwrap();
        let b = Layout::contiguous(&[4, 24]).narrow(1, 8, 12).unwrap();
        assert!(overlap(&a, &b));
        // A row of one view meeting the next row of the other.
        let a = Layout::contiguous(&[4, 10]).narrow(1, 0, 6).unwrap();
        let b = Layout::contiguous(&[4, 10]).narrow(1, 6, 4).unwrap();
        assert!(!overlap(&a, &b.narrow(1, 0, 4).unwrap()));
        // Broadcast (stride 0) and self-overlapping strides reach elements twice.
        assert!(!one_to_one(
            &Layout::contiguous(&[3, 1]).expand(&[3, 4]).unwrap()
        ));
        let twice = Layout::from_parts("t", vec![4, 4], vec![2, 1], 0).unwrap();
        assert!(!one_to_one(&twice));
    }

    #[test]
    fn rows_outer_order_moves_rows_before_the_inner_batch_dims() {
        assert_eq!(outer_dims(&[2, 6], 6), Some(1));
        assert_eq!(outer_dims(&[2, 3, 4], 12), Some(1));
        assert_eq!(outer_dims(&[5], 5), Some(0));
        assert_eq!(outer_dims(&[2, 6], 4), None);
        let (order, inverse) = rows_outer_order(4, 1);
        assert_eq!(order, vec![0, 2, 1, 3]);
        assert_eq!(inverse, vec![0, 2, 1, 3]);
        let (order, inverse) = rows_outer_order(5, 1);
        assert_eq!(order, vec![0, 3, 1, 2, 4]);
        assert_eq!(inverse, vec![0, 2, 3, 1, 4]);
    }
}
