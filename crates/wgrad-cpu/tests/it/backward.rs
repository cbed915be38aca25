//! Autograd building blocks on the CPU: `unary_backward`,
//! `softmax_backward`, `index_add`, `scatter_add` — known values,
//! finite-difference and adjoint checks, and errors.

use proptest::prelude::*;
use wgrad_cpu::{CpuTensor, DType, Error, UnaryOp};

use crate::{assert_close, f, t, ti};

/// `sum(g * y)` for two tensors of one shape.
fn dot(g: &CpuTensor, y: &CpuTensor) -> f32 {
    f(g).iter().zip(f(y)).map(|(a, b)| a * b).sum()
}

// ---------------------------------------------------------------- unary

#[test]
fn unary_backward_known_values() {
    let g = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let x = t(&[-1.0, 0.0, 2.0, 0.5], &[4]);
    let relu = g.unary_backward(&x, UnaryOp::Relu).unwrap();
    assert_eq!(f(&relu), vec![0.0, 0.0, 3.0, 4.0]);
    let sq = g.unary_backward(&x, UnaryOp::Square).unwrap();
    assert_eq!(f(&sq), vec![-2.0, 0.0, 12.0, 4.0]);
    let leaky = g
        .unary_backward(&x, UnaryOp::LeakyRelu { slope: 0.5 })
        .unwrap();
    assert_eq!(f(&leaky), vec![0.5, 1.0, 3.0, 4.0]);
    let clamp = g
        .unary_backward(
            &x,
            UnaryOp::Clamp {
                min: Some(0.0),
                max: Some(1.0),
            },
        )
        .unwrap();
    // x == min gets 0 (torch 2.15, scalar bounds).
    assert_eq!(f(&clamp), vec![0.0, 0.0, 0.0, 4.0]);
}

#[test]
fn unary_backward_reads_views() {
    // x transposed, g expanded from a row: both non-contiguous.
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
        .transpose(0, 1)
        .unwrap();
    let g = t(&[1.0, 10.0], &[1, 2]).expand(&[3, 2]).unwrap();
    let out = g.unary_backward(&x, UnaryOp::Square).unwrap();
    assert_eq!(out.shape(), &[3, 2]);
    // x in logical order: [[1,4],[2,5],[3,6]].
    assert_eq!(f(&out), vec![2.0, 80.0, 4.0, 100.0, 6.0, 120.0]);
}

#[test]
fn unary_backward_matches_finite_differences_of_the_forward_op() {
    let x = CpuTensor::rand(&[3, 7], 0.3, 2.0, 7).unwrap();
    let g = CpuTensor::rand(&[3, 7], -1.0, 1.0, 8).unwrap();
    let h = 1e-2;
    for op in [
        UnaryOp::Gelu,
        UnaryOp::Silu,
        UnaryOp::Tanh,
        UnaryOp::Log,
        UnaryOp::Rsqrt,
        UnaryOp::Sin,
    ] {
        let got = f(&g.unary_backward(&x, op).unwrap());
        let up = f(&x.add_scalar(h).unwrap().unary(op).unwrap());
        let down = f(&x.sub_scalar(h).unwrap().unary(op).unwrap());
        let want: Vec<f32> = f(&g)
            .iter()
            .zip(up.iter().zip(&down))
            .map(|(g, (u, d))| g * (u - d) / (2.0 * h))
            .collect();
        assert_close(&got, &want, 2e-3);
    }
}

#[test]
fn unary_backward_errors() {
    let g = t(&[1.0, 2.0], &[2]);
    let e = g
        .unary_backward(&t(&[1.0, 2.0, 3.0], &[3]), UnaryOp::Exp)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("[2]") && e.to_string().contains("[3]"));
    // No broadcasting: [1] vs [2] is a mismatch too.
    assert!(g.unary_backward(&t(&[1.0], &[1]), UnaryOp::Exp).is_err());
    let e = g
        .unary_backward(&ti(&[1, 2], &[2]), UnaryOp::Exp)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::F32,
                got: DType::I32,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("unary_backward"));
}

// ---------------------------------------------------------------- softmax

