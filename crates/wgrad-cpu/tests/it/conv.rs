//! Convolution primitives (conv2d, its input and weight gradients) against
//! a direct f64 loop over every tap, over many geometries, plus adjoint
//! identities, thread-count independence and errors.

use wgrad_core::checks::conv::{self, Conv2dArgs, Conv2dGeometry, ConvTranspose2dArgs};
use wgrad_cpu::{CpuTensor, DType};

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A tensor of `shape` with values from `seed`; when `strided`, a
/// non-contiguous view (built with its axes reversed, then permuted back).
fn tensor(shape: [usize; 4], seed: u64, strided: bool) -> CpuTensor {
    let len = shape.iter().product();
    if !strided {
        return CpuTensor::from_vec(values(len, seed), &shape).unwrap();
    }
    let rev = [shape[3], shape[2], shape[1], shape[0]];
    let t = CpuTensor::from_vec(values(len, seed), &rev).unwrap();
    let t = t.permute(&[3, 2, 1, 0]).unwrap();
    assert_eq!(t.shape(), &shape);
    t
}

fn data(t: &CpuTensor) -> Vec<f64> {
    t.to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f64::from)
        .collect()
}

/// Calls `f(input_index, weight_index, output_index)` for every tap of the
/// convolution that reads inside the input (flat row-major indices).
fn taps(g: &Conv2dGeometry, mut f: impl FnMut(usize, usize, usize)) {
    let [n_, c_, h, w] = g.input_shape();
    let [o_, cg, kh, kw] = g.weight_shape();
    let [_, _, oh, ow] = g.output_shape();
    let og = o_ / g.args.groups;
    let a = &g.args;
    for n in 0..n_ {
        for o in 0..o_ {
            let grp = o / og;
            for y in 0..oh {
                for x in 0..ow {
                    let oi = ((n * o_ + o) * oh + y) * ow + x;
                    for cc in 0..cg {
                        let c = grp * cg + cc;
                        for i in 0..kh {
                            let iy = (y * a.stride[0] + i * a.dilation[0]) as isize
                                - a.padding[0][0] as isize;
                            if iy < 0 || iy >= h as isize {
                                continue;
                            }
                            for j in 0..kw {
                                let ix = (x * a.stride[1] + j * a.dilation[1]) as isize
                                    - a.padding[1][0] as isize;
                                if ix < 0 || ix >= w as isize {
                                    continue;
                                }
                                let xi = ((n * c_ + c) * h + iy as usize) * w + ix as usize;
                                let wi = ((o * cg + cc) * kh + i) * kw + j;
                                f(xi, wi, oi);
                            }
                        }
                    }
                }
            }
        }
    }
    let _ = c_;
}

fn ref_forward(g: &Conv2dGeometry, x: &[f64], w: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; g.output_shape().iter().product()];
    taps(g, |xi, wi, oi| out[oi] += x[xi] * w[wi]);
    out
}

fn ref_input_grad(g: &Conv2dGeometry, gy: &[f64], w: &[f64]) -> Vec<f64> {
    let mut dx = vec![0.0; g.input_shape().iter().product()];
    taps(g, |xi, wi, oi| dx[xi] += gy[oi] * w[wi]);
    dx
}

fn ref_weight_grad(g: &Conv2dGeometry, x: &[f64], gy: &[f64]) -> Vec<f64> {
    let mut dw = vec![0.0; g.weight_shape().iter().product()];
    taps(g, |xi, wi, oi| dw[wi] += x[xi] * gy[oi]);
    dw
}

#[track_caller]
fn assert_rel(what: &str, got: &CpuTensor, shape: [usize; 4], want: &[f64]) {
    assert_eq!(got.shape(), &shape, "{what}: shape");
    assert_eq!(got.dtype(), DType::F32);
    let got = data(got);
    let diff: f64 = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let norm: f64 = want.iter().map(|b| b * b).sum::<f64>().sqrt();
    if norm == 0.0 {
        assert_eq!(diff, 0.0, "{what}: expected all zeros");
    } else {
        assert!(diff / norm < 1e-5, "{what}: relative error {}", diff / norm);
    }
}

