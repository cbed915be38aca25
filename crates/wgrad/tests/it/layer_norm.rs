//! `layer_norm`: the fused op against the same normalisation written out
//! with mean, var and elementwise ops (forward and the gradients of x,
//! weight and bias), the GPU kernels against the CPU, views, edge shapes, a
//! gradcheck and bad input. (PyTorch ground truth for it comes through the
//! LayerNorm of the transformer and GPT fixtures.)

use crate::common::{gpu, max_rel_err};
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::{DType, Device, Tensor};

fn randn(shape: &[usize], seed: u64, d: &Device) -> Tensor {
    Tensor::randn_with(shape, 0.0, 1.0, seed, d).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

/// `layer_norm` written out, for the reference.
fn written_out(
    x: &Tensor,
    normalized: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f32,
) -> Tensor {
    let axes: Vec<isize> = (-(normalized.len() as isize)..0).collect();
    let mean = x.mean(&axes, true).unwrap();
    let var = x.var(&axes, 0, true).unwrap();
    let mut y = x
        .sub(&mean)
        .unwrap()
        .mul(&var.add_scalar(eps).unwrap().rsqrt().unwrap())
        .unwrap();
    if let Some(w) = w {
        y = y.mul(w).unwrap();
    }
    if let Some(b) = b {
        y = y.add(b).unwrap();
    }
    y
}

/// A layer_norm of (x, weight, bias): the fused op or the written-out one.
type Norm<'a> = &'a dyn Fn(&Tensor, Option<&Tensor>, Option<&Tensor>) -> Tensor;

/// Output and gradients of x, weight, bias for `f` on copies of the data on `d`.
fn run(
    f: Norm<'_>,
    shape: &[usize],
    normalized: &[usize],
    affine: (bool, bool),
    transposed: bool,
    d: &Device,
) -> Vec<Vec<f32>> {
    let x = if transposed {
        // A non-contiguous input: the transpose of a contiguous tensor.
        let mut swapped = shape.to_vec();
        let r = swapped.len();
        swapped.swap(r - 2, r - 1);
        randn(&swapped, 1, d).transpose(-2, -1).unwrap()
    } else {
        randn(shape, 1, d)
    }
    .with_requires_grad(true)
    .unwrap();
    let w = affine
        .0
        .then(|| randn(normalized, 2, d).with_requires_grad(true).unwrap());
    let b = affine
        .1
        .then(|| randn(normalized, 3, d).with_requires_grad(true).unwrap());
    let y = f(&x, w.as_ref(), b.as_ref());
    let r = randn(shape, 4, d);
    y.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
    let mut out = vec![values(&y), values(&x.grad().unwrap())];
    for p in w.iter().chain(b.iter()) {
        out.push(values(&p.grad().unwrap()));
    }
    out
}

#[test]
fn fused_layer_norm_matches_the_written_out_one_on_both_devices() {
    let eps = 1e-5;
    let cases: &[(&[usize], &[usize], bool)] = &[
        (&[4, 6, 32], &[32], false),
        (&[3, 5, 7], &[5, 7], false),
        (&[2, 1000], &[1000], false),
        (&[300, 3], &[3], false),
        (&[2, 4, 9], &[9], true),
        (&[5, 1], &[1], false),
        (&[129, 64], &[64], false),
    ];
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for &(shape, normalized, transposed) in cases {
        for affine in [(true, true), (true, false), (false, true), (false, false)] {
            let fused = |x: &Tensor, w: Option<&Tensor>, b: Option<&Tensor>| {
                x.layer_norm(normalized, w, b, eps).unwrap()
            };
            let reference = |x: &Tensor, w: Option<&Tensor>, b: Option<&Tensor>| {
                written_out(x, normalized, w, b, eps)
            };
            let want = run(
                &reference,
                shape,
                normalized,
                affine,
                transposed,
                &Device::Cpu,
            );
            for d in &devices {
                let got = run(&fused, shape, normalized, affine, transposed, d);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let err = max_rel_err(g, w);
                    assert!(
                        err < 1e-4,
                        "{d} {shape:?} over {normalized:?} affine {affine:?}: output/grad {i} \
                         relative error {err}"
                    );
                }
            }
        }
    }
}

