use wgrad_cpu::{DType, Error};

use crate::{assert_close, f, t};

#[test]
fn softmax_known_values_and_rows_sum_to_one() {
    let x = t(&[1.0, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3]);
    let s = x.softmax(-1).unwrap();
    assert_close(
        &f(&s),
        &[
            0.090_030_57,
            0.244_728_48,
            0.665_240_9,
            1.0 / 3.0,
            1.0 / 3.0,
            1.0 / 3.0,
        ],
        1e-6,
    );
    let rows = f(&s.sum(&[1], false).unwrap());
    assert_close(&rows, &[1.0, 1.0], 1e-6);
    // Along axis 0 the columns sum to one.
    let c = x.softmax(0).unwrap();
    assert_close(&f(&c.sum(&[0], false).unwrap()), &[1.0; 3], 1e-6);
    assert_close(&f(&c)[..1], &[0.731_058_6], 1e-6);
}

#[test]
fn softmax_is_stable_for_large_inputs() {
    let x = t(&[1000.0, 1001.0, -1000.0], &[3]);
    let s = f(&x.softmax(0).unwrap());
    assert!(s.iter().all(|v| v.is_finite()), "{s:?}");
    assert_close(&s, &[0.268_941_43, 0.731_058_6, 0.0], 1e-6);
    let l = f(&x.log_softmax(0).unwrap());
    assert_close(&l, &[-1.313_261_7, -0.313_261_7, -2_001.313_2], 1e-6);
}

#[test]
fn log_softmax_matches_log_of_softmax() {
    let x = crate::t(&[0.5, -1.0, 2.0, 3.0, 0.1, -0.3], &[3, 2])
        .transpose(0, 1)
        .unwrap();
    let a = f(&x.log_softmax(1).unwrap());
    let b = f(&x.softmax(1).unwrap().log().unwrap());
    assert_close(&a, &b, 1e-5);
}

#[test]
fn softmax_errors() {
    let x = t(&[1.0, 2.0], &[2]);
    let e = x.softmax(1).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadAxis {
                axis: 1,
                rank: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("softmax"), "{e}");
    let i = x.cast(DType::I32).unwrap();
    assert!(matches!(
        i.log_softmax(0).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
    // empty rows are fine
    assert_eq!(t(&[], &[0, 3]).softmax(1).unwrap().shape(), &[0, 3]);
}
