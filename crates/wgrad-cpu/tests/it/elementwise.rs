use wgrad_cpu::{BinaryOp, CompareOp, CpuTensor, DType, Error, UnaryOp};

use crate::{assert_close, err, f, t, ti};

#[test]
fn binary_known_values() {
    let a = t(&[1.0, -2.0, 3.0, 4.0], &[2, 2]);
    let b = t(&[2.0, 0.5, -1.0, 4.0], &[2, 2]);
    assert_eq!(f(&a.add(&b).unwrap()), vec![3.0, -1.5, 2.0, 8.0]);
    assert_eq!(f(&a.sub(&b).unwrap()), vec![-1.0, -2.5, 4.0, 0.0]);
    assert_eq!(f(&a.mul(&b).unwrap()), vec![2.0, -1.0, -3.0, 16.0]);
    assert_eq!(f(&a.div(&b).unwrap()), vec![0.5, -4.0, -3.0, 1.0]);
    assert_eq!(f(&a.maximum(&b).unwrap()), vec![2.0, 0.5, 3.0, 4.0]);
    assert_eq!(f(&a.minimum(&b).unwrap()), vec![1.0, -2.0, -1.0, 4.0]);
    let p = a.pow(&b).unwrap();
    assert_close(&f(&p), &[1.0, f32::NAN, 1.0 / 3.0, 256.0], 1e-6);
    assert_eq!(
        f(&a.binary(&b, BinaryOp::Add).unwrap()),
        f(&a.add(&b).unwrap())
    );
    let nan = t(&[f32::NAN], &[1]);
    assert!(f(&a.maximum(&nan).unwrap()).iter().all(|x| x.is_nan()));
}

