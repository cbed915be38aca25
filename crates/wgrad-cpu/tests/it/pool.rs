//! 2-D pooling (max with indices, avg, adaptive avg) and their gradients
//! against a plain reference written here (PyTorch's CPU loops: scan each
//! window, scatter each output's gradient): many geometries, ties, NaN,
//! -inf, non-contiguous operands, empty batches and the error cases.

use wgrad_core::checks::pool::Pool2dArgs;
use wgrad_cpu::CpuTensor;

use crate::{assert_close, f, t};

/// Deterministic values in a small integer set (so windows hold ties).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 9) as f32 - 4.0 + ((s >> 20) % 3) as f32 * 0.25
        })
        .collect()
}

fn args(k: [usize; 2], s: [usize; 2], p: [usize; 2], d: [usize; 2], ceil: bool) -> Pool2dArgs {
    Pool2dArgs {
        kernel: k,
        stride: s,
        padding: p,
        dilation: d,
        ceil_mode: ceil,
    }
}

/// `[N, C, H, W]` inputs and window arguments covering kernel 2/3, stride
/// 1/2, padding 0/1, dilation 2, ceil mode where it changes the size.
pub fn geometries() -> Vec<([usize; 4], Pool2dArgs)> {
    let mut v = Vec::new();
    for (shape, ceil) in [
        ([2, 3, 7, 6], false),
        ([1, 2, 5, 8], true),
        ([2, 1, 6, 5], true),
    ] {
        for k in [2, 3] {
            for s in [1, 2] {
                for p in [0, 1] {
                    v.push((shape, args([k, k], [s, s], [p, p], [1, 1], ceil)));
                }
            }
        }
        v.push((shape, args([3, 2], [2, 1], [1, 0], [2, 1], ceil)));
        v.push((shape, args([2, 3], [1, 2], [1, 1], [2, 2], ceil)));
    }
    v.push(([1, 1, 4, 4], args([4, 4], [4, 4], [2, 2], [1, 1], false)));
    v
}

