//! F16/BF16 operands meeting other dtypes, as PyTorch's CPU kernels
//! compute them (found by tests/pytorch_diff/gen_train.py): every operand
//! converted to the common dtype before the op, except the right operand of
//! mul/div that is a 0-d tensor or a Python number; Python's `v / x` as
//! `x.reciprocal() * v`; and a batch of products against one matrix folded
//! into one product for the matrix's gradient.

use wgrad::{BinaryOp, DType, Device, Tensor};

use crate::common::gpu;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn half(v: &[f32], shape: &[usize], dt: DType, d: &Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape, d)
        .unwrap()
        .cast(dt)
        .unwrap()
}

/// The values as f64 (exact for every half value).
fn read(t: &Tensor) -> Vec<f64> {
    let v = t.cast(DType::F32).unwrap().to_vec_f32().unwrap();
    v.into_iter().map(f64::from).collect()
}

/// `x_f16 - torch.tensor(4.0653)` rounds the 0-d float32 operand to f16
/// (4.06640625) first; mul and div read a right-hand 0-d operand in float.
/// Values from PyTorch 2.15 (CPU).
#[test]
fn zero_d_operand_is_converted_to_the_half_dtype_first() {
    for d in devices() {
        let x = half(&[3.4629], &[1], DType::F16, &d);
        let s = Tensor::scalar(4.0653, &d).unwrap();
        let cases = [
            (s.binary(&x, BinaryOp::Sub).unwrap(), 0.603515625),
            (x.binary(&s, BinaryOp::Sub).unwrap(), -0.603515625),
            (x.binary(&s, BinaryOp::Add).unwrap(), 7.53125),
            (s.binary(&x, BinaryOp::Div).unwrap(), 1.173828125),
            (x.binary(&s, BinaryOp::Div).unwrap(), 0.85205078125),
        ];
        for (i, (got, want)) in cases.into_iter().enumerate() {
            assert_eq!(got.dtype(), DType::F16, "{i} {d:?}");
            assert_eq!(read(&got), [want], "case {i} on {d:?}");
        }
        // `x_f16 < torch.tensor(1.0001)`: 1.0001 is 1.0 in f16.
        let one = half(&[1.0], &[1], DType::F16, &d);
        let t = Tensor::scalar(1.0001, &d).unwrap();
        assert_eq!(one.lt(&t).unwrap().to_vec::<u32>().unwrap(), [0], "{d:?}");
        // An I32 tensor meets bf16 as bf16: 257 + 0.0 is 256.
        let i = Tensor::from_vec(vec![257i32], &[1], &d).unwrap();
        let z = half(&[0.5], &[1], DType::BF16, &d);
        assert_eq!(
            read(&i.binary(&z, BinaryOp::Add).unwrap()),
            [256.0],
            "{d:?}"
        );
    }
}

/// Python's `v / x` on a half tensor is `x.reciprocal() * v`: the
/// reciprocal is rounded to the dtype before the product.
#[test]
fn python_number_over_half_tensor_rounds_the_reciprocal_first() {
    for d in devices() {
        for (dt, x, want) in [
            (DType::F16, 0.3701171875f64, 3.333984375f64),
            (DType::BF16, 1.109375, 1.1171875),
        ] {
            let t = half(&[x as f32], &[1], dt, &d);
            let got = t.binary_scalar(BinaryOp::Div, 1.2345678, true).unwrap();
            assert_eq!(got.dtype(), dt);
            assert_eq!(read(&got), [want], "{dt:?} {d:?}");
        }
    }
}

/// The gradient of `v / x` is PyTorch's reciprocal rule, -(g * v) * r^2
/// with r = 1/x, each product rounded to the dtype: at x = 0.047 in f16
/// `out / x` (452,800) would overflow, r^2 (452.75) does not. PyTorch
/// 2.15: [-44736, -250, -inf] (f16), -44800 (bf16).
#[test]
fn python_number_over_half_tensor_gradient_does_not_overflow() {
    // 385 / 8192 and 809 / 8192: exact in f16 (the inputs PyTorch saw).
    let (x0, g0) = (385.0 / 8192.0, 809.0 / 8192.0);
    for d in devices() {
        for (dt, want) in [
            (DType::F16, [-44736.0, -250.0, f64::NEG_INFINITY]),
            (DType::BF16, [-44800.0, -250.0, f64::NEG_INFINITY]),
        ] {
            let x = half(&[x0, -2.0, 0.0], &[3], dt, &d)
                .with_requires_grad(true)
                .unwrap();
            let y = x.binary_scalar(BinaryOp::Div, 1000.0, true).unwrap();
            let g = half(&[g0, 1.0, 1.0], &[3], dt, &d);
            y.backward_with(&g).unwrap();
            assert_eq!(read(&x.grad().unwrap()), want, "{dt:?} {d:?}");
        }
    }
}