#[test]
fn broadcasting_including_size_zero_and_one() {
    let col = t(&[1.0, 2.0, 3.0], &[3, 1]);
    let row = t(&[10.0, 20.0], &[2]);
    let s = col.add(&row).unwrap();
    assert_eq!(s.shape(), &[3, 2]);
    assert_eq!(f(&s), vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    let scalar = CpuTensor::scalar(2.0);
    assert_eq!(f(&row.mul(&scalar).unwrap()), vec![20.0, 40.0]);
    let empty = t(&[], &[0, 1]);
    let e = empty.add(&row).unwrap();
    assert_eq!(e.shape(), &[0, 2]);
    assert_eq!(e.numel(), 0);
    let e2 = t(&[], &[2, 0]).mul(&t(&[5.0], &[1])).unwrap();
    assert_eq!(e2.shape(), &[2, 0]);
}

#[test]
fn non_contiguous_inputs() {
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let xt = x.transpose(0, 1).unwrap();
    let y = t(&[0.0, 10.0, 20.0, 30.0, 40.0, 50.0], &[3, 2]);
    assert_eq!(
        f(&xt.add(&y).unwrap()),
        vec![1.0, 14.0, 22.0, 35.0, 43.0, 56.0]
    );
    let both = xt.add(&xt).unwrap();
    assert!(both.is_contiguous());
    assert_eq!(f(&both), vec![2.0, 8.0, 4.0, 10.0, 6.0, 12.0]);
    let n = x.narrow(1, 1, 2).unwrap().neg().unwrap();
    assert_eq!(f(&n), vec![-2.0, -3.0, -5.0, -6.0]);
    let e = t(&[3.0], &[1])
        .expand(&[2, 2])
        .unwrap()
        .sub_scalar(1.0)
        .unwrap();
    assert_eq!(f(&e), vec![2.0; 4]);
}

#[test]
fn scalar_forms() {
    let x = t(&[1.0, 2.0, 4.0], &[3]);
    assert_eq!(f(&x.add_scalar(1.0).unwrap()), vec![2.0, 3.0, 5.0]);
    assert_eq!(f(&x.sub_scalar(1.0).unwrap()), vec![0.0, 1.0, 3.0]);
    assert_eq!(f(&x.mul_scalar(-2.0).unwrap()), vec![-2.0, -4.0, -8.0]);
    assert_eq!(f(&x.div_scalar(2.0).unwrap()), vec![0.5, 1.0, 2.0]);
    assert_eq!(f(&x.pow_scalar(2.0).unwrap()), vec![1.0, 4.0, 16.0]);
    assert_eq!(f(&x.maximum_scalar(2.0).unwrap()), vec![2.0, 2.0, 4.0]);
    assert_eq!(f(&x.minimum_scalar(2.0).unwrap()), vec![1.0, 2.0, 2.0]);
    // scalar on the left: 1 - x and 2 ^ x
    assert_eq!(
        f(&x.binary_scalar(BinaryOp::Sub, 1.0, true).unwrap()),
        vec![0.0, -1.0, -3.0]
    );
    assert_eq!(
        f(&x.binary_scalar(BinaryOp::Pow, 2.0, true).unwrap()),
        vec![2.0, 4.0, 16.0]
    );
    assert_eq!(
        f(&x.binary_scalar(BinaryOp::Div, 8.0, true).unwrap()),
        vec![8.0, 4.0, 2.0]
    );
}

/// PyTorch's pow kernel takes a scalar exponent of 0.5 as `sqrt` and -0.5
/// as `rsqrt`, which differ from C `pow` at -0.0 and -inf: torch 2.15
/// `torch.pow(torch.tensor([-inf, -0.0, 0.0, inf, -1.0, 4.0]), 0.5)` is
/// `[nan, -0., 0., inf, nan, 2.]`, and with -0.5 `[nan, -inf, inf, 0., nan, 0.5]`.
#[test]
fn pow_half_and_minus_half_are_sqrt_and_rsqrt() {
    let inf = f32::INFINITY;
    let x = t(&[-inf, -0.0, 0.0, inf, -1.0, 4.0], &[6]);
    // Bits, so that the sign of zeros counts; any NaN as one.
    let bits = |v: Vec<f32>| -> Vec<u32> {
        v.iter()
            .map(|v| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() })
            .collect()
    };
    let nan = f32::NAN;
    assert_eq!(
        bits(f(&x.pow_scalar(0.5).unwrap())),
        bits(vec![nan, -0.0, 0.0, inf, nan, 2.0])
    );
    assert_eq!(
        bits(f(&x.pow_scalar(-0.5).unwrap())),
        bits(vec![nan, -inf, inf, 0.0, nan, 0.5])
    );
    // Other exponents stay C pow: (-0)^1.5 = +0, and a base of 0.5 on the
    // left is pow too.
    assert_eq!(bits(f(&t(&[-0.0], &[1]).pow_scalar(1.5).unwrap())), [0]);
    assert_eq!(
        f(&t(&[2.0], &[1])
            .binary_scalar(BinaryOp::Pow, 0.5, true)
            .unwrap()),
        [0.25]
    );
}

#[test]
fn comparisons_give_u32_masks() {
    let a = t(&[1.0, 2.0, 3.0], &[3]);
    let b = t(&[2.0], &[1]);
    let m = |x: CpuTensor| {
        assert_eq!(x.dtype(), DType::U32);
        x.to_vec::<u32>().unwrap()
    };
    assert_eq!(m(a.eq(&b).unwrap()), vec![0, 1, 0]);
    assert_eq!(m(a.ne(&b).unwrap()), vec![1, 0, 1]);
    assert_eq!(m(a.lt(&b).unwrap()), vec![1, 0, 0]);
    assert_eq!(m(a.le(&b).unwrap()), vec![1, 1, 0]);
    assert_eq!(m(a.gt(&b).unwrap()), vec![0, 0, 1]);
    assert_eq!(m(a.ge(&b).unwrap()), vec![0, 1, 1]);
    assert_eq!(m(a.compare(&b, CompareOp::Ge).unwrap()), vec![0, 1, 1]);
    assert_eq!(m(a.gt_scalar(1.5).unwrap()), vec![0, 1, 1]);
    assert_eq!(m(a.eq_scalar(3.0).unwrap()), vec![0, 0, 1]);
    assert_eq!(m(a.ne_scalar(3.0).unwrap()), vec![1, 1, 0]);
    assert_eq!(m(a.le_scalar(2.0).unwrap()), vec![1, 1, 0]);
    assert_eq!(m(a.ge_scalar(2.0).unwrap()), vec![0, 1, 1]);
    let i = ti(&[1, 2, 3], &[3]);
    assert_eq!(m(i.lt_scalar(2.5).unwrap()), vec![1, 1, 0]);
    assert_eq!(m(i.eq(&ti(&[3, 2, 1], &[3])).unwrap()), vec![0, 1, 0]);
    // NaN compares unequal to everything.
    assert_eq!(
        m(t(&[f32::NAN], &[1]).eq(&t(&[f32::NAN], &[1])).unwrap()),
        vec![0]
    );
    // broadcasting [2,1] against [3]
    let c = t(&[0.0, 5.0], &[2, 1]).lt(&a).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(m(c), vec![1, 1, 1, 0, 0, 0]);
}

