use wgrad_cpu::{CpuTensor, DType, Error};

use crate::{assert_close, err, f, t};

fn x23() -> CpuTensor {
    t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
}

#[test]
fn sum_and_mean_over_axes() {
    let x = x23();
    assert_eq!(f(&x.sum(&[], false).unwrap()), vec![21.0]);
    assert_eq!(x.sum(&[], false).unwrap().shape(), &[] as &[usize]);
    assert_eq!(x.sum(&[], true).unwrap().shape(), &[1, 1]);
    assert_eq!(f(&x.sum(&[0], false).unwrap()), vec![5.0, 7.0, 9.0]);
    let s1 = x.sum(&[-1], true).unwrap();
    assert_eq!(s1.shape(), &[2, 1]);
    assert_eq!(f(&s1), vec![6.0, 15.0]);
    assert_eq!(f(&x.mean(&[1], false).unwrap()), vec![2.0, 5.0]);
    assert_eq!(f(&x.mean(&[0, 1], false).unwrap()), vec![3.5]);
    let y = CpuTensor::arange(0.0, 24.0, 1.0, DType::F32)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    // sum over axes 0 and 2: for j, sum_i sum_k (12i + 4j + k) = 2*(4*4j + 6) + 12*4
    let want: Vec<f32> = (0..3).map(|j| (2 * (16 * j + 6) + 48) as f32).collect();
    assert_eq!(f(&y.sum(&[0, 2], false).unwrap()), want);
    assert_eq!(f(&y.sum(&[2, 0], false).unwrap()), want);
}

#[test]
fn reductions_of_views() {
    let xt = x23().transpose(0, 1).unwrap();
    assert_eq!(f(&xt.sum(&[1], false).unwrap()), vec![5.0, 7.0, 9.0]);
    assert_eq!(f(&xt.max(&[0], false).unwrap()), vec![3.0, 6.0]);
    let e = t(&[2.0], &[1, 1]).expand(&[3, 4]).unwrap();
    assert_eq!(f(&e.sum(&[], false).unwrap()), vec![24.0]);
}

#[test]
fn max_min_and_nan() {
    let x = t(&[3.0, -1.0, 7.0, 0.0, 7.0, -5.0], &[2, 3]);
    assert_eq!(f(&x.max(&[1], false).unwrap()), vec![7.0, 7.0]);
    assert_eq!(f(&x.min(&[1], false).unwrap()), vec![-1.0, -5.0]);
    assert_eq!(f(&x.max(&[], false).unwrap()), vec![7.0]);
    assert_eq!(f(&x.min(&[0], true).unwrap()), vec![0.0, -1.0, -5.0]);
    let n = t(&[1.0, f32::NAN, 3.0], &[3]);
    assert!(f(&n.max(&[], false).unwrap())[0].is_nan());
    assert!(f(&n.min(&[], false).unwrap())[0].is_nan());
}

#[test]
fn var_with_correction() {
    let x = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    assert_close(&f(&x.var(&[], 1, false).unwrap()), &[5.0 / 3.0], 1e-6);
    assert_close(&f(&x.var(&[], 0, false).unwrap()), &[1.25], 1e-6);
    let v = x23().var(&[1], 1, true).unwrap();
    assert_eq!(v.shape(), &[2, 1]);
    assert_close(&f(&v), &[1.0, 1.0], 1e-6);
    // n <= correction divides by zero: 0/0 = NaN as in torch.
    assert!(f(&t(&[3.0], &[1]).var(&[], 1, false).unwrap())[0].is_nan());
}

#[test]
fn empty_reductions() {
    let e = t(&[], &[2, 0]);
    assert_eq!(f(&e.sum(&[1], false).unwrap()), vec![0.0, 0.0]);
    assert_eq!(f(&e.sum(&[], false).unwrap()), vec![0.0]);
    assert!(f(&e.mean(&[1], false).unwrap()).iter().all(|x| x.is_nan()));
    // reducing the non-empty axis of an empty tensor gives an empty result
    assert_eq!(e.sum(&[0], false).unwrap().shape(), &[0]);
    for r in [
        e.max(&[1], false),
        e.min(&[], false),
        e.argmax(1, false),
        e.argmin(-1, true),
    ] {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
        assert!(err.to_string().contains("[2, 0]"), "{err}");
    }
}