fn out_len(i: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> usize {
    let (i, k, s, p, d) = (i as i64, k as i64, s as i64, p as i64, d as i64);
    let num = i + 2 * p - d * (k - 1) - 1;
    let mut o = if ceil {
        (num + s - 1).div_euclid(s) + 1
    } else {
        num.div_euclid(s) + 1
    };
    if ceil && (o - 1) * s >= i + p {
        o -= 1;
    }
    o as usize
}

/// Reference max pooling: values, indices.
fn ref_max(x: &[f32], sh: [usize; 4], a: &Pool2dArgs) -> (Vec<f32>, Vec<i32>, [usize; 2]) {
    let [n, c, h, w] = sh;
    let oh = out_len(
        h,
        a.kernel[0],
        a.stride[0],
        a.padding[0],
        a.dilation[0],
        a.ceil_mode,
    );
    let ow = out_len(
        w,
        a.kernel[1],
        a.stride[1],
        a.padding[1],
        a.dilation[1],
        a.ceil_mode,
    );
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for plane in 0..n * c {
        for y in 0..oh {
            for z in 0..ow {
                let (mut best, mut at) = (f32::NEG_INFINITY, -1i64);
                for i in 0..a.kernel[0] {
                    for j in 0..a.kernel[1] {
                        let hh = (y * a.stride[0] + i * a.dilation[0]) as i64 - a.padding[0] as i64;
                        let ww = (z * a.stride[1] + j * a.dilation[1]) as i64 - a.padding[1] as i64;
                        if hh < 0 || ww < 0 || hh >= h as i64 || ww >= w as i64 {
                            continue;
                        }
                        let pos = hh * w as i64 + ww;
                        let v = x[plane * h * w + pos as usize];
                        if at < 0 {
                            at = pos;
                        }
                        if v > best || v.is_nan() {
                            best = v;
                            at = pos;
                        }
                    }
                }
                vals.push(best);
                idx.push(at as i32);
            }
        }
    }
    (vals, idx, [oh, ow])
}

/// Reference avg pooling and its gradient for `grad` (scatter).
fn ref_avg(
    x: &[f32],
    grad: Option<&[f32]>,
    sh: [usize; 4],
    a: &Pool2dArgs,
    include_pad: bool,
    div_override: Option<usize>,
) -> Vec<f32> {
    let [n, c, h, w] = sh;
    let oh = out_len(h, a.kernel[0], a.stride[0], a.padding[0], 1, a.ceil_mode);
    let ow = out_len(w, a.kernel[1], a.stride[1], a.padding[1], 1, a.ceil_mode);
    let mut out = Vec::new();
    let mut gin = vec![0.0f32; n * c * h * w];
    for plane in 0..n * c {
        for y in 0..oh {
            for z in 0..ow {
                let (mut sum, mut inside, mut padded) = (0.0f32, 0, 0);
                let mut cells = Vec::new();
                for i in 0..a.kernel[0] {
                    for j in 0..a.kernel[1] {
                        let hh = (y * a.stride[0] + i) as i64 - a.padding[0] as i64;
                        let ww = (z * a.stride[1] + j) as i64 - a.padding[1] as i64;
                        let ph = (h + a.padding[0]) as i64;
                        let pw = (w + a.padding[1]) as i64;
                        if hh < ph && ww < pw {
                            padded += 1;
                        }
                        if hh < 0 || ww < 0 || hh >= h as i64 || ww >= w as i64 {
                            continue;
                        }
                        inside += 1;
                        let at = plane * h * w + (hh * w as i64 + ww) as usize;
                        sum += x[at];
                        cells.push(at);
                    }
                }
                let div = div_override.unwrap_or(if include_pad { padded } else { inside }) as f32;
                out.push(sum / div);
                if let Some(g) = grad {
                    let d = g[(plane * oh + y) * ow + z] / div;
                    for at in cells {
                        gin[at] += d;
                    }
                }
            }
        }
    }
    if grad.is_some() { gin } else { out }
}

#[test]
fn max_pool2d_matches_the_reference_over_geometries() {
    for (case, (shape, a)) in geometries().into_iter().enumerate() {
        let numel = shape.iter().product();
        let x = data(numel, case as u64);
        let (vals, idx) = t(&x, &shape).max_pool2d(&a).unwrap();
        let (rv, ri, [oh, ow]) = ref_max(&x, shape, &a);
        assert_eq!(vals.shape(), &[shape[0], shape[1], oh, ow], "{a:?}");
        assert_eq!(f(&vals), rv, "{shape:?} {a:?}");
        assert_eq!(idx.to_vec::<i32>().unwrap(), ri, "{shape:?} {a:?}");
        // Backward: scatter the gradient through the indices.
        let g = data(rv.len(), 100 + case as u64);
        let gi = t(&g, vals.shape())
            .max_pool2d_backward(&idx, &shape, &a)
            .unwrap();
        let plane = shape[2] * shape[3];
        let mut want = vec![0.0f32; numel];
        for (o, (&gv, &i)) in g.iter().zip(&ri).enumerate() {
            want[o / (oh * ow) * plane + i as usize] += gv;
        }
        assert_eq!(gi.shape(), &shape);
        assert_eq!(f(&gi), want, "{shape:?} {a:?}");
    }
}

#[test]
fn avg_pool2d_matches_the_reference_over_geometries() {
    for (case, (shape, mut a)) in geometries().into_iter().enumerate() {
        a.dilation = [1, 1];
        let numel: usize = shape.iter().product();
        let x = data(numel, case as u64);
        for (include_pad, div) in [
            (true, None),
            (false, None),
            (true, Some(5)),
            (false, Some(2)),
        ] {
            let y = t(&x, &shape).avg_pool2d(&a, include_pad, div).unwrap();
            let want = ref_avg(&x, None, shape, &a, include_pad, div);
            assert_close(&f(&y), &want, 1e-6);
            let g = data(want.len(), 7 + case as u64);
            let gi = t(&g, y.shape())
                .avg_pool2d_backward(&shape, &a, include_pad, div)
                .unwrap();
            let want = ref_avg(&x, Some(&g), shape, &a, include_pad, div);
            assert_close(&f(&gi), &want, 1e-6);
        }
    }
}

#[test]
fn avg_pool2d_divisors_follow_pytorch() {
    // torch.nn.functional.avg_pool2d(torch.ones(1, 1, 3, 3), 2, 2, 1, ...)
    let x = t(&[1.0; 9], &[1, 1, 3, 3]);
    let a = args([2, 2], [2, 2], [1, 1], [1, 1], false);
    assert_eq!(
        f(&x.avg_pool2d(&a, true, None).unwrap()),
        vec![0.25, 0.5, 0.5, 1.0]
    );
    assert_eq!(f(&x.avg_pool2d(&a, false, None).unwrap()), vec![1.0; 4]);
    assert_eq!(
        f(&x.avg_pool2d(&a, true, Some(2)).unwrap()),
        vec![0.5, 1.0, 1.0, 2.0]
    );
    // ceil_mode: a last window hanging past the padding counts only up to it.
    let x = t(&[1.0; 25], &[1, 1, 5, 5]);
    let a = args([3, 3], [2, 2], [1, 1], [1, 1], true);
    let y = f(&x.avg_pool2d(&a, true, None).unwrap());
    assert_eq!(y.len(), 9);
    assert_close(
        &y,
        &[
            4.0 / 9.0,
            6.0 / 9.0,
            4.0 / 9.0,
            6.0 / 9.0,
            1.0,
            6.0 / 9.0,
            4.0 / 9.0,
            6.0 / 9.0,
            4.0 / 9.0,
        ],
        1e-7,
    );
}

/// Reference adaptive average pooling (and its gradient for `grad`).
fn ref_adaptive(x: &[f32], grad: Option<&[f32]>, sh: [usize; 4], o: [usize; 2]) -> Vec<f32> {
    let [n, c, h, w] = sh;
    let win = |i: usize, len: usize, out: usize| (i * len / out, ((i + 1) * len).div_ceil(out));
    let mut out = Vec::new();
    let mut gin = vec![0.0f32; n * c * h * w];
    for plane in 0..n * c {
        for y in 0..o[0] {
            let (h0, h1) = win(y, h, o[0]);
            for z in 0..o[1] {
                let (w0, w1) = win(z, w, o[1]);
                let mut sum = 0.0f32;
                for hh in h0..h1 {
                    for ww in w0..w1 {
                        sum += x[plane * h * w + hh * w + ww];
                    }
                }
                let (kh, kw) = ((h1 - h0) as f32, (w1 - w0) as f32);
                out.push(sum / kh / kw);
                if let Some(g) = grad {
                    let d = g[(plane * o[0] + y) * o[1] + z] / kh / kw;
                    for hh in h0..h1 {
                        for ww in w0..w1 {
                            gin[plane * h * w + hh * w + ww] += d;
                        }
                    }
                }
            }
        }
    }
    if grad.is_some() { gin } else { out }
}

pub const ADAPTIVE: &[([usize; 4], [usize; 2])] = &[
    ([2, 3, 7, 6], [1, 1]),
    ([2, 3, 7, 6], [3, 5]),
    ([1, 2, 10, 9], [3, 4]),
    ([1, 2, 5, 5], [5, 5]),
    ([1, 1, 3, 4], [5, 7]),
    ([2, 2, 8, 8], [4, 2]),
];

#[test]
fn adaptive_avg_pool2d_matches_the_reference() {
    for (case, &(shape, o)) in ADAPTIVE.iter().enumerate() {
        let x = data(shape.iter().product(), case as u64);
        let y = t(&x, &shape).adaptive_avg_pool2d(o).unwrap();
        assert_eq!(y.shape(), &[shape[0], shape[1], o[0], o[1]]);
        let want = ref_adaptive(&x, None, shape, o);
        assert_close(&f(&y), &want, 1e-6);
        let g = data(want.len(), 50 + case as u64);
        let gi = t(&g, y.shape())
            .adaptive_avg_pool2d_backward(&shape)
            .unwrap();
        assert_close(&f(&gi), &ref_adaptive(&x, Some(&g), shape, o), 1e-6);
    }
    // 1x1 is the plane mean.
    let x = t(&[1.0, 2.0, 3.0, 6.0], &[1, 1, 2, 2]);
    assert_eq!(f(&x.adaptive_avg_pool2d([1, 1]).unwrap()), vec![3.0]);
}

#[test]
fn max_pool2d_ties_nan_and_infinities() {
    let a = args([2, 2], [2, 2], [0, 0], [1, 1], false);
    // Ties: the first maximum in row-major window order.
    let (v, i) = t(&[5.0, 5.0, 5.0, 5.0, 1.0, 7.0, 7.0, 2.0], &[1, 2, 2, 2])
        .max_pool2d(&a)
        .unwrap();
    assert_eq!(
        (f(&v), i.to_vec::<i32>().unwrap()),
        (vec![5.0, 7.0], vec![0, 1])
    );
    // NaN wins (the last NaN of the window, as PyTorch's CPU kernel).
    let (v, i) = t(&[1.0, f32::NAN, 3.0, f32::NAN], &[1, 1, 2, 2])
        .max_pool2d(&a)
        .unwrap();
    assert!(f(&v)[0].is_nan());
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![3]);
    let (v, i) = t(&[f32::NAN, 9.0, 3.0, 1.0], &[1, 1, 2, 2])
        .max_pool2d(&a)
        .unwrap();
    assert!(f(&v)[0].is_nan());
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![0]);
    // All -inf: -inf at the first position; +inf wins.
    let ninf = f32::NEG_INFINITY;
    let (v, i) = t(
        &[ninf, ninf, ninf, ninf, ninf, 1.0, f32::INFINITY, ninf],
        &[1, 2, 2, 2],
    )
    .max_pool2d(&a)
    .unwrap();
    assert_eq!(f(&v), vec![ninf, f32::INFINITY]);
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![0, 2]);
    // Padding is never chosen, even over negative values.
    let p = args([3, 3], [1, 1], [1, 1], [1, 1], false);
    let (v, i) = t(&[-5.0; 4], &[1, 1, 2, 2]).max_pool2d(&p).unwrap();
    assert_eq!(f(&v), vec![-5.0; 4]);
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![0, 0, 0, 0]);
    // Overlapping windows (stride < kernel) add up in the gradient.
    let g = t(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2])
        .max_pool2d_backward(&i, &[1, 1, 2, 2], &p)
        .unwrap();
    assert_eq!(f(&g), vec![10.0, 0.0, 0.0, 0.0]);
}

