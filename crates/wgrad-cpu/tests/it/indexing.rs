use wgrad_cpu::{CpuTensor, DType, Error};

use crate::{f, t, ti};

fn x34() -> CpuTensor {
    CpuTensor::arange(0.0, 12.0, 1.0, DType::F32)
        .unwrap()
        .reshape(&[3, 4])
        .unwrap()
}

#[test]
fn index_select_picks_slices() {
    let x = x34();
    let r = x.index_select(0, &ti(&[2, 0, 2], &[3])).unwrap();
    assert_eq!(r.shape(), &[3, 4]);
    assert_eq!(
        f(&r),
        vec![
            8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0
        ]
    );
    let c = x.index_select(-1, &ti(&[3, 1], &[2])).unwrap();
    assert_eq!(c.shape(), &[3, 2]);
    assert_eq!(f(&c), vec![3.0, 1.0, 7.0, 5.0, 11.0, 9.0]);
    let none = x.index_select(0, &ti(&[], &[0])).unwrap();
    assert_eq!(none.shape(), &[0, 4]);
    // non-contiguous source and other dtypes
    let xt = x.transpose(0, 1).unwrap();
    assert_eq!(
        f(&xt.index_select(0, &ti(&[1], &[1])).unwrap()),
        vec![1.0, 5.0, 9.0]
    );
    let labels = ti(&[5, 6, 7], &[3]);
    assert_eq!(
        labels
            .index_select(0, &ti(&[2, 2], &[2]))
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![7, 7]
    );
}

#[test]
fn gather_matches_torch() {
    // torch.gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]])) == [[1, 1], [4, 3]]
    let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let g = x.gather(1, &ti(&[0, 0, 1, 0], &[2, 2])).unwrap();
    assert_eq!(f(&g), vec![1.0, 1.0, 4.0, 3.0]);
    // along axis 0 with a smaller index: out[i][j] = x[idx[i][j]][j]
    let g0 = x34().gather(0, &ti(&[2, 1, 0], &[1, 3])).unwrap();
    assert_eq!(g0.shape(), &[1, 3]);
    assert_eq!(f(&g0), vec![8.0, 5.0, 2.0]);
    // picking the label's logit per row (cross-entropy style)
    let picked = x34().gather(1, &ti(&[3, 0, 2], &[3, 1])).unwrap();
    assert_eq!(f(&picked), vec![3.0, 4.0, 10.0]);
    let xt = x34().transpose(0, 1).unwrap(); // [4, 3]
    assert_eq!(
        f(&xt.gather(1, &ti(&[2, 0], &[2, 1])).unwrap()),
        vec![8.0, 1.0]
    );
}

#[test]
fn one_hot_appends_a_dim() {
    let y = ti(&[0, 2, 1], &[3]);
    let o = y.one_hot(3, DType::F32).unwrap();
    assert_eq!(o.shape(), &[3, 3]);
    assert_eq!(f(&o), vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
    let o2 = ti(&[1, 0, 0, 1], &[2, 2]).one_hot(2, DType::I32).unwrap();
    assert_eq!(o2.shape(), &[2, 2, 2]);
    assert_eq!(o2.to_vec::<i32>().unwrap(), vec![0, 1, 1, 0, 1, 0, 0, 1]);
    let o3 = ti(&[1], &[1]).one_hot(2, DType::U32).unwrap();
    assert_eq!(o3.to_vec::<u32>().unwrap(), vec![0, 1]);
}

#[test]
fn out_of_range_indices_are_errors() {
    let x = x34();
    let e = x.index_select(0, &ti(&[0, 3], &[2])).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 3,
                size: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("index_select") && e.to_string().contains("index 3"),
        "{e}"
    );
    let e = x.index_select(1, &ti(&[-1], &[1])).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: -1,
                size: 4,
                ..
            }
        ),
        "{e:?}"
    );
    let e = x.gather(1, &ti(&[4], &[1, 1])).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 4,
                size: 4,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("gather"), "{e}");
    let e = ti(&[0, 5], &[2]).one_hot(5, DType::F32).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 5,
                size: 5,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("one_hot"), "{e}");
}

#[test]
fn indexing_shape_and_dtype_errors() {
    let x = x34();
    let e = x.gather(0, &ti(&[0; 5], &[1, 5])).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(
        e.to_string().contains("[3, 4]") && e.to_string().contains("[1, 5]"),
        "{e}"
    );
    assert!(matches!(
        x.gather(0, &ti(&[0], &[1])).unwrap_err(),
        Error::ShapeMismatch { .. }
    ));
    let e = x.index_select(0, &ti(&[0, 1], &[1, 2])).unwrap_err();
    assert!(e.to_string().contains("[1, 2]"), "{e}");
    let e = x.index_select(0, &t(&[0.0], &[1])).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::I32,
                got: DType::F32,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(
        x.index_select(2, &ti(&[0], &[1])).unwrap_err(),
        Error::BadAxis { axis: 2, .. }
    ));
    assert!(matches!(
        x.one_hot(3, DType::F32).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
}
