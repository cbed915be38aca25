use wgrad_cpu::{CpuTensor, DType, Error};

use crate::{err, f, t};

fn iota(shape: &[usize]) -> CpuTensor {
    let n: usize = shape.iter().product();
    CpuTensor::arange(0.0, n as f64, 1.0, DType::F32)
        .unwrap()
        .reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
        .unwrap()
}

#[test]
fn transpose_and_permute_share_storage() {
    let x = iota(&[2, 3]);
    let y = x.transpose(0, 1).unwrap();
    assert!(y.shares_storage(&x));
    assert!(!y.is_contiguous());
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(f(&y), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let z = iota(&[2, 3, 4]).permute(&[2, 0, -2]).unwrap();
    assert_eq!(z.shape(), &[4, 2, 3]);
    // z[1][1][2] = x[1][2][1] = 1*12 + 2*4 + 1 = 21
    assert_eq!(f(&z)[6 + 3 + 2], 21.0);
}

#[test]
fn reshape_views_or_copies() {
    let x = iota(&[2, 3]);
    let r = x.reshape(&[3, -1]).unwrap();
    assert!(r.shares_storage(&x));
    assert_eq!(r.shape(), &[3, 2]);
    let tr = x.transpose(0, 1).unwrap().reshape(&[-1]).unwrap();
    assert!(!tr.shares_storage(&x));
    assert_eq!(f(&tr), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let msg = err(x.reshape(&[4, -1]));
    assert!(msg.contains("reshape") && msg.contains("[2, 3]"), "{msg}");
}

#[test]
fn narrow_expand_unsqueeze_squeeze() {
    let x = iota(&[4, 3]);
    let n = x.narrow(0, 1, 2).unwrap();
    assert!(n.shares_storage(&x));
    assert_eq!(f(&n), vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let c = x.narrow(-1, 2, 1).unwrap();
    assert_eq!(f(&c), vec![2.0, 5.0, 8.0, 11.0]);
    let e = t(&[1.0, 2.0], &[2, 1]).expand(&[3, 2, 2]).unwrap();
    assert_eq!(
        f(&e),
        vec![1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0]
    );
    assert_eq!(e.strides(), &[0, 1, 0]);
    let b = t(&[7.0], &[1]).broadcast_to(&[0, 3]).unwrap();
    assert_eq!(b.numel(), 0);
    assert_eq!(f(&b), Vec::<f32>::new());
    let u = x.unsqueeze(1).unwrap();
    assert_eq!(u.shape(), &[4, 1, 3]);
    assert_eq!(u.squeeze(-2).unwrap().shape(), &[4, 3]);
    assert_eq!(x.unsqueeze(-1).unwrap().shape(), &[4, 3, 1]);
}

#[test]
fn view_errors_name_axis_and_shape() {
    let x = iota(&[4, 3]);
    let e = x.transpose(0, 2).unwrap_err();
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
    assert!(e.to_string().contains("axis 2"), "{e}");
    // A range past the end is an invalid argument (docs/ERRORS.md).
    let e = x.narrow(0, 3, 2).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("exceeds the size 4"), "{e}");
    let msg = err(x.expand(&[2, 3]));
    assert!(msg.contains("[4, 3]") && msg.contains("[2, 3]"), "{msg}");
    // As torch.squeeze(dim): a dim that is not 1 is left alone.
    assert_eq!(x.squeeze(0).unwrap().shape(), &[4, 3]);
    let msg = err(x.squeeze(2));
    assert!(msg.contains("squeeze") && msg.contains("axis 2"), "{msg}");
    let msg = err(x.permute(&[0, 0]));
    assert!(msg.contains("permute"), "{msg}");
}

#[test]
fn contiguous_copies_only_views() {
    let x = iota(&[2, 3]);
    assert!(x.contiguous().unwrap().shares_storage(&x));
    let y = x.transpose(0, 1).unwrap().contiguous().unwrap();
    assert!(y.is_contiguous() && !y.shares_storage(&x));
    assert_eq!(f(&y), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let m = CpuTensor::from_vec(vec![1u32, 0, 1, 1], &[2, 2]).unwrap();
    let mt = m.transpose(0, 1).unwrap().contiguous().unwrap();
    assert_eq!(mt.to_vec::<u32>().unwrap(), vec![1, 1, 0, 1]);
}

#[test]
fn concat_joins_along_an_axis() {
    let a = iota(&[2, 2]);
    let b = t(&[9.0, 8.0], &[2, 1]);
    let c = CpuTensor::concat(&[&a, &b], 1).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(f(&c), vec![0.0, 1.0, 9.0, 2.0, 3.0, 8.0]);
    let d = CpuTensor::concat(&[&a, &a.transpose(0, 1).unwrap()], 0).unwrap();
    assert_eq!(f(&d), vec![0.0, 1.0, 2.0, 3.0, 0.0, 2.0, 1.0, 3.0]);
    let empty = t(&[], &[0, 2]);
    assert_eq!(f(&CpuTensor::concat(&[&empty, &a], -2).unwrap()), f(&a));
    let i = CpuTensor::concat(&[&crate::ti(&[1], &[1]), &crate::ti(&[2, 3], &[2])], 0).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
}

#[test]
fn concat_errors() {
    let a = iota(&[2, 2]);
    let e = CpuTensor::concat(&[&a, &iota(&[3, 3])], 0).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(
        e.to_string().contains("[2, 2]") && e.to_string().contains("[3, 3]"),
        "{e}"
    );
    let e = CpuTensor::concat(&[&a, &crate::ti(&[1, 2], &[1, 2])], 0).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    assert!(matches!(
        CpuTensor::concat(&[&a], 2).unwrap_err(),
        Error::BadAxis { .. }
    ));
    assert!(CpuTensor::concat(&[], 0).is_err());
}

#[test]
fn large_strided_views_copy_over_threads_in_order() {
    // Above the parallel threshold (about 1M elements): the copy is split
    // into runs of rows, each starting its odometer from its row index.
    let (a, b, c) = (37, 211, 157);
    let x = iota(&[a, b, c]);
    let xs = f(&x);
    let y = x.permute(&[2, 0, 1]).unwrap().contiguous().unwrap();
    let ys = f(&y);
    for (k, &v) in ys.iter().enumerate() {
        let (ic, rest) = (k / (a * b), k % (a * b));
        let (ia, ib) = (rest / b, rest % b);
        assert_eq!(v, xs[(ia * b + ib) * c + ic], "at {k}");
    }
    // A narrowed, stepped view with a non-unit innermost stride.
    let z = x
        .transpose(0, 2)
        .unwrap()
        .narrow(1, 3, 200)
        .unwrap()
        .contiguous()
        .unwrap();
    assert_eq!(z.shape(), [c, 200, a]);
    let zs = f(&z);
    for (k, &v) in zs.iter().enumerate() {
        let (ic, rest) = (k / (200 * a), k % (200 * a));
        let (ib, ia) = (rest / a + 3, rest % a);
        assert_eq!(v, xs[(ia * b + ib) * c + ic], "at {k}");
    }
}

#[test]
fn large_concats_copy_rows_over_threads() {
    // Over 1M elements, first with one input a transposed (strided) view.
    let a = iota(&[300, 2000]);
    let b = iota(&[1500, 300]).transpose(0, 1).unwrap();
    let y = CpuTensor::concat(&[&a, &b], 1).unwrap();
    assert_eq!(y.shape(), [300, 3500]);
    let ys = f(&y);
    for r in [0, 1, 157, 299] {
        for c in [0, 1999, 2000, 2001, 3499] {
            let want = if c < 2000 {
                (r * 2000 + c) as f32
            } else {
                ((c - 2000) * 300 + r) as f32
            };
            assert_eq!(ys[r * 3500 + c], want, "({r}, {c})");
        }
    }
    assert_eq!(
        f(&y.narrow(1, 0, 2000).unwrap().contiguous().unwrap()),
        f(&a)
    );
    // All inputs dense: whole rows copied over threads, the same result.
    let dense = CpuTensor::concat(&[&a, &b.contiguous().unwrap()], 1).unwrap();
    assert_eq!(f(&dense), ys);
}
