use wgrad_core::random::{normal, seed_keys, uniform};
use wgrad_cpu::{CpuTensor, DType, Error};

use crate::{err, f};

#[test]
fn fills_have_shape_dtype_and_values() {
    let z = CpuTensor::zeros(&[2, 3], DType::F32).unwrap();
    assert_eq!(z.shape(), &[2, 3]);
    assert_eq!(f(&z), vec![0.0; 6]);
    let o = CpuTensor::ones(&[4], DType::I32).unwrap();
    assert_eq!(o.to_vec::<i32>().unwrap(), vec![1; 4]);
    let v = CpuTensor::full(&[2], 2.75, DType::F32).unwrap();
    assert_eq!(f(&v), vec![2.75, 2.75]);
    let i = CpuTensor::full(&[1], -2.75, DType::I32).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![-2]);
    let u = CpuTensor::full(&[0, 3], 1.0, DType::U32).unwrap();
    assert_eq!(u.numel(), 0);
    assert_eq!(u.dtype(), DType::U32);
    let s = CpuTensor::full(&[], 5.0, DType::F32).unwrap();
    assert_eq!(s.rank(), 0);
    assert_eq!(s.item::<f32>().unwrap(), 5.0);
}

#[test]
fn arange_matches_torch() {
    let a = CpuTensor::arange(0.0, 5.0, 1.0, DType::F32).unwrap();
    assert_eq!(f(&a), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    // torch.arange(1, 2, 0.3) has ceil(1/0.3) = 4 elements.
    let b = CpuTensor::arange(1.0, 2.0, 0.3, DType::F32).unwrap();
    crate::assert_close(&f(&b), &[1.0, 1.3, 1.6, 1.9], 1e-6);
    let c = CpuTensor::arange(5.0, 0.0, -2.0, DType::I32).unwrap();
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![5, 3, 1]);
    let e = CpuTensor::arange(3.0, 3.0, 1.0, DType::F32).unwrap();
    assert_eq!(e.shape(), &[0]);
    let msg = err(CpuTensor::arange(0.0, 5.0, -1.0, DType::F32));
    assert!(msg.contains("arange") && msg.contains("-1"), "{msg}");
    assert!(CpuTensor::arange(0.0, 5.0, 0.0, DType::F32).is_err());
}

#[test]
fn random_ops_follow_the_shared_generator() {
    let r = CpuTensor::rand(&[3, 5], -1.0, 2.0, 42).unwrap();
    let keys = seed_keys(42);
    let want: Vec<f32> = (0..15).map(|i| uniform(keys, i, -1.0, 2.0)).collect();
    assert_eq!(f(&r), want);
    assert!(f(&r).iter().all(|&x| (-1.0..2.0).contains(&x)));
    let n = CpuTensor::randn(&[7], 1.0, 0.5, 9).unwrap();
    let keys = seed_keys(9);
    let want: Vec<f32> = (0..7).map(|i| normal(keys, i, 1.0, 0.5)).collect();
    assert_eq!(f(&n), want);
    // A different seed gives different numbers.
    assert_ne!(
        f(&CpuTensor::rand(&[4], 0.0, 1.0, 1).unwrap()),
        f(&CpuTensor::rand(&[4], 0.0, 1.0, 2).unwrap())
    );
}

#[test]
fn from_vec_length_mismatch_names_length_and_shape() {
    let e = CpuTensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains('5') && msg.contains("[2, 3]"), "{msg}");
}

#[test]
fn rank_above_six_is_rejected() {
    let e = CpuTensor::zeros(&[1; 7], DType::F32).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("rank 7"), "{e}");
    let x = CpuTensor::zeros(&[1; 6], DType::F32).unwrap();
    assert!(x.unsqueeze(0).is_err());
    assert!(CpuTensor::from_vec(vec![0.0f32], &[1; 7]).is_err());
}

#[test]
fn to_vec_checks_the_dtype() {
    let x = CpuTensor::zeros(&[2], DType::F32).unwrap();
    let e = x.to_vec::<i32>().unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("int32") && msg.contains("float32"), "{msg}");
    assert!(x.as_u32().is_err());
}

#[test]
fn ndarray_round_trip() {
    let a = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32).into_dyn();
    let x = CpuTensor::from_array_f32(a.clone()).unwrap();
    assert_eq!(x.as_f32().unwrap(), a.view());
    // A Fortran-order array is read in logical order.
    let fa = a.t().to_owned();
    let y = CpuTensor::from_array(fa.clone()).unwrap();
    assert_eq!(f(&y), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(y.to_array::<f32>().unwrap(), fa);
}