/// `a[B, m, k] @ b[k, n]`: b's gradient is one product over the B * m rows
/// (PyTorch folds the batch into one `mm`), not a product per batch rounded
/// to bf16 and then summed, which cancels 130 - 130 to 0 here.
#[test]
fn matrix_under_a_batch_gets_its_gradient_from_one_folded_product() {
    for d in devices() {
        let a = half(&[1.0078125, 1.0], &[2, 1, 1], DType::BF16, &d);
        let b = half(&[1.0], &[1, 1], DType::BF16, &d)
            .detach()
            .with_requires_grad(true)
            .unwrap();
        let up = half(&[129.0, -130.0], &[2, 1, 1], DType::BF16, &d);
        a.matmul(&b).unwrap().backward_with(&up).unwrap();
        let g = b.grad().unwrap();
        assert_eq!(g.dtype(), DType::BF16);
        assert_eq!(g.shape(), [1, 1]);
        assert_eq!(read(&g), [0.0078125], "{d:?}");
        // The same through a transposed b (`x @ w.T`) and in F32.
        let w = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let x = Tensor::from_vec(
            vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            &[2, 2, 2],
            &d,
        )
        .unwrap();
        let y = x.matmul_t(&w, false, true).unwrap();
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(
            w.grad().unwrap().to_vec_f32().unwrap(),
            [16.0, 20.0],
            "{d:?}"
        );
    }
}

/// The gradients PyTorch computes from an op's result (sigmoid, tanh, exp,
/// expm1, sqrt, rsqrt, reciprocal) read that result rounded to the half
/// dtype: a bf16 sigmoid(6) is 0.99609375, whose y (1 - y) is 0.00389, not
/// sigmoid'(6) = 0.00247. Upstream gradient ones; values from PyTorch 2.15
/// (CPU), `x.grad` after `op(x).backward(ones)` (rsqrt's inputs avoid
/// PyTorch's f16 rsqrt, which is an ulp off at some, e.g. 9.1).
#[test]
fn gradients_from_the_rounded_result() {
    type Op = fn(&Tensor) -> wgrad::Result<Tensor>;
    /// (name, op, dtype, x, PyTorch's x.grad)
    type Case = (&'static str, Op, DType, [f32; 3], [f64; 3]);
    let cases: [Case; 7] = [
        (
            "sigmoid",
            |x| x.sigmoid(),
            DType::BF16,
            [6.0, -7.0, 0.5],
            [0.0038909912109375, 0.000911712646484375, 0.2353515625],
        ),
        (
            "tanh",
            |x| x.tanh(),
            DType::F16,
            [3.0, -2.5, 0.25],
            [0.00974273681640625, 0.0261993408203125, 0.93994140625],
        ),
        (
            "exp",
            |x| x.exp(),
            DType::BF16,
            [2.3, -1.7, 0.1],
            [9.9375, 0.181640625, 1.1015625],
        ),
        (
            "expm1",
            |x| x.expm1(),
            DType::F16,
            [1.3, -0.7, 3.1],
            [3.66796875, 0.49658203125, 22.1875],
        ),
        (
            "sqrt",
            |x| x.sqrt(),
            DType::BF16,
            [2.3, 0.7, 9.1],
            [0.330078125, 0.59765625, 0.166015625],
        ),
        (
            "rsqrt",
            |x| x.rsqrt(),
            DType::F16,
            [2.3, 0.7, 4.0],
            [-0.1431884765625, -0.85400390625, -0.0625],
        ),
        (
            "reciprocal",
            |x| x.recip(),
            DType::BF16,
            [2.3, -0.7, 9.1],
            [-0.189453125, -2.046875, -0.011962890625],
        ),
    ];
    for d in devices() {
        for (name, op, dt, x, want) in cases {
            let x = half(&x, &[3], dt, &d).with_requires_grad(true).unwrap();
            op(&x).unwrap().sum_all().unwrap().backward().unwrap();
            let g = x.grad().unwrap();
            assert_eq!(g.dtype(), dt, "{name}");
            assert_eq!(read(&g), want, "{name} {dt:?} on {d:?}");
        }
    }
}