#[test]
fn softmax_backward_known_values() {
    // y = softmax([1, 2, 3]), g = e0: dx = y0 * (e0 - y).
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let y = x.softmax(0).unwrap();
    let yv = f(&y);
    let g = t(&[1.0, 0.0, 0.0], &[3]);
    let dx = f(&g.softmax_backward(&y, 0, false).unwrap());
    let want: Vec<f32> = (0..3)
        .map(|i| yv[0] * (if i == 0 { 1.0 } else { 0.0 } - yv[i]))
        .collect();
    assert_close(&dx, &want, 1e-6);
    // log_softmax: dx = g - softmax(x) * sum(g).
    let ly = x.log_softmax(0).unwrap();
    let g = t(&[1.0, 2.0, -0.5], &[3]);
    let dx = f(&g.softmax_backward(&ly, -1, true).unwrap());
    let want: Vec<f32> = (0..3).map(|i| [1.0, 2.0, -0.5][i] - yv[i] * 2.5).collect();
    assert_close(&dx, &want, 1e-6);
}

/// Central differences of `L(x) = sum(g * op(x))` for every element of x.
fn numeric_grad(
    x: &[f32],
    shape: &[usize],
    g: &CpuTensor,
    op: impl Fn(&CpuTensor) -> CpuTensor,
) -> Vec<f32> {
    let h = 1e-2;
    (0..x.len())
        .map(|i| {
            let mut up = x.to_vec();
            up[i] += h;
            let mut down = x.to_vec();
            down[i] -= h;
            (dot(g, &op(&t(&up, shape))) - dot(g, &op(&t(&down, shape)))) / (2.0 * h)
        })
        .collect()
}

#[test]
fn softmax_backward_matches_finite_differences_on_every_axis() {
    let shape = [2, 3, 4];
    let x = CpuTensor::randn(&shape, 0.0, 1.0, 3).unwrap();
    let g = CpuTensor::randn(&shape, 0.0, 1.0, 4).unwrap();
    for axis in [0isize, 1, -1] {
        for log in [false, true] {
            let fwd = |x: &CpuTensor| {
                if log {
                    x.log_softmax(axis).unwrap()
                } else {
                    x.softmax(axis).unwrap()
                }
            };
            let got = f(&g.softmax_backward(&fwd(&x), axis, log).unwrap());
            let want = numeric_grad(&f(&x), &shape, &g, fwd);
            assert_close(&got, &want, 5e-3);
        }
    }
}

#[test]
fn softmax_backward_reads_views() {
    // The same data through a transposed view gives the transposed result.
    let x = CpuTensor::randn(&[4, 5], 0.0, 1.0, 9).unwrap();
    let g = CpuTensor::randn(&[4, 5], 0.0, 1.0, 10).unwrap();
    let y = x.softmax(1).unwrap();
    let dense = g.softmax_backward(&y, 1, false).unwrap();
    let yt = y.transpose(0, 1).unwrap();
    let gt = g.transpose(0, 1).unwrap();
    let viewed = gt.softmax_backward(&yt, 0, false).unwrap();
    assert_close(
        &f(&viewed.transpose(0, 1).unwrap().contiguous().unwrap()),
        &f(&dense),
        1e-6,
    );
}

#[test]
fn softmax_backward_errors_and_empty() {
    let g = t(&[1.0, 2.0], &[2]);
    let e = g.softmax_backward(&g, 1, false).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadAxis {
                axis: 1,
                rank: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = g
        .softmax_backward(&t(&[1.0, 2.0], &[1, 2]), 0, false)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = g.softmax_backward(&ti(&[0, 1], &[2]), 0, true).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
    let empty = CpuTensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!(
        empty.softmax_backward(&empty, 1, false).unwrap().shape(),
        &[0, 3]
    );
    let zero_len = CpuTensor::zeros(&[2, 0], DType::F32).unwrap();
    assert_eq!(
        zero_len
            .softmax_backward(&zero_len, 1, true)
            .unwrap()
            .shape(),
        &[2, 0]
    );
}

// ---------------------------------------------------------------- index_add

#[test]
fn index_add_matches_torch_example() {
    // torch: x = ones(5, 3); x.index_add_(0, [0, 4, 2], [[1,2,3],[4,5,6],[7,8,9]])
    let base = CpuTensor::ones(&[5, 3], DType::F32).unwrap();
    let src = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[3, 3]);
    let out = base.index_add(0, &ti(&[0, 4, 2], &[3]), &src).unwrap();
    assert_eq!(
        f(&out),
        vec![
            2.0, 3.0, 4.0, 1.0, 1.0, 1.0, 8.0, 9.0, 10.0, 1.0, 1.0, 1.0, 5.0, 6.0, 7.0
        ]
    );
    // The base is not modified.
    assert_eq!(f(&base), vec![1.0; 15]);
}

