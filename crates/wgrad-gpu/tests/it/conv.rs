//! `conv2d`, `conv2d_input_grad` and `conv2d_weight_grad` on the GPU against
//! a direct f64 reference (the defining loops), over geometries that cover
//! strides 1-3, asymmetric padding, dilation, groups (2, depthwise, channel
//! multiplier), 1x1 and 5x5 kernels, odd sizes, GEMM sizes that leave
//! partial 64 x 64 tiles and 16-deep K steps, batch 0 and 1, the aligned
//! (channels per group % 16 == 0) load path, split and unsplit weight
//! gradients, and strided (permuted, transposed, narrowed) operands.
//! Tolerance: relative Frobenius-norm error < 1e-5.

use wgrad_test_support::shared_gpu;

use crate::bits::f32_bits;

use wgrad_core::checks::conv::{self, Conv2dArgs, Conv2dGeometry};
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

const TOL: f64 = 1e-5;

/// Deterministic values in [-1, 1).
fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// Forward output, input gradient and weight gradient of `g` by the
/// defining loops, in f64 (x, w, dy contiguous NCHW / OIHW).
fn reference(g: &Conv2dGeometry, x: &[f32], w: &[f32], dy: &[f32]) -> [Vec<f64>; 3] {
    let [n_, ci, h_, w_] = g.input_shape();
    let [co, cig, kh, kw] = g.weight_shape();
    let [oh, ow] = g.output_hw;
    let cog = g.out_per_group();
    let a = &g.args;
    let mut out = vec![0.0; n_ * co * oh * ow];
    let mut dx = vec![0.0; x.len()];
    let mut dw = vec![0.0; w.len()];
    for n in 0..n_ {
        for o in 0..co {
            let grp = o / cog;
            for y in 0..oh {
                for xo in 0..ow {
                    let oi = ((n * co + o) * oh + y) * ow + xo;
                    let mut acc = 0.0f64;
                    for c in 0..cig {
                        let cin = grp * cig + c;
                        for i in 0..kh {
                            for j in 0..kw {
                                let h = (y * a.stride[0] + i * a.dilation[0]) as isize
                                    - a.padding[0][0] as isize;
                                let wc = (xo * a.stride[1] + j * a.dilation[1]) as isize
                                    - a.padding[1][0] as isize;
                                if h < 0 || wc < 0 || h >= h_ as isize || wc >= w_ as isize {
                                    continue;
                                }
                                let xi = ((n * ci + cin) * h_ + h as usize) * w_ + wc as usize;
                                let wi = ((o * cig + c) * kh + i) * kw + j;
                                acc += f64::from(x[xi]) * f64::from(w[wi]);
                                dx[xi] += f64::from(dy[oi]) * f64::from(w[wi]);
                                dw[wi] += f64::from(dy[oi]) * f64::from(x[xi]);
                            }
                        }
                    }
                    out[oi] = acc;
                }
            }
        }
    }
    [out, dx, dw]
}

fn rel_norm_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let diff: f64 = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|w| w * w).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

fn check(got: &GpuTensor, shape: [usize; 4], want: &[f64], what: &str) {
    assert_eq!(got.shape(), shape, "{what}: shape");
    assert!(got.is_contiguous(), "{what}: not contiguous");
    let got = got.to_vec_blocking::<f32>().unwrap();
    if want.iter().all(|&v| v == 0.0) {
        assert!(got.iter().all(|&v| v == 0.0), "{what}: want all zeros");
        return;
    }
    let err = rel_norm_err(&got, want);
    assert!(err < TOL, "{what}: relative norm error {err:e}");
}

/// How the operands are laid out on the GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Views {
    Contiguous,
    /// input from [N, H, C, W], grad_out from [N, H, W, C] (permuted),
    /// weight from [O, C, kW, kH] (transposed).
    Permuted,
    /// Every operand a narrowed window (offset, padded strides).
    Narrowed,
}

