//! 2-D pooling (max with indices, avg, adaptive avg) and their gradients on
//! the GPU vs the CPU reference (itself checked against a plain loop in
//! wgrad-cpu's tests): many geometries, dense/transposed/narrowed inputs
//! and gradients, ties, NaN, -inf, empty batches, a grid past 65535
//! workgroups, errors. Max values, indices and max gradients must be equal
//! bit for bit; averages to f32 rounding of the division.

use wgrad_core::checks::pool::Pool2dArgs;
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::{DType, GpuTensor};
use wgrad_test_support::shared_gpu;

/// Deterministic values in a small set (so windows hold ties).
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

fn geometries() -> Vec<([usize; 4], Pool2dArgs)> {
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
    // 2 x 2 windows tiling the input exactly: the backward's one-thread-
    // per-window kernel (and the same with padding, which does not tile).
    v.push(([2, 3, 8, 6], args([2, 2], [2, 2], [0, 0], [1, 1], false)));
    v.push(([2, 3, 8, 6], args([2, 2], [2, 2], [1, 1], [1, 1], false)));
    v
}

/// How a 4-D operand is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum View {
    Dense,
    /// Stored as `[N, C, W, H]` and transposed back.
    Transposed,
    /// H and W narrowed out of a larger buffer (an offset, padded rows).
    Narrowed,
}

const VIEWS: [View; 3] = [View::Dense, View::Transposed, View::Narrowed];

/// `x` (logical `shape`) as stored for `view`: the buffer and its shape.
fn stored<T: Copy>(x: &[T], shape: [usize; 4], view: View, fill: T) -> (Vec<T>, Vec<usize>) {
    let [n, c, h, w] = shape;
    match view {
        View::Dense => (x.to_vec(), shape.to_vec()),
        View::Transposed => {
            let mut t = vec![fill; x.len()];
            for p in 0..n * c {
                for y in 0..h {
                    for z in 0..w {
                        t[(p * w + z) * h + y] = x[(p * h + y) * w + z];
                    }
                }
            }
            (t, vec![n, c, w, h])
        }
        View::Narrowed => {
            let (bh, bw) = (h + 2, w + 3);
            let mut big = vec![fill; n * c * bh * bw];
            for p in 0..n * c {
                for y in 0..h {
                    for z in 0..w {
                        big[(p * bh + y + 1) * bw + z + 2] = x[(p * h + y) * w + z];
                    }
                }
            }
            (big, vec![n, c, bh, bw])
        }
    }
}

/// The same logical tensor `x` of `shape` on both devices, laid out as
/// `view` (`fill` in the bytes outside the view).
fn pair<T>(
    gpu: &GpuDevice,
    x: &[T],
    shape: [usize; 4],
    view: View,
    fill: T,
) -> (CpuTensor, GpuTensor)
where
    T: wgrad_core::Element + bytemuck::Pod + PartialEq + std::fmt::Debug,
{
    let [_, _, h, w] = shape;
    let (buf, sshape) = stored(x, shape, view, fill);
    let cv = CpuTensor::from_vec(buf.clone(), &sshape).unwrap();
    let gv = GpuTensor::from_vec(gpu, buf, &sshape).unwrap();
    let (cv, gv) = match view {
        View::Dense => (cv, gv),
        View::Transposed => (cv.transpose(2, 3).unwrap(), gv.transpose(2, 3).unwrap()),
        View::Narrowed => (
            cv.narrow(2, 1, h).unwrap().narrow(3, 2, w).unwrap(),
            gv.narrow(2, 1, h).unwrap().narrow(3, 2, w).unwrap(),
        ),
    };
    assert_eq!(cv.to_vec::<T>().unwrap(), x);
    (cv, gv)
}