#[test]
fn comparison_dtype_errors() {
    // F32 with I32 compares in F32, as PyTorch promotes.
    let m = t(&[1.0, 1.5], &[2]).eq(&ti(&[1, 1], &[2])).unwrap();
    assert_eq!(m.to_vec::<u32>().unwrap(), vec![1, 0]);
    let mask = CpuTensor::from_vec(vec![1u32], &[1]).unwrap();
    let e = t(&[1.0], &[1]).eq(&mask).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("eq"), "{e}");
    assert!(matches!(
        mask.lt(&mask).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
    assert!(matches!(
        mask.lt_scalar(1.0).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
}

#[test]
fn where_cond_broadcasts_three_ways() {
    let mask = CpuTensor::from_vec(vec![1u32, 0, 1], &[3, 1]).unwrap();
    let a = t(&[1.0, 2.0], &[2]);
    let b = t(&[-1.0], &[]);
    let w = CpuTensor::where_cond(&mask, &a, &b).unwrap();
    assert_eq!(w.shape(), &[3, 2]);
    assert_eq!(f(&w), vec![1.0, 2.0, -1.0, -1.0, 1.0, 2.0]);
    let e = CpuTensor::where_cond(&a, &a, &b).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::U32,
                got: DType::F32,
                ..
            }
        ),
        "{e:?}"
    );
    let msg = err(CpuTensor::where_cond(&mask, &t(&[1.0; 8], &[4, 2]), &b));
    assert!(
        msg.contains("where_cond") && msg.contains("[3, 1]") && msg.contains("[4, 2]"),
        "{msg}"
    );
    let msg = err(CpuTensor::where_cond(&mask, &a, &t(&[0.0; 4], &[4])));
    assert!(msg.contains("[4]"), "{msg}");
}

