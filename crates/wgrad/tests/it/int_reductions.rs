//! Max, min, argmax, argmin, `max(dim)`/`min(dim)` and the unary ops on I32
//! tensors, as PyTorch runs them on int32: exact over the whole i32 range
//! (values past 2^24 that an f32 cannot tell apart, i32::MIN and MAX, ties
//! keeping the first index) on the CPU and the GPU, against a plain Rust
//! reference; integer-closed unary ops stay I32, the others give F32.

use wgrad::{DType, Device, Tensor, UnaryOp};

use crate::common::gpu;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

/// A [3, 5] matrix: near-equal large values (16_777_217 vs 16_777_216 are
/// one f32 apart: none), both ends of i32, ties, negatives.
fn values() -> Vec<i32> {
    vec![
        16_777_217,
        16_777_216,
        -3,
        16_777_217,
        7, //
        i32::MIN,
        -1,
        i32::MIN,
        0,
        -2_000_000_001, //
        i32::MAX,
        5,
        i32::MAX - 1,
        i32::MAX,
        -7,
    ]
}

fn rows() -> Vec<Vec<i32>> {
    values().chunks(5).map(<[i32]>::to_vec).collect()
}

fn first_index(row: &[i32], best: i32) -> i32 {
    row.iter().position(|&x| x == best).unwrap() as i32
}

#[test]
fn extremes_are_exact_over_the_whole_range() {
    for d in devices() {
        let x = Tensor::from_vec(values(), &[3, 5], &d).unwrap();
        let max_rows: Vec<i32> = rows().iter().map(|r| *r.iter().max().unwrap()).collect();
        let min_rows: Vec<i32> = rows().iter().map(|r| *r.iter().min().unwrap()).collect();
        let amax = x.max(&[1], false).unwrap();
        assert_eq!(amax.dtype(), DType::I32);
        assert_eq!(amax.to_vec::<i32>().unwrap(), max_rows, "{d:?}");
        assert_eq!(
            x.min(&[-1], false).unwrap().to_vec::<i32>().unwrap(),
            min_rows
        );
        let cols_max: Vec<i32> = (0..5)
            .map(|c| rows().iter().map(|r| r[c]).max().unwrap())
            .collect();
        let kept = x.max(&[0], true).unwrap();
        assert_eq!(kept.shape().to_vec(), vec![1, 5]);
        assert_eq!(kept.to_vec::<i32>().unwrap(), cols_max, "{d:?}");
        assert_eq!(
            x.max(&[], false).unwrap().to_vec::<i32>().unwrap(),
            [i32::MAX]
        );
        assert_eq!(
            x.min(&[], false).unwrap().to_vec::<i32>().unwrap(),
            [i32::MIN]
        );

        let argmax: Vec<i32> = rows()
            .iter()
            .zip(&max_rows)
            .map(|(r, &m)| first_index(r, m))
            .collect();
        let argmin: Vec<i32> = rows()
            .iter()
            .zip(&min_rows)
            .map(|(r, &m)| first_index(r, m))
            .collect();
        assert_eq!(argmax, [0, 3, 0]);
        assert_eq!(
            x.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
            argmax,
            "{d:?}"
        );
        assert_eq!(
            x.argmin(1, false).unwrap().to_vec::<i32>().unwrap(),
            argmin,
            "{d:?}"
        );
        assert_eq!(x.argmax_all().unwrap().to_vec::<i32>().unwrap(), [10]);
        assert_eq!(x.argmin_all().unwrap().to_vec::<i32>().unwrap(), [5]);

        let (v, i) = x.max_dim(1, true).unwrap();
        assert_eq!(v.dtype(), DType::I32);
        assert_eq!(v.shape().to_vec(), vec![3, 1]);
        assert_eq!(v.to_vec::<i32>().unwrap(), max_rows);
        assert_eq!(i.to_vec::<i32>().unwrap(), argmax);
        let (v, i) = x.min_dim(0, false).unwrap();
        assert_eq!(
            v.to_vec::<i32>().unwrap(),
            [i32::MIN, -1, i32::MIN, 0, -2_000_000_001]
        );
        assert_eq!(i.to_vec::<i32>().unwrap(), [1, 1, 1, 1, 1]);

        // 0-d and empty inputs.
        let s = Tensor::from_vec(vec![-9i32], &[], &d).unwrap();
        assert_eq!(s.max(&[], false).unwrap().to_vec::<i32>().unwrap(), [-9]);
        assert_eq!(s.argmax(0, false).unwrap().to_vec::<i32>().unwrap(), [0]);
        let e = Tensor::from_vec(Vec::<i32>::new(), &[2, 0], &d).unwrap();
        assert!(e.max(&[1], false).is_err());
        assert!(e.argmax(1, false).is_err());
        assert_eq!(e.max(&[0], false).unwrap().shape().to_vec(), vec![0]);
    }
}