fn gf(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

fn cf(t: &CpuTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[track_caller]
fn assert_bits(got: &[f32], want: &[f32], what: &str) {
    let g: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
    let w: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
    assert_eq!(g, w, "{what}: got {got:?}, want {want:?}");
}

#[track_caller]
fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-6 * (1.0 + w.abs());
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

#[test]
fn max_pool2d_and_backward_match_cpu_over_geometries() {
    let Some(gpu) = shared_gpu() else { return };
    for (case, (shape, a)) in geometries().into_iter().enumerate() {
        let view = VIEWS[case % 3];
        let x = data(shape.iter().product(), case as u64);
        let (cx, gx) = pair(&gpu, &x, shape, view, f32::NAN);
        let (cv, ci) = cx.max_pool2d(&a).unwrap();
        let (gv, gi) = gx.max_pool2d(&a).unwrap();
        let what = format!("{shape:?} {a:?} {view:?}");
        assert_eq!(gv.shape(), cv.shape(), "{what}");
        assert_eq!(gi.dtype(), DType::I32);
        assert_bits(&gf(&gv), &cf(&cv), &what);
        assert_eq!(
            gi.to_vec_blocking::<i32>().unwrap(),
            ci.to_vec::<i32>().unwrap(),
            "{what}"
        );
        // Gradient and indices laid out another way.
        let gview = VIEWS[(case + 1) % 3];
        let out: [usize; 4] = cv.shape().try_into().unwrap();
        let g = data(out.iter().product(), 1000 + case as u64);
        let (cg, gg) = pair(&gpu, &g, out, gview, f32::NAN);
        let (ci2, gi2) = pair(&gpu, &ci.to_vec::<i32>().unwrap(), out, gview, -7);
        let want = cg.max_pool2d_backward(&ci2, &shape, &a).unwrap();
        let got = gg.max_pool2d_backward(&gi2, &shape, &a).unwrap();
        assert_eq!(got.shape(), &shape);
        assert_bits(&gf(&got), &cf(&want), &format!("backward {what}"));
    }
}

#[test]
fn avg_pool2d_and_backward_match_cpu_over_geometries() {
    let Some(gpu) = shared_gpu() else { return };
    for (case, (shape, mut a)) in geometries().into_iter().enumerate() {
        a.dilation = [1, 1];
        let view = VIEWS[case % 3];
        let x = data(shape.iter().product(), case as u64);
        let (cx, gx) = pair(&gpu, &x, shape, view, f32::NAN);
        for (pad, div) in [
            (true, None),
            (false, None),
            (true, Some(5)),
            (false, Some(2)),
        ] {
            let what = format!("{shape:?} {a:?} {view:?} {pad} {div:?}");
            let want = cx.avg_pool2d(&a, pad, div).unwrap();
            let got = gx.avg_pool2d(&a, pad, div).unwrap();
            assert_eq!(got.shape(), want.shape(), "{what}");
            assert_close(&gf(&got), &cf(&want), &what);
            let out: [usize; 4] = want.shape().try_into().unwrap();
            let g = data(out.iter().product(), 77 + case as u64);
            let (cg, gg) = pair(&gpu, &g, out, VIEWS[(case + 2) % 3], f32::NAN);
            let want = cg.avg_pool2d_backward(&shape, &a, pad, div).unwrap();
            let got = gg.avg_pool2d_backward(&shape, &a, pad, div).unwrap();
            assert_close(&gf(&got), &cf(&want), &format!("backward {what}"));
        }
    }
}

#[test]
fn adaptive_avg_pool2d_and_backward_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let cases: &[([usize; 4], [usize; 2])] = &[
        ([2, 3, 7, 6], [1, 1]),
        ([2, 3, 7, 6], [3, 5]),
        ([1, 2, 10, 9], [3, 4]),
        ([1, 2, 5, 5], [5, 5]),
        ([1, 1, 3, 4], [5, 7]),
        ([2, 2, 8, 8], [4, 2]),
    ];
    for (case, &(shape, o)) in cases.iter().enumerate() {
        let view = VIEWS[case % 3];
        let what = format!("{shape:?} -> {o:?} {view:?}");
        let x = data(shape.iter().product(), case as u64);
        let (cx, gx) = pair(&gpu, &x, shape, view, f32::NAN);
        let want = cx.adaptive_avg_pool2d(o).unwrap();
        let got = gx.adaptive_avg_pool2d(o).unwrap();
        assert_eq!(got.shape(), want.shape());
        assert_close(&gf(&got), &cf(&want), &what);
        let out: [usize; 4] = want.shape().try_into().unwrap();
        let g = data(out.iter().product(), 9 + case as u64);
        let (cg, gg) = pair(&gpu, &g, out, VIEWS[(case + 1) % 3], f32::NAN);
        let want = cg.adaptive_avg_pool2d_backward(&shape).unwrap();
        let got = gg.adaptive_avg_pool2d_backward(&shape).unwrap();
        assert_close(&gf(&got), &cf(&want), &format!("backward {what}"));
    }
}

#[test]
fn max_pool2d_ties_nan_and_infinities_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let shape = [1, 3, 4, 4];
    #[rustfmt::skip]
    let x = vec![
        // Plane 0: ties everywhere.
        2.0, 2.0, 1.0, 2.0,  2.0, 2.0, 2.0, 2.0,  0.0, 0.0, 0.0, 0.0,  0.0, 0.0, 0.0, 0.0,
        // Plane 1: NaNs (one, two in a window) among numbers.
        1.0, nan, 3.0, 4.0,  9.0, nan, nan, 0.0,  nan, 1.0, 5.0, 5.0,  2.0, 3.0, 5.0, nan,
        // Plane 2: -inf everywhere but +inf in one corner.
        -inf, -inf, -inf, -inf,  -inf, -inf, -inf, -inf,  -inf, -inf, -inf, inf,  -inf, -inf, -inf, -inf,
    ];
    for a in [
        args([2, 2], [2, 2], [0, 0], [1, 1], false),
        args([3, 3], [1, 1], [1, 1], [1, 1], false),
        args([2, 2], [1, 1], [1, 1], [2, 2], true),
        args([3, 3], [2, 2], [1, 1], [1, 1], true),
    ] {
        let (cv, ci) = CpuTensor::from_vec(x.clone(), &shape)
            .unwrap()
            .max_pool2d(&a)
            .unwrap();
        let (gv, gi) = GpuTensor::from_vec(&gpu, x.clone(), &shape)
            .unwrap()
            .max_pool2d(&a)
            .unwrap();
        let what = format!("{a:?}");
        assert_bits(&gf(&gv), &cf(&cv), &what);
        let ci_v = ci.to_vec::<i32>().unwrap();
        assert_eq!(gi.to_vec_blocking::<i32>().unwrap(), ci_v, "{what}");
        let g = data(ci_v.len(), 5);
        let want = CpuTensor::from_vec(g.clone(), cv.shape())
            .unwrap()
            .max_pool2d_backward(&ci, &shape, &a)
            .unwrap();
        let got = GpuTensor::from_vec(&gpu, g, gv.shape())
            .unwrap()
            .max_pool2d_backward(&gi, &shape, &a)
            .unwrap();
        assert_bits(&gf(&got), &cf(&want), &format!("backward {what}"));
    }
    // The window [1, nan, 9, nan] gives NaN at the last NaN's index.
    let (v, i) = GpuTensor::from_vec(&gpu, x, &shape)
        .unwrap()
        .max_pool2d(&args([2, 2], [2, 2], [0, 0], [1, 1], false))
        .unwrap();
    assert!(gf(&v)[4].is_nan());
    assert_eq!(i.to_vec_blocking::<i32>().unwrap()[4], 5);
}