#[test]
fn non_contiguous_operands() {
    let shape = [2, 3, 6, 7];
    let x = data(2 * 3 * 6 * 7, 3);
    // Stored as [N, C, W, H] and transposed back: same logical values.
    let stored = t(&x, &shape).transpose(2, 3).unwrap().contiguous().unwrap();
    let view = stored.transpose(2, 3).unwrap();
    assert!(!view.is_contiguous());
    let a = args([3, 3], [2, 2], [1, 1], [1, 1], true);
    let dense = t(&x, &shape);
    let (v1, i1) = view.max_pool2d(&a).unwrap();
    let (v2, i2) = dense.max_pool2d(&a).unwrap();
    assert_eq!(f(&v1), f(&v2));
    assert_eq!(i1.to_vec::<i32>().unwrap(), i2.to_vec::<i32>().unwrap());
    assert_eq!(
        f(&view.avg_pool2d(&a, false, None).unwrap()),
        f(&dense.avg_pool2d(&a, false, None).unwrap())
    );
    assert_eq!(
        f(&view.adaptive_avg_pool2d([4, 3]).unwrap()),
        f(&dense.adaptive_avg_pool2d([4, 3]).unwrap())
    );
    // An expanded (stride 0) upstream gradient, as sum's backward gives.
    let out = v1.shape().to_vec();
    let one = t(&[1.5], &[1, 1, 1, 1]).expand(&out).unwrap();
    let dense_one = t(&vec![1.5; out.iter().product()], &out);
    assert_eq!(
        f(&one.max_pool2d_backward(&i1, &shape, &a).unwrap()),
        f(&dense_one.max_pool2d_backward(&i1, &shape, &a).unwrap())
    );
    assert_eq!(
        f(&one.avg_pool2d_backward(&shape, &a, true, None).unwrap()),
        f(&dense_one
            .avg_pool2d_backward(&shape, &a, true, None)
            .unwrap())
    );
}