#[test]
fn layer_norm_edge_shapes() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in &devices {
        // No rows: empty output, zero parameter gradients.
        let x = Tensor::zeros(&[0, 4], d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let w = Tensor::ones(&[4], d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = x.layer_norm(&[4], Some(&w), None, 1e-5).unwrap();
        assert_eq!(y.shape(), [0, 4]);
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(values(&w.grad().unwrap()), [0.0; 4]);
        // Zero-width rows: an empty output, and no gradient to give.
        let z = Tensor::zeros(&[3, 0], d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let yz = z.layer_norm(&[0], None, None, 1e-5).unwrap();
        assert_eq!(yz.shape(), [3, 0]);
        yz.sum_all().unwrap().backward().unwrap();
        assert_eq!(z.grad().unwrap().shape(), [3, 0]);
        // A constant row normalises to zeros (var 0, eps keeps it finite);
        // one element per row is always its own mean.
        let c = Tensor::full(&[2, 5], 3.0, DType::F32, d).unwrap();
        assert_eq!(
            values(&c.layer_norm(&[5], None, None, 1e-5).unwrap()),
            [0.0; 10]
        );
        let b = Tensor::from_vec(vec![0.5f32], &[1], d).unwrap();
        let one = randn(&[3, 1], 5, d)
            .layer_norm(&[1], None, Some(&b), 1e-5)
            .unwrap();
        assert_eq!(values(&one), [0.5; 3]);
        // NaN stays in its row.
        let mut data = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        data[1] = f32::NAN;
        let n = Tensor::from_vec(data, &[2, 3], d).unwrap();
        let v = values(&n.layer_norm(&[3], None, None, 1e-5).unwrap());
        assert!(
            v[..3].iter().all(|x| x.is_nan()) && v[3..].iter().all(|x| x.is_finite()),
            "{v:?}"
        );
    }
}

#[test]
fn layer_norm_gradcheck_on_the_cpu() {
    let d = Device::Cpu;
    let x = randn(&[3, 2, 4], 1, &d).with_requires_grad(true).unwrap();
    let w = randn(&[2, 4], 2, &d).with_requires_grad(true).unwrap();
    let b = randn(&[2, 4], 3, &d).with_requires_grad(true).unwrap();
    let report = gradcheck(
        |t| t[0].layer_norm(&[2, 4], Some(&t[1]), Some(&t[2]), 1e-3),
        &[x, w, b],
        GradcheckOptions::default(),
    )
    .unwrap();
    report.check().unwrap();
}

#[test]
fn layer_norm_bad_input_is_a_clear_error() {
    let d = Device::Cpu;
    let x = randn(&[2, 3], 1, &d);
    let err = |r: wgrad::Result<Tensor>| r.unwrap_err().to_string();
    let e = err(x.layer_norm(&[2], None, None, 1e-5));
    assert!(e.starts_with("layer_norm") && e.contains("[2, 3]"), "{e}");
    let w = randn(&[2], 2, &d);
    let e = err(x.layer_norm(&[3], Some(&w), None, 1e-5));
    assert!(e.contains("weight has shape [2]"), "{e}");
    // A 0-d input has no trailing dims to normalise.
    let s = Tensor::from_vec(vec![1.0f32], &[], &d).unwrap();
    assert!(err(s.layer_norm(&[1], None, None, 1e-5)).contains("trailing dims"));
    let i = Tensor::from_vec(vec![1i32; 6], &[2, 3], &d).unwrap();
    assert!(err(i.layer_norm(&[3], None, None, 1e-5)).contains("int32"));
    if let Some(g) = gpu() {
        let e = err(x
            .to(&g)
            .unwrap()
            .layer_norm(&[3], Some(&randn(&[3], 2, &d)), None, 1e-5));
        assert!(e.starts_with("layer_norm") && e.contains("cpu"), "{e}");
    }
    assert_eq!(x.dtype(), DType::F32);
}

/// A constant row normalizes to exactly 0 on both devices, as PyTorch's
/// Welford-based kernels give (a plain f32 mean of 513 copies of -1.1 is
/// off by an ulp, which 1 / sqrt(eps) turns into outputs of ~5e-4); its
/// variance is exactly 0 on both devices.
#[test]
fn constant_rows_normalize_to_exact_zeros() {
    for d in [Some(Device::Cpu), gpu()].into_iter().flatten() {
        for (cols, value) in [(8usize, 0.3f32), (513, -1.1), (1000, 0.1)] {
            let x = Tensor::full(&[2, cols], f64::from(value), DType::F32, &d).unwrap();
            let y = x.layer_norm(&[cols], None, None, 1e-5).unwrap();
            assert!(
                values(&y).iter().all(|&v| v == 0.0),
                "{cols} x {value} on {d:?}: {:?}",
                &values(&y)[..4]
            );
        }
    }
    // var/std too, on both devices: short rows, rows of a strided view, and
    // one long row that the GPU splits in two passes.
    for d in [Some(Device::Cpu), gpu()].into_iter().flatten() {
        let x = Tensor::full(&[5, 5], -1.033_003_2, DType::F32, &d).unwrap();
        assert_eq!(values(&x.var(&[], 1, false).unwrap()), [0.0], "on {d:?}");
        assert_eq!(values(&x.std(&[], 1, false).unwrap()), [0.0], "on {d:?}");
        let x = Tensor::full(&[6, 300], 0.1, DType::F32, &d).unwrap();
        let v = x.t().unwrap().var(&[0], 0, false).unwrap();
        assert!(values(&v).iter().all(|&v| v == 0.0), "on {d:?}");
        let x = Tensor::full(&[1 << 20], 0.3, DType::F32, &d).unwrap();
        assert_eq!(values(&x.var(&[], 1, false).unwrap()), [0.0], "on {d:?}");
    }
}
