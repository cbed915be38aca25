//! Property tests against naive reference loops.

use proptest::prelude::*;
use wgrad_cpu::CpuTensor;

use crate::{assert_close, f, t};

/// A shape of rank 1..=4 with dims 0..=4, plus matching data.
fn tensor_strategy() -> impl Strategy<Value = (Vec<usize>, Vec<f32>)> {
    prop::collection::vec(0usize..=4, 1..=4).prop_flat_map(|shape| {
        let n = shape.iter().product::<usize>();
        (Just(shape), prop::collection::vec(-10.0f32..10.0, n))
    })
}

/// Row-major multi-index of flat position `i`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for (ci, &d) in c.iter_mut().zip(shape).rev() {
        *ci = i % d;
        i /= d;
    }
    c
}

/// Flat row-major position of a multi-index.
fn ravel(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (&ci, &d)| acc * d + ci)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matmul_matches_triple_loop(
        m in 0usize..6, k in 0usize..6, n in 0usize..6, batch in 1usize..3,
        ta in any::<bool>(), tb in any::<bool>(), seed in any::<u64>(),
    ) {
        let a = CpuTensor::rand(&[batch, m, k], -1.0, 1.0, seed).unwrap();
        let b = CpuTensor::rand(&[k, n], -1.0, 1.0, seed ^ 1).unwrap();
        let (av, bv) = (f(&a), f(&b));
        let mut want = vec![0.0f32; batch * m * n];
        for p in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    want[(p * m + i) * n + j] =
                        (0..k).map(|l| av[(p * m + i) * k + l] * bv[l * n + j]).sum();
                }
            }
        }
        // Feed transposed copies through matmul_t so the result must be the same.
        let a_in = if ta { a.transpose(1, 2).unwrap().contiguous().unwrap() } else { a.clone() };
        let b_in = if tb { b.transpose(0, 1).unwrap().contiguous().unwrap() } else { b.clone() };
        let got = a_in.matmul_t(&b_in, ta, tb).unwrap();
        prop_assert_eq!(got.shape(), &[batch, m, n][..]);
        assert_close(&f(&got), &want, 1e-5);
    }

    #[test]
    fn sum_matches_naive((shape, data) in tensor_strategy(), axis_bits in 0u8..16, keepdim in any::<bool>()) {
        let x = t(&data, &shape);
        let axes: Vec<isize> = (0..shape.len()).filter(|a| axis_bits & (1 << a) != 0).map(|a| a as isize).collect();
        let reduced: Vec<usize> = if axes.is_empty() { (0..shape.len()).collect() } else { axes.iter().map(|&a| a as usize).collect() };
        let out_shape: Vec<usize> = shape.iter().enumerate().map(|(i, &d)| if reduced.contains(&i) { 1 } else { d }).collect();
        let mut want = vec![0.0f32; out_shape.iter().product()];
        for (i, &v) in data.iter().enumerate() {
            let mut c = unravel(i, &shape);
            for &a in &reduced { c[a] = 0; }
            want[ravel(&c, &out_shape)] += v;
        }
        let got = x.sum(&axes, keepdim).unwrap();
        if keepdim {
            prop_assert_eq!(got.shape(), &out_shape[..]);
        } else {
            prop_assert_eq!(got.numel(), want.len());
            prop_assert_eq!(got.rank(), shape.len() - reduced.len());
        }
        assert_close(&f(&got), &want, 1e-5);
    }

    #[test]
    fn broadcast_add_matches_manual_indexing(
        (shape, data) in tensor_strategy(), mask in 0u8..16, drop in 0usize..3, seed in any::<u64>(),
    ) {
        // The other operand: some dims set to 1 and some leading dims dropped.
        let other_shape: Vec<usize> = shape.iter().enumerate()
            .map(|(i, &d)| if mask & (1 << i) != 0 { 1 } else { d })
            .skip(drop.min(shape.len()))
            .collect();
        let other = CpuTensor::rand(&other_shape, -5.0, 5.0, seed).unwrap();
        let x = t(&data, &shape);
        let ov = f(&other);
        let lead = shape.len() - other_shape.len();
        // The other operand's value at each output position.
        let spread: Vec<f32> = (0..data.len()).map(|i| {
            let c = unravel(i, &shape);
            let oc: Vec<usize> = other_shape.iter().enumerate()
                .map(|(j, &d)| if d == 1 { 0 } else { c[j + lead] })
                .collect();
            ov[ravel(&oc, &other_shape)]
        }).collect();
        let want: Vec<f32> = data.iter().zip(&spread).map(|(&d, &o)| d + o).collect();
        let got = x.add(&other).unwrap();
        prop_assert_eq!(got.shape(), &shape[..]);
        prop_assert_eq!(f(&got), want.clone());
        // Addition commutes, including the broadcast direction.
        prop_assert_eq!(f(&other.add(&x).unwrap()), want);
        // Subtraction keeps its operand order in either direction.
        let x_minus: Vec<f32> = data.iter().zip(&spread).map(|(&d, &o)| d - o).collect();
        let minus_x: Vec<f32> = data.iter().zip(&spread).map(|(&d, &o)| o - d).collect();
        prop_assert_eq!(f(&x.sub(&other).unwrap()), x_minus);
        prop_assert_eq!(f(&other.sub(&x).unwrap()), minus_x);
    }

    #[test]
    fn permute_then_contiguous_matches_indexing((shape, data) in tensor_strategy(), rot in 0usize..4) {
        let r = shape.len();
        let perm: Vec<isize> = (0..r).map(|i| ((i + rot) % r) as isize).collect();
        let x = t(&data, &shape).permute(&perm).unwrap();
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p as usize]).collect();
        let want: Vec<f32> = (0..data.len()).map(|i| {
            let oc = unravel(i, &out_shape);
            let mut ic = vec![0; r];
            for (o, &p) in perm.iter().enumerate() { ic[p as usize] = oc[o]; }
            data[ravel(&ic, &shape)]
        }).collect();
        prop_assert_eq!(f(&x.contiguous().unwrap()), want.clone());
        prop_assert_eq!(f(&x.reshape(&[-1]).unwrap()), want);
    }

    #[test]
    fn softmax_rows_sum_to_one((shape, data) in tensor_strategy(), axis in 0usize..4) {
        let x = t(&data, &shape);
        let axis = (axis % shape.len()) as isize;
        let s = x.softmax(axis).unwrap();
        prop_assert!(f(&s).iter().all(|&v| (0.0..=1.0).contains(&v)));
        if shape[axis as usize] > 0 {
            let sums = f(&s.sum(&[axis], false).unwrap());
            assert_close(&sums, &vec![1.0; sums.len()], 1e-5);
        }
    }
}