#[test]
fn unary_known_values() {
    let x = t(&[-1.0, 0.0, 0.5, 2.0], &[4]);
    assert_eq!(f(&x.neg().unwrap()), vec![1.0, -0.0, -0.5, -2.0]);
    assert_eq!(f(&x.abs().unwrap()), vec![1.0, 0.0, 0.5, 2.0]);
    assert_eq!(f(&x.relu().unwrap()), vec![0.0, 0.0, 0.5, 2.0]);
    assert_eq!(f(&x.square().unwrap()), vec![1.0, 0.0, 0.25, 4.0]);
    assert_eq!(f(&x.recip().unwrap()), vec![-1.0, f32::INFINITY, 2.0, 0.5]);
    assert_eq!(f(&x.leaky_relu(0.1).unwrap()), vec![-0.1, 0.0, 0.5, 2.0]);
    assert_eq!(
        f(&x.clamp(Some(0.0), Some(1.0)).unwrap()),
        vec![0.0, 0.0, 0.5, 1.0]
    );
    assert_eq!(
        f(&x.clamp(None, Some(0.0)).unwrap()),
        vec![-1.0, 0.0, 0.0, 0.0]
    );
    assert_close(
        &f(&x.exp().unwrap()),
        &[0.367_879_44, 1.0, 1.648_721_3, 7.389_056],
        1e-6,
    );
    assert_close(
        &f(&x.sigmoid().unwrap()),
        &[0.268_941_43, 0.5, 0.622_459_3, 0.880_797_1],
        1e-6,
    );
    assert_close(
        &f(&x.tanh().unwrap()),
        &[-0.761_594_2, 0.0, 0.462_117_16, 0.964_027_6],
        1e-6,
    );
    // torch.nn.functional.gelu / silu
    assert_close(
        &f(&x.gelu().unwrap()),
        &[-0.158_655_25, 0.0, 0.345_731_14, 1.954_499_8],
        1e-6,
    );
    assert_close(
        &f(&x.silu().unwrap()),
        &[-0.268_941_43, 0.0, 0.311_229_65, 1.761_594_2],
        1e-6,
    );
    let p = t(&[1.0, 4.0, 0.25], &[3]);
    assert_eq!(f(&p.sqrt().unwrap()), vec![1.0, 2.0, 0.5]);
    assert_eq!(f(&p.rsqrt().unwrap()), vec![1.0, 0.5, 2.0]);
    assert_close(
        &f(&p.log().unwrap()),
        &[0.0, 1.386_294_4, -1.386_294_4],
        1e-6,
    );
    let a = t(&[0.0, std::f32::consts::FRAC_PI_2], &[2]);
    assert_close(&f(&a.sin().unwrap()), &[0.0, 1.0], 1e-6);
    assert_close(&f(&a.cos().unwrap()), &[1.0, 0.0], 1e-6);
    assert_eq!(f(&x.unary(UnaryOp::Abs).unwrap()), f(&x.abs().unwrap()));
    assert!(f(&t(&[f32::NAN], &[1]).clamp(Some(0.0), None).unwrap())[0].is_nan());
}

#[test]
fn f32_ops_reject_other_dtypes() {
    let i = ti(&[1, 2], &[2]);
    let x = t(&[1.0, 2.0], &[2]);
    let e = i.exp().unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::F32,
                got: DType::I32,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("exp") && e.to_string().contains("int32"),
        "{e}"
    );
    // Arithmetic promotes I32 with F32 to F32 and keeps I32 with I32, as
    // PyTorch does (int_ops in wgrad's tests); U32 masks stay errors.
    assert_eq!(x.add(&i).unwrap().dtype(), DType::F32);
    assert_eq!(i.add_scalar(1.0).unwrap().dtype(), DType::I32);
    let m = CpuTensor::from_vec(vec![1u32, 0], &[2]).unwrap();
    let e = x.add(&m).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("add"), "{e}");
    assert!(m.add_scalar(1.0).is_err());
}

#[test]
fn binary_shape_mismatch_names_both_shapes() {
    let e = t(&[0.0; 6], &[2, 3]).mul(&t(&[0.0; 4], &[4])).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("mul") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
    let msg = err(t(&[0.0; 6], &[2, 3]).lt(&t(&[0.0; 2], &[2])));
    assert!(msg.contains("lt") && msg.contains("[2]"), "{msg}");
}

#[test]
fn casts() {
    let x = t(&[-1.7, -0.2, 0.9, 2.5], &[4]);
    assert_eq!(
        x.cast(DType::I32).unwrap().to_vec::<i32>().unwrap(),
        vec![-1, 0, 0, 2]
    );
    let m = CpuTensor::from_vec(vec![0u32, 1, 1], &[3]).unwrap();
    assert_eq!(f(&m.cast(DType::F32).unwrap()), vec![0.0, 1.0, 1.0]);
    let i = ti(&[3, -4], &[2]);
    assert_eq!(f(&i.cast(DType::F32).unwrap()), vec![3.0, -4.0]);
    assert_eq!(
        i.cast(DType::U32).unwrap().to_vec::<u32>().unwrap(),
        vec![3, u32::MAX - 3]
    );
    assert_eq!(
        m.cast(DType::I32).unwrap().to_vec::<i32>().unwrap(),
        vec![0, 1, 1]
    );
    assert!(x.cast(DType::F32).unwrap().shares_storage(&x));
    let tr = t(&[1.5, 2.5, 3.5, 4.5], &[2, 2]).transpose(0, 1).unwrap();
    assert_eq!(
        tr.cast(DType::I32).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 3, 2, 4]
    );
}