/// `data` (contiguous NCHW) as a GPU view of `shape` laid out as `views`.
fn upload(
    gpu: &GpuDevice,
    data: &[f32],
    shape: [usize; 4],
    perm: [usize; 4],
    views: Views,
) -> GpuTensor {
    match views {
        Views::Contiguous => GpuTensor::from_vec(gpu, data.to_vec(), &shape).unwrap(),
        Views::Permuted => {
            // Stored in the order `perm` of the logical dims.
            let stored: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
            let mut buf = vec![0.0f32; data.len()];
            let strides_l = [
                shape[1] * shape[2] * shape[3],
                shape[2] * shape[3],
                shape[3],
                1,
            ];
            let mut idx = [0usize; 4];
            for (s, v) in buf.iter_mut().enumerate() {
                let mut r = s;
                for d in (0..4).rev() {
                    idx[d] = r % stored[d];
                    r /= stored[d];
                }
                let mut l = 0;
                for d in 0..4 {
                    l += idx[d] * strides_l[perm[d]];
                }
                *v = data[l];
            }
            let t = GpuTensor::from_vec(gpu, buf, &stored).unwrap();
            let mut inv = [0isize; 4];
            for (d, &p) in perm.iter().enumerate() {
                inv[p] = d as isize;
            }
            let v = t.permute(&inv).unwrap();
            assert_eq!(v.shape(), shape);
            v
        }
        Views::Narrowed => {
            // A [.., W + 3] tensor whose columns 2..W+2 hold the data.
            let wide = [shape[0], shape[1], shape[2], shape[3] + 3];
            let mut buf = data_for_pad(data, shape);
            buf.truncate(wide.iter().product());
            let t = GpuTensor::from_vec(gpu, buf, &wide).unwrap();
            t.narrow(3, 2, shape[3]).unwrap()
        }
    }
}

fn data_for_pad(data: &[f32], shape: [usize; 4]) -> Vec<f32> {
    let w = shape[3];
    let rows = data.len().checked_div(w).unwrap_or(0);
    let mut out = Vec::with_capacity(rows * (w + 3));
    for r in 0..rows {
        out.extend([7.0, -7.0]);
        out.extend_from_slice(&data[r * w..(r + 1) * w]);
        out.push(9.0);
    }
    out
}

/// Runs the three primitives on one geometry and compares them.
fn case(input: [usize; 4], weight: [usize; 4], args: Conv2dArgs, views: Views) {
    let Some(gpu) = shared_gpu() else { return };
    let g = conv::conv2d("test", &input, &weight, &args).unwrap();
    let what = format!("x{input:?} w{weight:?} {args:?} {views:?}");
    let numel = |s: [usize; 4]| s.iter().product::<usize>();
    let x = data(numel(input), 1 + numel(input) as u64);
    let w = data(numel(weight), 2 + numel(weight) as u64);
    let dy = data(numel(g.output_shape()), 3);
    let [out, dx, dw] = reference(&g, &x, &w, &dy);
    let gx = upload(&gpu, &x, input, [0, 2, 1, 3], views);
    let gw = upload(&gpu, &w, weight, [0, 1, 3, 2], views);
    let gdy = upload(&gpu, &dy, g.output_shape(), [0, 2, 3, 1], views);
    // 32: the 32 x 128 input-gradient tiles (any channel count: rows past
    // 32 take more tiles).
    let got = GpuTensor::conv2d_input_grad_tiled(&gdy, &gw, &g, 32).unwrap();
    check(
        &got,
        g.input_shape(),
        &dx,
        &format!("input grad, tile 32, {what}"),
    );
    // The fused bias: dense, or at an offset in a larger buffer (copied
    // first: the kernel reads it from element 0).
    let c_out = g.out_channels;
    let bias = data(c_out, 4);
    let gbias = match views {
        Views::Contiguous => GpuTensor::from_vec(&gpu, bias.clone(), &[c_out]).unwrap(),
        _ => {
            let padded: Vec<f32> = [5.0].into_iter().chain(bias.iter().copied()).collect();
            GpuTensor::from_vec(&gpu, padded, &[c_out + 1])
                .unwrap()
                .narrow(0, 1, c_out)
                .unwrap()
        }
    };
    let [_, _, oh, ow] = g.output_shape();
    let out_biased: Vec<f64> = out
        .iter()
        .enumerate()
        .map(|(i, v)| v + f64::from(bias[(i / (oh * ow)) % c_out]))
        .collect();
    for tile in [0, 64, 128] {
        let got = gx.conv2d_tiled(&gw, &args, tile).unwrap();
        check(
            &got,
            g.output_shape(),
            &out,
            &format!("forward, tile {tile}, {what}"),
        );
        let got = gx
            .conv2d_bias_tiled(&gw, Some(&gbias), &args, tile)
            .unwrap();
        check(
            &got,
            g.output_shape(),
            &out_biased,
            &format!("forward with bias, tile {tile}, {what}"),
        );
        // The ReLU epilogue: bit for bit the biased output then ReLU.
        let want = got.unary(wgrad_core::UnaryOp::Relu).unwrap();
        let relu = gx
            .conv2d_relu_tiled(&gw, Some(&gbias), &args, tile)
            .unwrap();
        assert_eq!(
            f32_bits(&relu),
            f32_bits(&want),
            "forward with bias and relu, tile {tile}, {what}"
        );
        let got = GpuTensor::conv2d_input_grad_tiled(&gdy, &gw, &g, tile).unwrap();
        check(
            &got,
            g.input_shape(),
            &dx,
            &format!("input grad, tile {tile}, {what}"),
        );
    }
    winograd_case(
        &g,
        [&gx, &gw, &gdy, &gbias],
        [&out, &out_biased, &dx, &dw],
        &what,
    );
    let got = GpuTensor::conv2d_weight_grad(&gx, &gdy, &g).unwrap();
    check(&got, g.weight_shape(), &dw, &format!("weight grad {what}"));
    // The bias gradient: dy summed over batch and pixels, per channel.
    let [_, _, oh, ow] = g.output_shape();
    let mut db = vec![0.0f64; c_out];
    for (i, v) in dy.iter().enumerate() {
        db[(i / (oh * ow)) % c_out] += f64::from(*v);
    }
    for (splits, tile) in [(1, 64), (2, 64), (7, 64), (1, 128), (3, 128), (0, 128)] {
        let what = format!("{splits} splits, tile {tile}, {what}");
        let got = GpuTensor::conv2d_weight_grad_variant(&gx, &gdy, &g, splits, tile).unwrap();
        check(&got, g.weight_shape(), &dw, &format!("weight grad, {what}"));
        let (gw_, gb) =
            GpuTensor::conv2d_weight_and_bias_grad_variant(&gx, &gdy, &g, splits, tile).unwrap();
        check(
            &gw_,
            g.weight_shape(),
            &dw,
            &format!("weight grad with bias, {what}"),
        );
        assert_eq!(gb.shape(), &[c_out], "{what}");
        let got = gb.to_vec_blocking::<f32>().unwrap();
        let err = rel_norm_err(&got, &db);
        assert!(err < TOL, "bias grad, {what}: relative norm error {err:e}");
    }
}