#[test]
fn empty_batches_give_empty_results() {
    let x = CpuTensor::zeros(&[0, 3, 5, 5], wgrad_cpu::DType::F32).unwrap();
    let a = args([2, 2], [2, 2], [0, 0], [1, 1], false);
    let (v, i) = x.max_pool2d(&a).unwrap();
    assert_eq!(
        (v.shape(), i.shape()),
        (&[0, 3, 2, 2][..], &[0, 3, 2, 2][..])
    );
    assert_eq!(i.dtype(), wgrad_cpu::DType::I32);
    assert_eq!(x.avg_pool2d(&a, true, None).unwrap().shape(), &[0, 3, 2, 2]);
    assert_eq!(
        x.adaptive_avg_pool2d([3, 1]).unwrap().shape(),
        &[0, 3, 3, 1]
    );
    let g = v.max_pool2d_backward(&i, &[0, 3, 5, 5], &a).unwrap();
    assert_eq!(g.shape(), &[0, 3, 5, 5]);
    let g = v
        .avg_pool2d_backward(&[0, 3, 5, 5], &a, true, None)
        .unwrap();
    assert_eq!(g.shape(), &[0, 3, 5, 5]);
    let y = x.adaptive_avg_pool2d([3, 1]).unwrap();
    assert_eq!(
        y.adaptive_avg_pool2d_backward(&[0, 3, 5, 5])
            .unwrap()
            .shape(),
        &[0, 3, 5, 5]
    );
}