#[test]
fn empty_batches_and_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let a = Pool2dArgs::new([2, 2]);
    let x = GpuTensor::zeros(&gpu, &[0, 3, 5, 5], DType::F32).unwrap();
    let (v, i) = x.max_pool2d(&a).unwrap();
    assert_eq!(
        (v.shape(), i.shape()),
        (&[0, 3, 2, 2][..], &[0, 3, 2, 2][..])
    );
    let g = v.max_pool2d_backward(&i, &[0, 3, 5, 5], &a).unwrap();
    assert_eq!(g.shape(), &[0, 3, 5, 5]);
    assert_eq!(x.avg_pool2d(&a, true, None).unwrap().shape(), &[0, 3, 2, 2]);
    let g = v
        .avg_pool2d_backward(&[0, 3, 5, 5], &a, false, None)
        .unwrap();
    assert_eq!(g.shape(), &[0, 3, 5, 5]);
    let y = x.adaptive_avg_pool2d([3, 1]).unwrap();
    assert_eq!(y.shape(), &[0, 3, 3, 1]);
    assert_eq!(
        y.adaptive_avg_pool2d_backward(&[0, 3, 5, 5])
            .unwrap()
            .shape(),
        &[0, 3, 5, 5]
    );
    // A zero-size adaptive output: empty forward, zero gradient.
    let x = GpuTensor::ones(&gpu, &[1, 2, 3, 3], DType::F32).unwrap();
    let y = x.adaptive_avg_pool2d([0, 2]).unwrap();
    assert_eq!(y.shape(), &[1, 2, 0, 2]);
    let g = y.adaptive_avg_pool2d_backward(&[1, 2, 3, 3]).unwrap();
    assert_eq!(gf(&g), vec![0.0; 18]);
    // Errors, as on the CPU.
    let bad = args([2, 2], [2, 2], [2, 2], [1, 1], false);
    let e = x.max_pool2d(&bad).unwrap_err().to_string();
    assert!(e.contains("at most half"), "{e}");
    assert!(x.max_pool2d(&Pool2dArgs::new([4, 4])).is_err());
    assert!(x.avg_pool2d(&a, true, Some(0)).is_err());
    let ints = GpuTensor::zeros(&gpu, &[1, 1, 4, 4], DType::I32).unwrap();
    assert!(ints.max_pool2d(&a).is_err());
    let (v, i) = x.max_pool2d(&a).unwrap();
    assert!(v.max_pool2d_backward(&v, &[1, 2, 3, 3], &a).is_err());
    assert!(v.max_pool2d_backward(&i, &[1, 2, 5, 5], &a).is_err());
}

#[test]
fn grids_past_65535_workgroups_fold() {
    let Some(gpu) = shared_gpu() else { return };
    // 4100^2 input elements is more than 65535 * 256 threads.
    let (h, w) = (4100, 4100);
    let a = Pool2dArgs::new([2, 2]);
    let g = GpuTensor::ones(&gpu, &[1, 1, h / 2, w / 2], DType::F32).unwrap();
    let gi = g
        .avg_pool2d_backward(&[1, 1, h, w], &a, true, None)
        .unwrap();
    let v = gf(&gi);
    assert_eq!(v.len(), h * w);
    assert!(v.iter().all(|&x| x == 0.25), "{:?}", &v[v.len() - 4..]);
    let x: Vec<f32> = (0..h * w).map(|k| (k % 1000) as f32).collect();
    let want = CpuTensor::from_vec(x.clone(), &[1, 1, h, w])
        .unwrap()
        .adaptive_avg_pool2d([h / 4, w])
        .unwrap();
    let got = GpuTensor::from_vec(&gpu, x, &[1, 1, h, w])
        .unwrap()
        .adaptive_avg_pool2d([h / 4, w])
        .unwrap();
    assert_close(&gf(&got), &cf(&want), "adaptive over a folded grid");
}