/// The forced Winograd forward (plain, biased, biased + ReLU bit for bit
/// as the biased output then ReLU) and input gradient, where they apply,
/// against the reference; where they do not, the error.
fn winograd_case(
    g: &Conv2dGeometry,
    [gx, gw, gdy, gbias]: [&GpuTensor; 4],
    [out, out_biased, dx, dw]: [&[f64]; 4],
    what: &str,
) {
    let a = &g.args;
    let shape_ok =
        g.kernel_hw == [3, 3] && a.stride == [1, 1] && a.dilation == [1, 1] && a.groups == 1;
    let forward = gx.conv2d_winograd(gw, None, false, a);
    if !shape_ok {
        let err = forward.unwrap_err().to_string();
        assert!(
            err.contains("Winograd") && err.contains("3x3"),
            "{what}: {err}"
        );
        return;
    }
    let what = format!("Winograd, {what}");
    check(
        &forward.unwrap(),
        g.output_shape(),
        out,
        &format!("forward, {what}"),
    );
    let biased = gx.conv2d_winograd(gw, Some(gbias), false, a).unwrap();
    check(
        &biased,
        g.output_shape(),
        out_biased,
        &format!("forward with bias, {what}"),
    );
    let relu = gx.conv2d_winograd(gw, Some(gbias), true, a).unwrap();
    let want = biased.unary(wgrad_core::UnaryOp::Relu).unwrap();
    assert_eq!(
        f32_bits(&relu),
        f32_bits(&want),
        "forward with bias and relu, {what}"
    );
    let weight_grad = GpuTensor::conv2d_weight_grad_winograd(gx, gdy, g).unwrap();
    check(
        &weight_grad,
        g.weight_shape(),
        dw,
        &format!("weight grad, {what}"),
    );
    let input_grad = GpuTensor::conv2d_input_grad_winograd(gdy, gw, g);
    if a.padding[0][0] > 2 || a.padding[1][0] > 2 {
        let err = input_grad.unwrap_err().to_string();
        assert!(err.contains("padding"), "{what}: {err}");
    } else {
        check(
            &input_grad.unwrap(),
            g.input_shape(),
            dx,
            &format!("input grad, {what}"),
        );
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

const P0: [[usize; 2]; 2] = [[0, 0], [0, 0]];
const P1: [[usize; 2]; 2] = [[1, 1], [1, 1]];

/// Every geometry of the table, with every operand layout.
fn geometries() -> Vec<([usize; 4], [usize; 4], Conv2dArgs)> {
    vec![
        ([2, 3, 9, 11], [5, 3, 3, 3], Conv2dArgs::default()),
        ([1, 4, 13, 10], [6, 4, 3, 3], args([2, 2], P1, [1, 1], 1)),
        (
            [1, 3, 11, 12],
            [4, 3, 3, 2],
            args([3, 3], [[2, 0], [1, 3]], [1, 1], 1),
        ),
        (
            [2, 5, 10, 9],
            [7, 5, 3, 3],
            args([1, 1], [[2, 2], [1, 1]], [2, 2], 1),
        ),
        (
            [2, 3, 12, 9],
            [4, 3, 3, 3],
            args([2, 1], [[0, 1], [2, 0]], [1, 2], 1),
        ),
        ([2, 6, 8, 8], [4, 3, 3, 3], args([1, 1], P1, [1, 1], 2)),
        ([2, 8, 9, 9], [8, 1, 3, 3], args([1, 1], P1, [1, 1], 8)),
        ([1, 8, 7, 9], [16, 1, 3, 3], args([2, 2], P1, [1, 1], 8)),
        ([3, 32, 7, 7], [70, 32, 1, 1], Conv2dArgs::default()),
        (
            [1, 3, 12, 12],
            [8, 3, 5, 5],
            args([1, 1], [[2, 2], [2, 2]], [1, 1], 1),
        ),
        ([2, 32, 10, 10], [48, 32, 3, 3], args([1, 1], P1, [1, 1], 1)),
        ([2, 64, 6, 6], [32, 32, 3, 3], args([2, 2], P1, [1, 1], 2)),
        ([2, 16, 20, 20], [96, 16, 3, 3], args([1, 1], P1, [1, 1], 1)),
        ([4, 1, 28, 28], [32, 1, 3, 3], Conv2dArgs::default()),
        ([1, 32, 13, 13], [64, 32, 3, 3], Conv2dArgs::default()),
        ([2, 16, 9, 9], [16, 16, 1, 1], args([2, 2], P0, [1, 1], 1)),
        // Depthwise (the direct kernels at tile 0): a channel multiplier of
        // 3 with a 5x5 dilated, strided, asymmetrically padded kernel; a
        // 7x7 (ConvNeXt); 9x9, whose 81 taps send the weight gradient back
        // to the GEMM.
        (
            [2, 6, 11, 10],
            [18, 1, 5, 5],
            args([1, 2], [[2, 1], [0, 3]], [2, 1], 6),
        ),
        (
            [1, 4, 9, 9],
            [4, 1, 7, 7],
            args([1, 1], [[3, 3], [3, 3]], [1, 1], 4),
        ),
        // 40 output rows over 4 channels: the weight gradient in 10
        // chunks of 4 rows, then their sum.
        ([2, 4, 20, 20], [4, 1, 3, 3], args([1, 1], P1, [1, 1], 4)),
        // Rows wider than a workgroup's 64 columns.
        ([1, 2, 5, 70], [2, 1, 3, 3], args([1, 1], P1, [1, 1], 2)),
        (
            [1, 3, 12, 12],
            [3, 1, 9, 9],
            args([1, 1], [[4, 4], [4, 4]], [1, 1], 3),
        ),
        // Winograd shapes: every padding up to 3 (3: no Winograd input
        // gradient), odd sizes (partial 2 x 2 tiles), one pixel, and 64
        // channels, which the automatic choice (tile 0) takes this way.
        (
            [1, 5, 1, 1],
            [3, 5, 3, 3],
            args([1, 1], [[2, 0], [1, 1]], [1, 1], 1),
        ),
        (
            [2, 3, 7, 6],
            [4, 3, 3, 3],
            args([1, 1], [[0, 2], [2, 1]], [1, 1], 1),
        ),
        (
            [1, 4, 6, 9],
            [5, 4, 3, 3],
            args([1, 1], [[3, 1], [0, 3]], [1, 1], 1),
        ),
        ([2, 64, 7, 9], [64, 64, 3, 3], args([1, 1], P1, [1, 1], 1)),
        ([1, 64, 6, 5], [80, 64, 3, 3], Conv2dArgs::default()),
        // Stride and dilation sharing a factor: input-gradient phases without taps.
        (
            [1, 3, 11, 10],
            [4, 3, 3, 3],
            args([2, 2], [[1, 2], [2, 1]], [2, 2], 1),
        ),
        (
            [2, 2, 13, 14],
            [3, 2, 3, 2],
            args([3, 2], [[1, 0], [0, 1]], [2, 3], 1),
        ),
    ]
}

#[test]
fn conv2d_primitives_match_the_reference() {
    for (x, w, a) in geometries() {
        case(x, w, a, Views::Contiguous);
    }
}

#[test]
fn conv2d_primitives_read_permuted_views() {
    for (x, w, a) in geometries().into_iter().step_by(2) {
        case(x, w, a, Views::Permuted);
    }
}

#[test]
fn conv2d_primitives_read_narrowed_views() {
    for (x, w, a) in geometries().into_iter().skip(1).step_by(3) {
        case(x, w, a, Views::Narrowed);
    }
}

#[test]
fn conv2d_empty_batch_gives_empty_outputs_and_zero_weight_grad() {
    let Some(gpu) = shared_gpu() else { return };
    let a = args([1, 1], P1, [1, 1], 1);
    let x = GpuTensor::zeros(&gpu, &[0, 3, 5, 5], wgrad_core::DType::F32).unwrap();
    let w = GpuTensor::from_vec(&gpu, data(4 * 3 * 9, 5), &[4, 3, 3, 3]).unwrap();
    let g = conv::conv2d("test", &[0, 3, 5, 5], &[4, 3, 3, 3], &a).unwrap();
    let out = x.conv2d(&w, &a).unwrap();
    assert_eq!(out.shape(), [0, 4, 5, 5]);
    let dy = GpuTensor::zeros(&gpu, &[0, 4, 5, 5], wgrad_core::DType::F32).unwrap();
    assert_eq!(
        GpuTensor::conv2d_input_grad(&dy, &w, &g).unwrap().shape(),
        [0, 3, 5, 5]
    );
    let dw = GpuTensor::conv2d_weight_grad(&x, &dy, &g).unwrap();
    assert_eq!(dw.to_vec_blocking::<f32>().unwrap(), vec![0.0; 4 * 3 * 9]);
}

/// Slow on lavapipe (a minute: every workgroup is a full tile), so
/// ignored; run on a GPU with `-- --ignored conv::conv2d_folds`.
#[test]
#[ignore = "slow on a software adapter"]
fn conv2d_folds_grids_past_65535_workgroups() {
    // 2098^2 output pixels: 68 775 column tiles of 64 (and 68 907 input
    // pixels for the input gradient), folded into y.
    let Some(gpu) = shared_gpu() else { return };
    let a = args([1, 1], P0, [1, 1], 1);
    let g = conv::conv2d("test", &[1, 1, 2100, 2100], &[2, 1, 3, 3], &a).unwrap();
    let x = data(2100 * 2100, 21);
    let w = data(18, 22);
    let dy = data(2 * 2098 * 2098, 23);
    let [out, dx, _] = reference(&g, &x, &w, &dy);
    let gx = GpuTensor::from_vec(&gpu, x, &g.input_shape()).unwrap();
    let gw = GpuTensor::from_vec(&gpu, w, &g.weight_shape()).unwrap();
    let gdy = GpuTensor::from_vec(&gpu, dy, &g.output_shape()).unwrap();
    let got = gx.conv2d_tiled(&gw, &a, 64).unwrap();
    check(&got, g.output_shape(), &out, "folded forward");
    let got = GpuTensor::conv2d_input_grad_tiled(&gdy, &gw, &g, 64).unwrap();
    check(&got, g.input_shape(), &dx, "folded input grad");
}

#[test]
fn conv_transpose_geometry_with_output_padding() {
    // conv_transpose2d([1, 4, 5, 6], w[4, 3, 3, 3], stride 2, padding 1,
    // output_padding 1) -> [1, 3, 10, 12]: the last row and column of the
    // result are read by no output position.
    let Some(gpu) = shared_gpu() else { return };
    let t = conv::ConvTranspose2dArgs {
        stride: [2, 2],
        padding: [1, 1],
        output_padding: [1, 1],
        ..Default::default()
    };
    let g = conv::conv_transpose2d("test", &[1, 4, 5, 6], &[4, 3, 3, 3], &t).unwrap();
    let x = data(g.input_shape().iter().product(), 11);
    let w = data(4 * 3 * 9, 12);
    let dy = data(g.output_shape().iter().product(), 13);
    let [_, dx, dw] = reference(&g, &x, &w, &dy);
    let gdy = GpuTensor::from_vec(&gpu, dy, &g.output_shape()).unwrap();
    let gw = GpuTensor::from_vec(&gpu, w, &[4, 3, 3, 3]).unwrap();
    let gx = GpuTensor::from_vec(&gpu, x, &g.input_shape()).unwrap();
    check(
        &GpuTensor::conv2d_input_grad(&gdy, &gw, &g).unwrap(),
        g.input_shape(),
        &dx,
        "transposed",
    );
    check(
        &GpuTensor::conv2d_weight_grad(&gx, &gdy, &g).unwrap(),
        g.weight_shape(),
        &dw,
        "transposed dw",
    );
}

#[test]
fn bad_convolutions_are_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let f = |shape: &[usize]| GpuTensor::zeros(&gpu, shape, wgrad_core::DType::F32).unwrap();
    let d = Conv2dArgs::default();
    assert!(f(&[3, 5, 5]).conv2d(&f(&[4, 3, 3, 3]), &d).is_err());
    assert!(f(&[1, 3, 5, 5]).conv2d(&f(&[4, 2, 3, 3]), &d).is_err());
    assert!(f(&[1, 3, 5, 5]).conv2d(&f(&[4, 3, 3]), &d).is_err());
    let ints = GpuTensor::zeros(&gpu, &[1, 3, 5, 5], wgrad_core::DType::I32).unwrap();
    assert!(ints.conv2d(&f(&[4, 3, 3, 3]), &d).is_err());
    let g = conv::conv2d("test", &[1, 3, 5, 5], &[4, 3, 3, 3], &d).unwrap();
    assert!(GpuTensor::conv2d_input_grad(&f(&[1, 4, 3, 4]), &f(&[4, 3, 3, 3]), &g).is_err());
    assert!(GpuTensor::conv2d_input_grad(&f(&[1, 4, 3, 3]), &f(&[4, 1, 3, 3]), &g).is_err());
    assert!(GpuTensor::conv2d_weight_grad(&f(&[1, 3, 5, 6]), &f(&[1, 4, 3, 3]), &g).is_err());
    let bad = Conv2dGeometry {
        args: Conv2dArgs { groups: 0, ..d },
        ..g
    };
    assert!(GpuTensor::conv2d_weight_grad(&f(&[1, 3, 5, 5]), &f(&[1, 4, 3, 3]), &bad).is_err());
}

/// Throughput of the three primitives at ResNet and MNIST shapes (not a
/// correctness test). Run with `cargo test --release -p wgrad-gpu --test it
/// -- --ignored --nocapture conv::bench_conv_throughput`; prints ms and
/// TFLOP/s (2 * the multiply-adds of the direct convolution) per primitive.
#[test]
#[ignore = "benchmark"]
fn bench_conv_throughput() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    let p1 = args([1, 1], P1, [1, 1], 1);
    let s2 = args([2, 2], P1, [1, 1], 1);
    let d = Conv2dArgs::default();
    let cases: &[(&str, [usize; 4], [usize; 4], Conv2dArgs)] = &[
        ("r64 56x56 3x3", [32, 64, 56, 56], [64, 64, 3, 3], p1),
        ("r128 28x28 3x3", [32, 128, 28, 28], [128, 128, 3, 3], p1),
        ("r256 14x14 3x3", [32, 256, 14, 14], [256, 256, 3, 3], p1),
        ("r512 7x7 3x3", [32, 512, 7, 7], [512, 512, 3, 3], p1),
        ("1x1 64->256 56", [32, 64, 56, 56], [256, 64, 1, 1], d),
        ("1x1 256->64 56", [32, 256, 56, 56], [64, 256, 1, 1], d),
        ("s2 64->128 56", [32, 64, 56, 56], [128, 64, 3, 3], s2),
        (
            "stem 7x7 s2",
            [32, 3, 224, 224],
            [64, 3, 7, 7],
            args([2, 2], [[3, 3], [3, 3]], [1, 1], 1),
        ),
        ("mnist 1->32", [64, 1, 28, 28], [32, 1, 3, 3], d),
        ("mnist 32->64", [64, 32, 26, 26], [64, 32, 3, 3], d),
        // Depthwise: MobileNet's 3x3 (and stride 2), ConvNeXt's 7x7.
        (
            "dw 256 56 3x3",
            [32, 256, 56, 56],
            [256, 1, 3, 3],
            args([1, 1], P1, [1, 1], 256),
        ),
        (
            "dw s2 144 56",
            [32, 144, 56, 56],
            [144, 1, 3, 3],
            args([2, 2], P1, [1, 1], 144),
        ),
        (
            "dw 96 56 7x7",
            [32, 96, 56, 56],
            [96, 1, 7, 7],
            args([1, 1], [[3, 3], [3, 3]], [1, 1], 96),
        ),
    ];
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}   (TFLOP/s of the direct sum; auto ms)",
        "case",
        "fwd64",
        "fwd128",
        "fwdW",
        "dx64",
        "dx128",
        "dxW",
        "dw64",
        "dw128",
        "dwW",
        "fwd ms",
        "dx ms",
        "dw ms"
    );
    for &(name, xs, ws, a) in cases {
        let g = conv::conv2d("bench", &xs, &ws, &a).unwrap();
        let numel = |s: [usize; 4]| s.iter().product::<usize>();
        let x = GpuTensor::from_vec(&gpu, data(numel(xs), 1), &xs).unwrap();
        let w = GpuTensor::from_vec(&gpu, data(numel(ws), 2), &ws).unwrap();
        let dy =
            GpuTensor::from_vec(&gpu, data(numel(g.output_shape()), 3), &g.output_shape()).unwrap();
        let flops = 2.0 * (numel(g.output_shape()) * numel(ws) / ws[0]) as f64;
        let time = |run: &dyn Fn()| {
            run();
            gpu.synchronize().unwrap();
            let start = std::time::Instant::now();
            run();
            gpu.synchronize().unwrap();
            let once = start.elapsed().as_secs_f64();
            let iters = ((0.2 / once) as u32).clamp(3, 200);
            let start = std::time::Instant::now();
            for _ in 0..iters {
                run();
            }
            gpu.synchronize().unwrap();
            start.elapsed().as_secs_f64() / f64::from(iters)
        };
        let f64_ = time(&|| drop(x.conv2d_tiled(&w, &a, 64).unwrap()));
        let f128 = time(&|| drop(x.conv2d_tiled(&w, &a, 128).unwrap()));
        let x64 = time(&|| drop(GpuTensor::conv2d_input_grad_tiled(&dy, &w, &g, 64).unwrap()));
        let x128 = time(&|| drop(GpuTensor::conv2d_input_grad_tiled(&dy, &w, &g, 128).unwrap()));
        // The Winograd path forced (0: it does not apply).
        let fw = x
            .conv2d_winograd(&w, None, false, &a)
            .is_ok()
            .then(|| time(&|| drop(x.conv2d_winograd(&w, None, false, &a).unwrap())));
        let xw = GpuTensor::conv2d_input_grad_winograd(&dy, &w, &g)
            .is_ok()
            .then(|| time(&|| drop(GpuTensor::conv2d_input_grad_winograd(&dy, &w, &g).unwrap())));
        let w64 =
            time(&|| drop(GpuTensor::conv2d_weight_grad_variant(&x, &dy, &g, 0, 64).unwrap()));
        let w128 =
            time(&|| drop(GpuTensor::conv2d_weight_grad_variant(&x, &dy, &g, 0, 128).unwrap()));
        let ww = GpuTensor::conv2d_weight_grad_winograd(&x, &dy, &g)
            .is_ok()
            .then(|| time(&|| drop(GpuTensor::conv2d_weight_grad_winograd(&x, &dy, &g).unwrap())));
        let tw = time(&|| drop(GpuTensor::conv2d_weight_grad(&x, &dy, &g).unwrap()));
        let tf = time(&|| drop(x.conv2d(&w, &a).unwrap()));
        let tx = time(&|| drop(GpuTensor::conv2d_input_grad(&dy, &w, &g).unwrap()));
        let rate = |t: f64| flops / t / 1e12;
        println!(
            "{name:<16} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.3} {:>8.3} {:>8.3}",
            rate(f64_),
            rate(f128),
            fw.map_or(0.0, rate),
            rate(x64),
            rate(x128),
            xw.map_or(0.0, rate),
            rate(w64),
            rate(w128),
            ww.map_or(0.0, rate),
            tf * 1e3,
            tx * 1e3,
            tw * 1e3
        );
    }
}