fn args(
    stride: [usize; 2],
    padding: [[usize; 2]; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Conv2dArgs {
    Conv2dArgs {
        stride,
        padding,
        dilation,
        groups,
    }
}

/// (input shape, weight shape, args) of every tested geometry.
fn cases() -> Vec<([usize; 4], [usize; 4], Conv2dArgs)> {
    let d = Conv2dArgs::default();
    vec![
        ([2, 3, 7, 9], [4, 3, 3, 3], d),
        (
            [2, 3, 8, 7],
            [5, 3, 3, 2],
            args([2, 2], [[1, 0], [2, 1]], [1, 1], 1),
        ),
        (
            [1, 2, 11, 13],
            [3, 2, 3, 3],
            args([3, 2], [[2, 1], [0, 3]], [2, 2], 1),
        ),
        (
            [2, 3, 10, 10],
            [3, 3, 2, 2],
            args([3, 3], [[0, 0], [0, 0]], [1, 1], 1),
        ),
        (
            [2, 4, 6, 7],
            [6, 2, 3, 3],
            args([1, 1], [[1, 1], [1, 1]], [1, 1], 2),
        ),
        (
            [3, 5, 9, 8],
            [5, 1, 3, 3],
            args([2, 2], [[1, 1], [1, 1]], [1, 1], 5),
        ),
        (
            [2, 4, 7, 6],
            [8, 1, 3, 3],
            args([1, 2], [[1, 2], [0, 1]], [2, 1], 4),
        ),
        ([2, 6, 5, 7], [4, 6, 1, 1], d),
        (
            [2, 6, 5, 7],
            [4, 3, 1, 1],
            args([1, 1], [[0, 0], [0, 0]], [1, 1], 2),
        ),
        (
            [2, 6, 5, 7],
            [4, 6, 1, 1],
            args([2, 3], [[0, 0], [0, 0]], [1, 1], 1),
        ),
        (
            [1, 3, 4, 5],
            [2, 3, 1, 1],
            args([1, 1], [[1, 0], [0, 2]], [1, 1], 1),
        ),
        (
            [2, 3, 12, 11],
            [4, 3, 5, 5],
            args([1, 1], [[2, 2], [2, 2]], [1, 1], 1),
        ),
        (
            [1, 2, 9, 9],
            [3, 2, 5, 5],
            args([2, 2], [[0, 1], [3, 0]], [2, 1], 1),
        ),
        ([0, 3, 5, 5], [2, 3, 3, 3], d),
        (
            [1, 2, 2, 3],
            [3, 2, 3, 3],
            args([1, 1], [[1, 1], [1, 1]], [1, 1], 1),
        ),
        ([1, 1, 1, 1], [1, 1, 1, 1], d),
        ([1, 1, 3, 3], [2, 1, 3, 3], d),
        // Bands of output rows (k = 576, 68 columns: 6 rows per band) and
        // enough work to split over threads.
        (
            [1, 64, 70, 70],
            [4, 64, 3, 3],
            args([1, 1], [[1, 0], [0, 1]], [1, 1], 1),
        ),
        (
            [3, 8, 33, 31],
            [16, 8, 3, 3],
            args([1, 1], [[1, 1], [1, 1]], [1, 1], 1),
        ),
        (
            [2, 16, 20, 20],
            [16, 1, 3, 3],
            args([1, 1], [[1, 1], [1, 1]], [1, 1], 16),
        ),
    ]
}

/// Checks all three primitives of one geometry against the reference.
fn check_geometry(g: &Conv2dGeometry, seed: u64, strided: bool, forward: Option<Conv2dArgs>) {
    let x = tensor(g.input_shape(), seed, strided);
    let w = tensor(g.weight_shape(), seed + 1, strided);
    let gy = tensor(g.output_shape(), seed + 2, strided);
    let (xd, wd, gyd) = (data(&x), data(&w), data(&gy));
    let what = format!("{g:?} strided={strided}");
    if let Some(a) = forward {
        let y = x.conv2d(&w, &a).unwrap();
        assert_rel(
            &format!("forward {what}"),
            &y,
            g.output_shape(),
            &ref_forward(g, &xd, &wd),
        );
    }
    let dx = CpuTensor::conv2d_input_grad(&gy, &w, g).unwrap();
    assert_rel(
        &format!("input grad {what}"),
        &dx,
        g.input_shape(),
        &ref_input_grad(g, &gyd, &wd),
    );
    let dw = CpuTensor::conv2d_weight_grad(&x, &gy, g).unwrap();
    assert_rel(
        &format!("weight grad {what}"),
        &dw,
        g.weight_shape(),
        &ref_weight_grad(g, &xd, &gyd),
    );
}

#[test]
fn conv2d_forward_and_gradients_match_a_direct_loop() {
    for (i, (xs, ws, a)) in cases().into_iter().enumerate() {
        let g = conv::conv2d("conv2d", &xs, &ws, &a).unwrap();
        for strided in [false, true] {
            check_geometry(&g, 10 * i as u64, strided, Some(a));
        }
    }
}

#[test]
fn conv_transpose_geometries_use_the_stored_sizes() {
    let t = |stride, padding, output_padding, groups, dilation| ConvTranspose2dArgs {
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    };
    let cases = [
        (
            [2, 4, 5, 6],
            [4, 3, 3, 3],
            t([2, 2], [1, 1], [1, 1], 1, [1, 1]),
        ),
        (
            [1, 4, 4, 5],
            [4, 1, 3, 2],
            t([3, 2], [0, 1], [2, 1], 2, [1, 1]),
        ),
        // A 1x1 kernel with stride 1 whose output_padding (allowed by the
        // dilation) makes the input planes larger than the output ones.
        (
            [1, 3, 4, 5],
            [3, 2, 1, 1],
            t([1, 1], [0, 0], [1, 1], 1, [2, 2]),
        ),
    ];
    for (i, (xs, ws, a)) in cases.into_iter().enumerate() {
        let g = conv::conv_transpose2d("conv_transpose2d", &xs, &ws, &a).unwrap();
        check_geometry(&g, 100 + i as u64, i % 2 == 1, None);
    }
}

fn dot(a: &CpuTensor, b: &CpuTensor) -> f64 {
    data(a).iter().zip(data(b)).map(|(x, y)| x * y).sum()
}

#[test]
fn gradients_are_adjoints_of_the_forward() {
    for (i, (xs, ws, a)) in cases().into_iter().enumerate() {
        let g = conv::conv2d("conv2d", &xs, &ws, &a).unwrap();
        let x = tensor(xs, 7 * i as u64 + 1, false);
        let w = tensor(ws, 7 * i as u64 + 2, false);
        let gy = tensor(g.output_shape(), 7 * i as u64 + 3, false);
        let y = x.conv2d(&w, &a).unwrap();
        let lhs = dot(&y, &gy);
        let dx = CpuTensor::conv2d_input_grad(&gy, &w, &g).unwrap();
        let dw = CpuTensor::conv2d_weight_grad(&x, &gy, &g).unwrap();
        let scale = data(&y)
            .iter()
            .zip(data(&gy))
            .map(|(p, q)| (p * q).abs())
            .sum::<f64>();
        for (name, rhs) in [("input", dot(&x, &dx)), ("weight", dot(&w, &dw))] {
            assert!(
                (lhs - rhs).abs() <= 1e-4 * scale.max(1e-30),
                "case {i} {name}: <conv(x), gy> = {lhs}, adjoint gives {rhs}"
            );
        }
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let a = args([1, 1], [[1, 1], [1, 1]], [1, 1], 1);
    let g = conv::conv2d("conv2d", &[4, 16, 30, 30], &[32, 16, 3, 3], &a).unwrap();
    let x = tensor(g.input_shape(), 1, false);
    let w = tensor(g.weight_shape(), 2, false);
    let gy = tensor(g.output_shape(), 3, false);
    let run = || {
        (
            x.conv2d(&w, &a).unwrap().to_vec::<f32>().unwrap(),
            CpuTensor::conv2d_input_grad(&gy, &w, &g)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            CpuTensor::conv2d_weight_grad(&x, &gy, &g)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
        )
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let serial = one.install(run);
    let parallel = three.install(run);
    let bits = |v: &Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&serial.0), bits(&parallel.0));
    assert_eq!(bits(&serial.1), bits(&parallel.1));
    assert_eq!(bits(&serial.2), bits(&parallel.2));
}

#[test]
fn bad_operands_are_errors() {
    let d = Conv2dArgs::default();
    let x = tensor([1, 3, 5, 5], 1, false);
    let w = tensor([4, 3, 3, 3], 2, false);
    let xi = CpuTensor::from_vec(vec![0i32; 75], &[1, 3, 5, 5]).unwrap();
    assert!(xi.conv2d(&w, &d).is_err());
    assert!(x.conv2d(&tensor([4, 2, 3, 3], 3, false), &d).is_err());
    let g = conv::conv2d("conv2d", &[1, 3, 5, 5], &[4, 3, 3, 3], &d).unwrap();
    let gy = tensor(g.output_shape(), 4, false);
    // Operands that do not match the geometry.
    assert!(CpuTensor::conv2d_input_grad(&x, &w, &g).is_err());
    assert!(CpuTensor::conv2d_weight_grad(&gy, &gy, &g).is_err());
    // A hand-made inconsistent geometry is an error, not a panic.
    let bad = Conv2dGeometry {
        args: Conv2dArgs { groups: 0, ..d },
        ..g
    };
    assert!(CpuTensor::conv2d_input_grad(&gy, &w, &bad).is_err());
    let bad = Conv2dGeometry {
        args: Conv2dArgs { groups: 2, ..d },
        ..g
    };
    assert!(CpuTensor::conv2d_weight_grad(&x, &gy, &bad).is_err());
}

/// conv2d's output skips the zero fill (its GEMMs never read it): a buffer
/// the cache hands back full of NaN must not show through, with groups,
/// padding, row bands and the 1x1 path.
#[test]
fn conv2d_outputs_never_leak_a_recycled_buffers_values() {
    let d = Conv2dArgs::default();
    let geometries = [
        (
            [16, 8, 32, 32],
            [16, 8, 3, 3],
            args([1, 1], [[1, 1], [1, 1]], [1, 1], 1),
        ),
        (
            [16, 8, 64, 64],
            [16, 4, 3, 3],
            args([2, 2], [[0, 0], [0, 0]], [1, 1], 2),
        ),
        ([16, 16, 32, 32], [16, 16, 1, 1], d),
    ];
    for (x_shape, w_shape, a) in geometries {
        let (x, w) = (tensor(x_shape, 3, false), tensor(w_shape, 4, true));
        let want = x.conv2d(&w, &a).unwrap().to_vec::<f32>().unwrap();
        let out_shape = conv::conv2d("conv2d", &x_shape, &w_shape, &a)
            .unwrap()
            .output_shape();
        for _ in 0..2 {
            // A NaN tensor of the output's size (1 MiB or so: cached),
            // dropped into the cache just before the conv.
            drop(CpuTensor::full(&out_shape, f64::NAN, DType::F32).unwrap());
            assert_eq!(x.conv2d(&w, &a).unwrap().to_vec::<f32>().unwrap(), want);
        }
    }
}
