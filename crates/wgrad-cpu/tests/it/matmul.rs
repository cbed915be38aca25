use wgrad_cpu::{CpuTensor, DType, Error};

use crate::{err, f, t};

#[test]
fn matrix_times_matrix() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(f(&c), vec![58.0, 64.0, 139.0, 154.0]);
}

#[test]
fn vector_promotion() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let v = t(&[1.0, 0.0, -1.0], &[3]);
    let mv = a.matmul(&v).unwrap();
    assert_eq!(mv.shape(), &[2]);
    assert_eq!(f(&mv), vec![-2.0, -2.0]);
    let w = t(&[1.0, 1.0], &[2]);
    let vm = w.matmul(&a).unwrap();
    assert_eq!(vm.shape(), &[3]);
    assert_eq!(f(&vm), vec![5.0, 7.0, 9.0]);
    let dot = v.matmul(&v).unwrap();
    assert_eq!(dot.shape(), &[] as &[usize]);
    assert_eq!(f(&dot), vec![2.0]);
    // batched matrix times vector: [2, 2, 3] @ [3] -> [2, 2]
    let batched =
        CpuTensor::concat(&[&a.unsqueeze(0).unwrap(), &a.unsqueeze(0).unwrap()], 0).unwrap();
    let bv = batched.matmul(&v).unwrap();
    assert_eq!(bv.shape(), &[2, 2]);
    assert_eq!(f(&bv), vec![-2.0; 4]);
}

#[test]
fn batch_dims_broadcast() {
    // a: [2, 1, 2, 2], b: [3, 2, 2] -> [2, 3, 2, 2]
    let a = t(&[1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0], &[2, 1, 2, 2]);
    let b = CpuTensor::arange(0.0, 12.0, 1.0, DType::F32)
        .unwrap()
        .reshape(&[3, 2, 2])
        .unwrap();
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.shape(), &[2, 3, 2, 2]);
    let bv = f(&b);
    let want: Vec<f32> = bv
        .iter()
        .copied()
        .chain(bv.iter().map(|x| 2.0 * x))
        .collect();
    assert_eq!(f(&c), want);
    // a plain matrix broadcasts against a batch
    let eye = t(&[1.0, 0.0, 0.0, 1.0], &[2, 2]);
    assert_eq!(f(&eye.matmul(&b).unwrap()), bv);
}

#[test]
fn transposed_and_expanded_operands() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    // a^T a via matmul_t (no copy) vs via transpose + matmul
    let ata = a.matmul_t(&a, true, false).unwrap();
    assert_eq!(ata.shape(), &[3, 3]);
    assert_eq!(f(&ata), f(&a.transpose(0, 1).unwrap().matmul(&a).unwrap()));
    assert_eq!(f(&ata)[..3], [17.0, 22.0, 27.0]);
    let abt = a
        .matmul_t(
            &b.transpose(0, 1).unwrap().contiguous().unwrap(),
            false,
            true,
        )
        .unwrap();
    assert_eq!(f(&abt), vec![58.0, 64.0, 139.0, 154.0]);
    let both = b.matmul_t(&a, true, true).unwrap(); // b^T a^T = (a b)^T
    assert_eq!(f(&both), vec![58.0, 139.0, 64.0, 154.0]);
    // a stride-0 operand
    let ones = t(&[1.0], &[1, 1]).expand(&[3, 2]).unwrap();
    assert_eq!(f(&a.matmul(&ones).unwrap()), vec![6.0, 6.0, 15.0, 15.0]);
}

#[test]
fn empty_products() {
    let a = t(&[], &[2, 0]);
    let b = t(&[], &[0, 3]);
    let c = a.matmul(&b).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(f(&c), vec![0.0; 6]);
    assert_eq!(b.matmul(&t(&[0.0; 6], &[3, 2])).unwrap().shape(), &[0, 2]);
    assert_eq!(
        t(&[], &[0, 2, 2])
            .matmul(&t(&[0.0; 4], &[2, 2]))
            .unwrap()
            .shape(),
        &[0, 2, 2]
    );
}

#[test]
fn matmul_errors() {
    let a = t(&[0.0; 6], &[2, 3]);
    let e = a.matmul(&a).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(
        e.to_string().contains("matmul") && e.to_string().contains("[2, 3]"),
        "{e}"
    );
    let msg = err(t(&[0.0; 12], &[2, 2, 3]).matmul(&t(&[0.0; 9], &[3, 3, 1])));
    assert!(
        msg.contains("[2, 2, 3]") && msg.contains("[3, 3, 1]"),
        "{msg}"
    );
    let msg = err(CpuTensor::scalar(1.0).matmul(&a));
    assert!(msg.contains("at least 1 dim"), "{msg}");
    let msg = err(t(&[1.0], &[1]).matmul_t(&a, true, false));
    assert!(msg.contains("matmul_t") && msg.contains("[1]"), "{msg}");
    let i = a.cast(DType::I32).unwrap();
    assert!(matches!(
        a.matmul(&i).unwrap_err(),
        Error::DTypeMismatch { .. }
    ));
}

/// `a @ b` for row-major `[m, k]` and `[k, n]` data, accumulated in f64.
fn reference_product(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            out[i * n + j] = s as f32;
        }
    }
    out
}

#[test]
fn large_products_split_across_threads_match_reference() {
    // Large enough (> 2^20 multiply-adds) to be cut into per-thread blocks:
    // tall (split by rows), wide (split by columns), sizes off the 16-wide
    // micro-tile, and a transposed operand read in place.
    for &(m, k, n) in &[(301, 260, 77), (37, 300, 515), (129, 1000, 33)] {
        let a = CpuTensor::randn(&[m, k], 0.0, 1.0, 11).unwrap();
        let b = CpuTensor::randn(&[k, n], 0.0, 1.0, 12).unwrap();
        let want = reference_product(&f(&a), &f(&b), m, k, n);
        let got = a.matmul(&b).unwrap();
        assert_eq!(got.shape(), &[m, n]);
        crate::assert_close(&f(&got), &want, 1e-4);
        let bt = b.transpose(0, 1).unwrap().contiguous().unwrap();
        let got_t = a.matmul_t(&bt, false, true).unwrap();
        crate::assert_close(&f(&got_t), &want, 1e-4);
    }
}

#[test]
fn recycled_output_buffers_never_leak_old_values() {
    // Outputs this large (1 MiB) come back from the buffer cache when
    // freed; the next product of the class must not see what they held.
    let n = 512;
    let nan = CpuTensor::full(&[n, n], f64::NAN, DType::F32).unwrap();
    let eye: Vec<f32> = (0..n * n)
        .map(|i| if i % (n + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let eye = t(&eye, &[n, n]);
    let x = CpuTensor::rand(&[n, n], -1.0, 1.0, 7).unwrap();
    let bias = CpuTensor::rand(&[n], -1.0, 1.0, 8).unwrap();
    for _ in 0..3 {
        drop(nan.matmul(&eye).unwrap()); // a NaN output, freed into the cache
        assert_eq!(f(&x.matmul(&eye).unwrap()), f(&x));
        drop(nan.linear(&eye, Some(&bias)).unwrap());
        let y = f(&x.linear(&eye, Some(&bias)).unwrap());
        let (xs, bs) = (f(&x), f(&bias));
        for (i, &v) in y.iter().enumerate() {
            assert_eq!(v, xs[i] + bs[i % n], "at {i}");
        }
        drop(nan.linear(&eye, None).unwrap());
        assert_eq!(f(&x.linear(&eye, None).unwrap()), xs);
    }
}