/// `conv2d_weight_and_bias_grad` on both of its paths (the ones column
/// where it fits; a separate sum where it would cost a tile column of a
/// large product) against the forced one-pass variant.
#[test]
fn weight_and_bias_grad_paths_agree() {
    let Some(gpu) = shared_gpu() else { return };
    // 32 input channels x 3 x 3 = 288 taps (fits); 64 x 3 x 3 = 576 with
    // 16 x 32 x 12 x 12 outputs (a multiple of 64, and the column's 2^26+
    // multiply-adds: separate sum).
    for (input, weight) in [
        ([4, 32, 12, 12], [16, 32, 3, 3]),
        ([32, 64, 14, 14], [256, 64, 3, 3]),
    ] {
        let g = conv::conv2d(
            "test",
            &input,
            &weight,
            &args([1, 1], [[0, 0], [0, 0]], [1, 1], 1),
        )
        .unwrap();
        let numel = |s: [usize; 4]| s.iter().product::<usize>();
        let x = GpuTensor::from_vec(&gpu, data(numel(input), 5), &input).unwrap();
        let dy =
            GpuTensor::from_vec(&gpu, data(numel(g.output_shape()), 6), &g.output_shape()).unwrap();
        let (w, b) = GpuTensor::conv2d_weight_and_bias_grad(&x, &dy, &g).unwrap();
        let (w1, b1) = GpuTensor::conv2d_weight_and_bias_grad_variant(&x, &dy, &g, 0, 0).unwrap();
        let close = |a: &GpuTensor, b: &GpuTensor, what: &str| {
            let (a, b) = (
                a.to_vec_blocking::<f32>().unwrap(),
                b.to_vec_blocking::<f32>().unwrap(),
            );
            let want: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
            let err = rel_norm_err(&a, &want);
            assert!(err < TOL, "{what} {input:?}: {err:e}");
        };
        assert_eq!(w.shape(), &weight);
        assert_eq!(b.shape(), &[weight[0]]);
        close(&w, &w1, "weight grad");
        close(&b, &b1, "bias grad");
    }
}