#[test]
fn bad_pools_are_errors() {
    let x = t(&[0.0; 25], &[1, 1, 5, 5]);
    let e = crate::err(x.max_pool2d(&args([2, 2], [2, 2], [2, 2], [1, 1], false)));
    assert!(e.contains("at most half"), "{e}");
    let e = crate::err(x.max_pool2d(&args([6, 6], [1, 1], [0, 0], [1, 1], false)));
    assert!(e.contains("too small"), "{e}");
    assert!(
        x.max_pool2d(&args([0, 2], [1, 1], [0, 0], [1, 1], false))
            .is_err()
    );
    assert!(
        x.max_pool2d(&args([2, 2], [0, 1], [0, 0], [1, 1], false))
            .is_err()
    );
    let flat = t(&[0.0; 25], &[1, 5, 5]);
    assert!(flat.max_pool2d(&Pool2dArgs::new([2, 2])).is_err());
    assert!(
        x.avg_pool2d(&Pool2dArgs::new([2, 2]), true, Some(0))
            .is_err()
    );
    let dil = args([2, 2], [2, 2], [0, 0], [2, 2], false);
    assert!(x.avg_pool2d(&dil, true, None).is_err());
    let ints = CpuTensor::from_vec(vec![0i32; 25], &[1, 1, 5, 5]).unwrap();
    assert!(ints.max_pool2d(&Pool2dArgs::new([2, 2])).is_err());
    // Gradients of the wrong shape.
    let a = Pool2dArgs::new([2, 2]);
    let (v, i) = x.max_pool2d(&a).unwrap();
    assert!(v.max_pool2d_backward(&i, &[1, 1, 6, 6], &a).is_err());
    assert!(v.max_pool2d_backward(&v, &[1, 1, 5, 5], &a).is_err());
    assert!(
        v.avg_pool2d_backward(&[1, 1, 7, 7], &a, true, None)
            .is_err()
    );
    assert!(v.adaptive_avg_pool2d_backward(&[1, 1]).is_err());
}

/// max_pool2d's values and indices skip the zero fill (every output is
/// written): buffers the cache hands back full of NaN must not show
/// through, with padding, dilation, ceil mode and the plain 2x2 case.
#[test]
fn max_pool2d_outputs_never_leak_a_recycled_buffers_values() {
    let cases = [
        (
            [16, 16, 64, 64],
            args([2, 2], [2, 2], [0, 0], [1, 1], false),
        ),
        ([16, 16, 63, 61], args([3, 3], [2, 2], [1, 1], [2, 1], true)),
    ];
    for (shape, a) in cases {
        let n: usize = shape.iter().product();
        let x = CpuTensor::from_vec(data(n, 7), &shape).unwrap();
        let (want_v, want_i) = x.max_pool2d(&a).unwrap();
        let (want_v, want_i) = (
            want_v.to_vec::<f32>().unwrap(),
            want_i.to_vec::<i32>().unwrap(),
        );
        for _ in 0..2 {
            // NaN tensors of the outputs' size (cached), dropped just before.
            let out_shape = wgrad_core::checks::pool::max_pool2d("max_pool2d", &shape, &a)
                .unwrap()
                .output_shape();
            drop(CpuTensor::full(&out_shape, f64::NAN, wgrad_core::DType::F32).unwrap());
            drop(CpuTensor::full(&out_shape, f64::NAN, wgrad_core::DType::F32).unwrap());
            let (v, i) = x.max_pool2d(&a).unwrap();
            assert_eq!(v.to_vec::<f32>().unwrap(), want_v);
            assert_eq!(i.to_vec::<i32>().unwrap(), want_i);
        }
    }
}