#[test]
fn argmax_argmin_first_index_and_nan() {
    let x = t(&[1.0, 5.0, 5.0, -2.0, -2.0, 0.0], &[2, 3]);
    let am = x.argmax(1, false).unwrap();
    assert_eq!(am.dtype(), DType::I32);
    assert_eq!(am.to_vec::<i32>().unwrap(), vec![1, 2]);
    assert_eq!(
        x.argmin(1, false).unwrap().to_vec::<i32>().unwrap(),
        vec![0, 0]
    );
    let a0 = x.argmax(0, true).unwrap();
    assert_eq!(a0.shape(), &[1, 3]);
    assert_eq!(a0.to_vec::<i32>().unwrap(), vec![0, 0, 0]);
    let ties = t(&[4.0, 4.0, 4.0], &[3]);
    assert_eq!(
        ties.argmax(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![0]
    );
    let n = t(&[1.0, f32::NAN, 9.0, f32::NAN], &[4]);
    assert_eq!(
        n.argmax(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![1]
    );
    assert_eq!(
        n.argmin(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![1]
    );
    let xt = x.transpose(0, 1).unwrap();
    assert_eq!(
        xt.argmax(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 2]
    );
}

#[test]
fn reduction_axis_and_dtype_errors() {
    let x = x23();
    let e = x.sum(&[2], false).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadAxis {
                axis: 2,
                rank: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("sum") && e.to_string().contains("axis 2"),
        "{e}"
    );
    let e = x.argmax(-3, false).unwrap_err();
    assert!(matches!(e, Error::BadAxis { axis: -3, .. }), "{e:?}");
    let msg = err(x.mean(&[0, -2], false));
    assert!(msg.contains("more than once"), "{msg}");
    let i = crate::ti(&[1, 2], &[2]);
    assert!(matches!(
        i.sum(&[], false).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
    assert!(matches!(
        i.argmax(0, false).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
}

#[test]
fn large_reductions_agree_across_layouts_and_with_reference() {
    // 2048 x 600 elements: past the size where sums run on several threads.
    let (rows, cols) = (2048, 600);
    let x = CpuTensor::randn(&[rows, cols], 0.5, 2.0, 21).unwrap();
    let data = crate::f(&x);
    // Column sums of a contiguous tensor (added row by row) and of a
    // transposed view (copied into rows first) use the same pairwise tree,
    // so they agree exactly.
    let by_columns = crate::f(&x.sum(&[0], false).unwrap());
    let xt = x.transpose(0, 1).unwrap().contiguous().unwrap();
    let view = xt.transpose(0, 1).unwrap();
    assert_eq!(by_columns, crate::f(&view.sum(&[0], false).unwrap()));
    let want: Vec<f32> = (0..cols)
        .map(|c| (0..rows).map(|r| data[r * cols + c] as f64).sum::<f64>() as f32)
        .collect();
    crate::assert_close(&by_columns, &want, 1e-4);
    let means = crate::f(&x.mean(&[0], true).unwrap());
    let want_means: Vec<f32> = want.iter().map(|s| s / rows as f32).collect();
    crate::assert_close(&means, &want_means, 1e-5);
    // A whole-tensor sum and per-row sums.
    let total: f64 = data.iter().map(|&v| v as f64).sum();
    crate::assert_close(
        &crate::f(&x.sum(&[], false).unwrap()),
        &[total as f32],
        1e-4,
    );
    let row_sums: Vec<f32> = data
        .chunks(cols)
        .map(|r| r.iter().map(|&v| v as f64).sum::<f64>() as f32)
        .collect();
    crate::assert_close(&crate::f(&x.sum(&[1], false).unwrap()), &row_sums, 1e-4);
}