/// Weight-gradient time by split count and tile at the MNIST net's shapes
/// (not a correctness test). Run with `cargo test --release -p wgrad-gpu
/// --test it -- --ignored --nocapture conv::bench_conv_weight_grad_splits`;
/// prints microseconds (weight and bias gradient, as `Conv2d` runs it).
#[test]
#[ignore = "benchmark"]
fn bench_conv_weight_grad_splits() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    let d = Conv2dArgs::default();
    let cases: &[(&str, [usize; 4], [usize; 4])] = &[
        ("mnist 1->32 b128", [128, 1, 28, 28], [32, 1, 3, 3]),
        ("mnist 32->64 b128", [128, 32, 26, 26], [64, 32, 3, 3]),
    ];
    let splits = [0, 8, 16, 32, 64, 128, 256, 512];
    for &(name, xs, ws) in cases {
        let g = conv::conv2d("bench", &xs, &ws, &d).unwrap();
        let numel = |s: [usize; 4]| s.iter().product::<usize>();
        let x = GpuTensor::from_vec(&gpu, data(numel(xs), 1), &xs).unwrap();
        let dy =
            GpuTensor::from_vec(&gpu, data(numel(g.output_shape()), 3), &g.output_shape()).unwrap();
        for tile in [64, 128] {
            let mut line = format!("{name:<18} tile {tile:>3}:");
            for &s in &splits {
                let run = || {
                    drop(
                        GpuTensor::conv2d_weight_and_bias_grad_variant(&x, &dy, &g, s, tile)
                            .unwrap(),
                    )
                };
                run();
                gpu.synchronize().unwrap();
                let iters = 50;
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    run();
                }
                gpu.synchronize().unwrap();
                let us = start.elapsed().as_secs_f64() / f64::from(iters) * 1e6;
                line += &format!("  s{s}={us:.1}");
            }
            println!("{line}");
        }
    }
}