#[test]
fn unary_ops_on_int32_follow_pytorch() {
    for d in devices() {
        let v = vec![-5i32, 0, 3, i32::MIN, i32::MAX];
        let x = Tensor::from_vec(v.clone(), &[5], &d).unwrap();
        let int = |op: UnaryOp| {
            let y = x.unary(op).unwrap();
            assert_eq!(y.dtype(), DType::I32, "{op:?} on {d:?}");
            y.to_vec::<i32>().unwrap()
        };
        assert_eq!(
            int(UnaryOp::Neg),
            v.iter().map(|a| a.wrapping_neg()).collect::<Vec<_>>()
        );
        assert_eq!(
            int(UnaryOp::Abs),
            v.iter().map(|a| a.wrapping_abs()).collect::<Vec<_>>()
        );
        assert_eq!(int(UnaryOp::Relu), [0, 0, 3, 0, i32::MAX]);
        assert_eq!(int(UnaryOp::Sign), [-1, 0, 1, -1, 1]);
        assert_eq!(
            int(UnaryOp::Square),
            v.iter().map(|a| a.wrapping_mul(*a)).collect::<Vec<_>>()
        );
        assert_eq!(int(UnaryOp::Floor), v);
        let clamp = UnaryOp::Clamp {
            min: Some(-2.0),
            max: Some(4.0),
        };
        assert_eq!(int(clamp), [-2, 0, 3, -2, 4]);
        let crossed = UnaryOp::Clamp {
            min: Some(4.0),
            max: Some(-2.0),
        };
        assert_eq!(int(crossed), [-2; 5]);
        // A new tensor, not the input's buffer.
        let y = x.unary(UnaryOp::Floor).unwrap();
        y.fill_(1.0).unwrap();
        assert_eq!(x.to_vec::<i32>().unwrap(), v);
        // Float ops promote to F32.
        let small = Tensor::from_vec(vec![0i32, 1, 4], &[3], &d).unwrap();
        let r = small.unary(UnaryOp::Sqrt).unwrap();
        assert_eq!(r.dtype(), DType::F32);
        assert_eq!(r.to_vec_f32().unwrap(), [0.0, 1.0, 2.0]);
        let half = UnaryOp::Clamp {
            min: Some(0.5),
            max: None,
        };
        assert_eq!(
            small.unary(half).unwrap().to_vec_f32().unwrap(),
            [0.5, 1.0, 4.0]
        );
    }
}

/// `prod` of I32 (an error before): I32 out, wrapping on overflow, as I32
/// `sum` is (PyTorch gives int64; the values below are torch 2.15's
/// `.prod(..).to(torch.int32)`, the same bits), over all elements and
/// over a dim with and without keepdim; a U32 mask multiplies as I32 (torch
/// prod of bool is int64 0/1); no gradient (an I32 tensor cannot require one).
#[test]
fn prod_of_int32_wraps_to_int32_as_sum_does() {
    for d in devices() {
        let x =
            Tensor::from_vec(vec![3, -4, 5, 100_000, 100_000, 7, -1, 0, 2], &[3, 3], &d).unwrap();
        let ints = |t: Tensor| {
            assert_eq!(t.dtype(), DType::I32, "on {d}");
            (t.shape().to_vec(), t.to_vec::<i32>().unwrap())
        };
        assert_eq!(ints(x.prod(&[], false).unwrap()), (vec![], vec![0]));
        assert_eq!(
            ints(x.prod(&[1], false).unwrap()),
            (vec![3], vec![-60, 1_280_523_264, 0])
        );
        assert_eq!(
            ints(x.prod(&[-1], true).unwrap()),
            (vec![3, 1], vec![-60, 1_280_523_264, 0])
        );
        // Down the columns: a strided read.
        assert_eq!(
            ints(x.prod(&[0], true).unwrap()),
            (vec![1, 3], vec![-300_000, 0, 70])
        );
        // (2^31 - 1)^2 * -7 * 3 = -21 mod 2^32; 2^16 * 2^16 * 3 = 0.
        let big = Tensor::from_vec(vec![i32::MAX, i32::MAX, -7, 3], &[4], &d).unwrap();
        assert_eq!(ints(big.prod(&[0], false).unwrap()).1, [-21]);
        let wrap = Tensor::from_vec(vec![65_536i32, 65_536, 3], &[3], &d).unwrap();
        assert_eq!(ints(wrap.prod(&[], false).unwrap()).1, [0]);
        // A long row (the GPU's 256 threads each take a stride, then a
        // tree), against Rust's wrapping product; odd factors, so that it
        // wraps without reaching 0.
        let long: Vec<i32> = (0..1000).map(|i| 2 * ((i % 13) - 6 + i / 97) + 1).collect();
        let want = long.iter().fold(1i32, |p, &v| p.wrapping_mul(v));
        assert_ne!(want, 0);
        let t = Tensor::from_vec(long, &[2, 500], &d).unwrap();
        assert_eq!(ints(t.prod(&[], false).unwrap()).1, [want]);
        // Empty products are 1; a 0-d tensor is itself.
        let empty = Tensor::from_vec(Vec::<i32>::new(), &[2, 0], &d).unwrap();
        assert_eq!(ints(empty.prod(&[1], false).unwrap()).1, [1, 1]);
        let scalar = Tensor::from_vec(vec![7i32], &[], &d).unwrap();
        assert_eq!(ints(scalar.prod(&[], false).unwrap()).1, [7]);
        // Masks: torch.tensor([[True, True], [True, False]]).prod(1) = [1, 0].
        let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 0.0], &[2, 2], &d)
            .unwrap()
            .ne_scalar(0.0)
            .unwrap();
        assert_eq!(ints(m.prod(&[1], false).unwrap()).1, [1, 0]);
        assert!(!x.prod(&[], false).unwrap().requires_grad());
    }
}