#[test]
fn index_add_accumulates_duplicates_on_inner_axis() {
    let base = CpuTensor::zeros(&[2, 3], DType::F32).unwrap();
    let src = t(&[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0], &[2, 4]);
    let out = base.index_add(-1, &ti(&[1, 1, 0, 1], &[4]), &src).unwrap();
    assert_eq!(f(&out), vec![3.0, 7.0, 0.0, 30.0, 70.0, 0.0]);
}

#[test]
fn index_add_is_the_adjoint_of_index_select() {
    // <index_select(x), g> == <x, index_add(0, idx, g)> for every x, g.
    let x = CpuTensor::randn(&[6, 4], 0.0, 1.0, 1).unwrap();
    let idx = ti(&[5, 0, 5, 2, 2, 2, 1], &[7]);
    let g = CpuTensor::randn(&[7, 4], 0.0, 1.0, 2).unwrap();
    let zeros = CpuTensor::zeros(&[6, 4], DType::F32).unwrap();
    let lhs = dot(&x.index_select(0, &idx).unwrap(), &g);
    let rhs = dot(&x, &zeros.index_add(0, &idx, &g).unwrap());
    assert!((lhs - rhs).abs() < 1e-4, "{lhs} vs {rhs}");
}

#[test]
fn index_add_reads_views_and_empty_index() {
    let base = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).transpose(0, 1).unwrap();
    let src = t(&[10.0, 20.0], &[2, 1]);
    // Column 1 of the transposed base [[1,3],[2,4]] gets [10, 20].
    let out = base.index_add(1, &ti(&[1], &[1]), &src).unwrap();
    assert_eq!(f(&out), vec![1.0, 13.0, 2.0, 24.0]);
    let none = base
        .index_add(
            0,
            &ti(&[], &[0]),
            &CpuTensor::zeros(&[0, 2], DType::F32).unwrap(),
        )
        .unwrap();
    assert_eq!(f(&none), f(&base));
}

#[test]
fn index_add_errors() {
    let base = CpuTensor::zeros(&[3, 2], DType::F32).unwrap();
    let src = CpuTensor::ones(&[2, 2], DType::F32).unwrap();
    let e = base.index_add(0, &ti(&[0, 3], &[2]), &src).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                op: "index_add",
                index: 3,
                size: 3
            }
        ),
        "{e}"
    );
    let e = base.index_add(0, &ti(&[-1, 0], &[2]), &src).unwrap_err();
    assert!(matches!(e, Error::IndexOutOfRange { index: -1, .. }), "{e}");
    let e = base.index_add(2, &ti(&[0, 1], &[2]), &src).unwrap_err();
    assert!(matches!(e, Error::BadAxis { axis: 2, .. }), "{e}");
    let e = base
        .index_add(
            0,
            &ti(&[0, 1], &[2]),
            &CpuTensor::ones(&[2, 3], DType::F32).unwrap(),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("[3, 2]") && e.to_string().contains("[2, 3]"));
    let e = base.index_add(0, &ti(&[0], &[1]), &src).unwrap_err();
    assert!(e.to_string().contains("index of shape [1]"), "{e}");
    let e = base.index_add(0, &ti(&[0, 1], &[1, 2]), &src).unwrap_err();
    assert!(e.to_string().contains("1-D"), "{e}");
    let e = base.index_add(0, &t(&[0.0, 1.0], &[2]), &src).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::I32,
                ..
            }
        ),
        "{e}"
    );
    let e = base
        .index_add(0, &ti(&[0, 1], &[2]), &ti(&[1, 2, 3, 4], &[2, 2]))
        .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
}

// ---------------------------------------------------------------- scatter_add

#[test]
fn scatter_add_matches_torch_example() {
    // torch: zeros(3, 5).scatter_add(0, [[0, 1, 2, 0, 0]], ones(2, 5))
    let base = CpuTensor::zeros(&[3, 5], DType::F32).unwrap();
    let src = CpuTensor::ones(&[2, 5], DType::F32).unwrap();
    let out = base
        .scatter_add(0, &ti(&[0, 1, 2, 0, 0], &[1, 5]), &src)
        .unwrap();
    assert_eq!(
        f(&out),
        vec![
            1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0
        ]
    );
    // Two rows of index: duplicates accumulate.
    let out = base
        .scatter_add(0, &ti(&[0, 1, 2, 0, 0, 0, 1, 2, 0, 0], &[2, 5]), &src)
        .unwrap();
    assert_eq!(
        f(&out),
        vec![
            2.0, 0.0, 0.0, 2.0, 2.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0
        ]
    );
}

#[test]
fn scatter_add_on_last_axis_with_smaller_index() {
    // Index [2, 2] over base [2, 4], src [3, 3]: only src[:2, :2] is used.
    let base = CpuTensor::ones(&[2, 4], DType::F32).unwrap();
    let src = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[3, 3]);
    let out = base
        .scatter_add(1, &ti(&[3, 3, 0, 2], &[2, 2]), &src)
        .unwrap();
    assert_eq!(f(&out), vec![1.0, 1.0, 1.0, 4.0, 5.0, 1.0, 6.0, 1.0]);
}

#[test]
fn scatter_add_is_the_adjoint_of_gather() {
    let x = CpuTensor::randn(&[3, 5], 0.0, 1.0, 5).unwrap();
    let idx = ti(&[4, 4, 0, 1, 4, 3, 2, 2, 2], &[3, 3]);
    let g = CpuTensor::randn(&[3, 3], 0.0, 1.0, 6).unwrap();
    let zeros = CpuTensor::zeros(&[3, 5], DType::F32).unwrap();
    let lhs = dot(&x.gather(1, &idx).unwrap(), &g);
    let rhs = dot(&x, &zeros.scatter_add(1, &idx, &g).unwrap());
    assert!((lhs - rhs).abs() < 1e-4, "{lhs} vs {rhs}");
}

#[test]
fn scatter_add_errors() {
    let base = CpuTensor::zeros(&[3, 2], DType::F32).unwrap();
    let src = CpuTensor::ones(&[3, 2], DType::F32).unwrap();
    let e = base
        .scatter_add(0, &ti(&[0, 7], &[1, 2]), &src)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                op: "scatter_add",
                index: 7,
                size: 3
            }
        ),
        "{e}"
    );
    let e = base.scatter_add(-3, &ti(&[0], &[1, 1]), &src).unwrap_err();
    assert!(matches!(e, Error::BadAxis { axis: -3, .. }), "{e}");
    // Index larger than src.
    let e = base
        .scatter_add(0, &ti(&[0; 4], &[4, 1]), &src)
        .unwrap_err();
    assert!(e.to_string().contains("index of shape [4, 1]"), "{e}");
    // Index larger than base off the axis.
    let e = base
        .scatter_add(
            0,
            &ti(&[0; 3], &[1, 3]),
            &CpuTensor::ones(&[3, 3], DType::F32).unwrap(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("[1, 3]"), "{e}");
    // Rank mismatch.
    let e = base.scatter_add(0, &ti(&[0], &[1]), &src).unwrap_err();
    assert!(e.to_string().contains("rank"), "{e}");
    let e = base
        .scatter_add(0, &ti(&[0], &[1, 1]), &t(&[1.0; 3], &[3]))
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = base.scatter_add(0, &t(&[0.0], &[1, 1]), &src).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// index_add against a naive loop over flat positions.
    #[test]
    fn index_add_matches_naive(
        dims in prop::collection::vec(1usize..4, 1..=3),
        axis_pick in 0usize..3,
        n in 0usize..6,
        seed in any::<u64>(),
    ) {
        let axis = axis_pick % dims.len();
        let size = dims[axis];
        let idx: Vec<i32> = (0..n).map(|i| ((seed >> (i * 3)) % size as u64) as i32).collect();
        let mut src_shape = dims.clone();
        src_shape[axis] = n;
        let base = CpuTensor::randn(&dims, 0.0, 1.0, seed).unwrap();
        let src = CpuTensor::randn(&src_shape, 0.0, 1.0, seed ^ 7).unwrap();
        let got = f(&base.index_add(axis as isize, &ti(&idx, &[n]), &src).unwrap());
        let mut want = f(&base);
        let sv = f(&src);
        let inner: usize = dims[axis + 1..].iter().product();
        for (p, &v) in sv.iter().enumerate() {
            let (outer, rest) = (p / (n * inner), p % (n * inner));
            let (i, k) = (rest / inner, rest % inner);
            want[(outer * size + idx[i] as usize) * inner + k] += v;
        }
        assert_close(&got, &want, 1e-5);
    }
}
