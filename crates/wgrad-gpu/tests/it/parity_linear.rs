//! `linear` (`F.linear`: `x @ weight^T + bias`, the bias added in the
//! matmul kernels' store or in the split-K sum) on the GPU against the CPU
//! reference, and against the GPU's own `matmul_t` then `add`, which it
//! must equal bit for bit: both add the bias once to the same f32 sums.
//!
//! Tolerance against the CPU as in `parity_matmul`: `1e-4` relative error
//! for K <= 80, `1e-5` in relative Frobenius norm for large K.

use wgrad_test_support::{assert_close, shared_gpu};

use proptest::prelude::*;
use wgrad_core::{DType, Error};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

use crate::bits::f32_bits;
use crate::parity_matmul::rel_norm_err;

const TOL: f32 = 1e-4;

/// The same random f32 data on both devices.
fn pair(gpu: &GpuDevice, shape: &[usize], seed: u64) -> (CpuTensor, GpuTensor) {
    let cpu = CpuTensor::rand(shape, -1.0, 1.0, seed).unwrap();
    let data = cpu.to_vec::<f32>().unwrap();
    (cpu, GpuTensor::from_vec(gpu, data, shape).unwrap())
}

/// A `[rows, cols]` operand, stored transposed (`[cols, rows]`, viewed
/// back through swapped strides) when `trans`.
fn matrix(
    gpu: &GpuDevice,
    rows: usize,
    cols: usize,
    trans: bool,
    seed: u64,
) -> (CpuTensor, GpuTensor) {
    if !trans {
        return pair(gpu, &[rows, cols], seed);
    }
    let (c, g) = pair(gpu, &[cols, rows], seed);
    (c.transpose(0, 1).unwrap(), g.transpose(0, 1).unwrap())
}

fn check(got: &GpuTensor, want: &CpuTensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert!(got.is_contiguous(), "{what}: output must be contiguous");
    assert_close(
        &got.to_vec_blocking::<f32>().unwrap(),
        &want.to_vec::<f32>().unwrap(),
        TOL,
        what,
    );
}

/// Asserts `got` and `want` hold the same f32 bits.
fn check_bits(got: &GpuTensor, want: &GpuTensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (f32_bits(got), f32_bits(want));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!(
            "{what}[{i}]: {} != {} (matmul_t then add)",
            f32::from_bits(g[i]),
            f32::from_bits(w[i])
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// 1-D, 2-D and 3-D inputs, with and without bias, plain and transposed
    /// (non-contiguous) inputs and weights, sizes crossing the tile edges.
    #[test]
    fn linear_matches_cpu(
        lead in prop::sample::select(vec![vec![], vec![0], vec![1], vec![37], vec![70], vec![3, 23], vec![2, 0]]),
        k in 0usize..=70,
        n in 0usize..=70,
        trans_x: bool,
        trans_w: bool,
        with_bias: bool,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (cx, gx) = match lead.as_slice() {
            [] => pair(&gpu, &[k], seed),
            &[rows] => matrix(&gpu, rows, k, trans_x, seed),
            // [b, t, k] stored as [t, b, k]: rows that no view merges.
            &[b, t] if trans_x => {
                let (c, g) = pair(&gpu, &[t, b, k], seed);
                (c.transpose(0, 1).unwrap(), g.transpose(0, 1).unwrap())
            }
            _ => {
                let mut shape = lead.clone();
                shape.push(k);
                pair(&gpu, &shape, seed)
            }
        };
        let (cw, gw) = matrix(&gpu, n, k, trans_w, seed + 1);
        let (cb, gb) = pair(&gpu, &[n], seed + 2);
        let (cb, gb) = if with_bias { (Some(&cb), Some(&gb)) } else { (None, None) };
        let want = cx.linear(&cw, cb).unwrap();
        let got = gx.linear(&gw, gb).unwrap();
        let mut out = lead.clone();
        out.push(n);
        prop_assert_eq!(want.shape(), &out[..]);
        check(&got, &want, &format!("x{:?} W[{n}, {k}] tx={trans_x} tw={trans_w} bias={with_bias}", gx.shape()));
    }

    /// Every kernel and split count: `linear` equals `matmul_t` then `add`
    /// bit for bit (the bias goes in the store, or in the split sum).
    #[test]
    fn forced_variants_equal_matmul_then_add(
        m in 1usize..=140,
        n in 1usize..=140,
        k in 1usize..=80,
        trans_x: bool,
        kernel in prop::sample::select(vec!["32", "64", "64lean", "128x64", "128"]),
        splits in 1usize..=4,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (_, gx) = matrix(&gpu, m, k, trans_x, seed);
        let (_, gw) = pair(&gpu, &[n, k], seed + 1);
        let (_, gb) = pair(&gpu, &[n], seed + 2);
        let got = gx.linear_variant(&gw, Some(&gb), kernel, splits).unwrap();
        let want = gx
            .matmul_t_variant(&gw, false, true, kernel, splits)
            .unwrap()
            .add(&gb)
            .unwrap();
        check_bits(&got, &want, &format!("[{m}x{k}] W[{n}, {k}] kernel={kernel} splits={splits}"));
    }
}

/// Split-K shapes (long K, few output tiles: the automatic plan splits),
/// batched inputs and the 128 kernel, against the CPU in relative norm and
/// against matmul_t + add bit for bit.
#[test]
fn split_k_and_large_shapes() {
    let Some(gpu) = shared_gpu() else { return };
    let cases: &[(&[usize], usize)] = &[
        (&[8, 2048], 16),       // split many ways
        (&[2, 5, 1000], 140),   // rows folded from a batch, split
        (&[130, 1000], 140),    // split 7 ways (see plans_by_shape)
        (&[1, 784], 256),       // one row
        (&[2, 1024, 512], 640), // large: no split
    ];
    for (i, &(sx, n)) in cases.iter().enumerate() {
        let k = sx[sx.len() - 1];
        let (cx, gx) = pair(&gpu, sx, 70 + i as u64);
        let (cw, gw) = pair(&gpu, &[n, k], 80 + i as u64);
        let (cb, gb) = pair(&gpu, &[n], 90 + i as u64);
        let want = cx.linear(&cw, Some(&cb)).unwrap();
        let got = gx.linear(&gw, Some(&gb)).unwrap();
        let rel = rel_norm_err(&got, &want);
        assert!(rel < 1e-5, "{sx:?} x W[{n}, {k}]: relative error {rel}");
        let rows: usize = sx[..sx.len() - 1].iter().product();
        let folded = gx.reshape(&[rows as isize, k as isize]).unwrap();
        let plain = folded.matmul_t(&gw, false, true).unwrap().add(&gb).unwrap();
        let plain = plain
            .reshape(&want.shape().iter().map(|&d| d as isize).collect::<Vec<_>>())
            .unwrap();
        check_bits(&got, &plain, &format!("{sx:?} x W[{n}, {k}]"));
    }
}

/// Empty batches, K = 0 (the output is the bias, or zeros), a bias of one
/// value (`[1]` and 0-d, broadcast) and a strided bias view.
#[test]
fn edge_shapes_and_bias_views() {
    let Some(gpu) = shared_gpu() else { return };
    for (sx, sw) in [
        (&[0, 5][..], &[3, 5][..]),
        (&[2, 0, 5], &[3, 5]),
        (&[4, 0], &[3, 0]),
        (&[0], &[6, 0]),
        (&[4, 5], &[0, 5]),
    ] {
        let (cx, gx) = pair(&gpu, sx, 3);
        let (cw, gw) = pair(&gpu, sw, 4);
        let (cb, gb) = pair(&gpu, &[sw[0]], 5);
        for bias in [false, true] {
            let (cb, gb) = if bias {
                (Some(&cb), Some(&gb))
            } else {
                (None, None)
            };
            let want = cx.linear(&cw, cb).unwrap();
            check(
                &gx.linear(&gw, gb).unwrap(),
                &want,
                &format!("{sx:?} x W{sw:?} bias={bias}"),
            );
        }
    }
    // K = 0 writes the bias (or zeros) into a recycled (dirty) pool buffer.
    let (_, dirty) = pair(&gpu, &[64, 64], 9);
    drop(dirty);
    let x = GpuTensor::zeros(&gpu, &[64, 0], DType::F32).unwrap();
    let w = GpuTensor::zeros(&gpu, &[64, 0], DType::F32).unwrap();
    let (cb, gb) = pair(&gpu, &[64], 10);
    let y = x
        .linear(&w, Some(&gb))
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let row = cb.to_vec::<f32>().unwrap();
    assert!(y.chunks(64).all(|r| r == row.as_slice()));
    let y = x
        .linear(&w, None)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    assert!(y.iter().all(|&v| v == 0.0));

    let (cx, gx) = pair(&gpu, &[7, 9], 11);
    let (cw, gw) = pair(&gpu, &[5, 9], 12);
    // One value broadcast over the outputs, as [1] and as a 0-d tensor,
    // on the plain and the split path.
    let (cb, gb) = pair(&gpu, &[1], 13);
    let (cs, gs) = (cb.reshape(&[]).unwrap(), gb.reshape(&[]).unwrap());
    for (c, g, what) in [(&cb, &gb, "[1]"), (&cs, &gs, "0-d")] {
        let want = cx.linear(&cw, Some(c)).unwrap();
        check(&gx.linear(&gw, Some(g)).unwrap(), &want, what);
        check(
            &gx.linear_variant(&gw, Some(g), "64", 2).unwrap(),
            &want,
            what,
        );
    }
    // Every third element of a longer vector, from an offset.
    let (cl, gl) = pair(&gpu, &[20], 14);
    let cb = cl.narrow_step(0, 2, 5, 3).unwrap();
    let gb = gl.narrow_step(0, 2, 5, 3).unwrap();
    let want = cx.linear(&cw, Some(&cb)).unwrap();
    for (kernel, splits) in [
        ("32", 1),
        ("32", 2),
        ("64", 1),
        ("64lean", 1),
        ("128x64", 1),
        ("128", 1),
        ("64", 3),
        ("64lean", 3),
    ] {
        let got = gx.linear_variant(&gw, Some(&gb), kernel, splits).unwrap();
        check(
            &got,
            &want,
            &format!("strided bias, kernel {kernel} splits {splits}"),
        );
    }
}

/// The CPU's beta = 1 GEMM (the bias in the output first, the sums added
/// onto it): bit-identical to its `matmul_t` then `add` while K fits one of
/// matrixmultiply's K blocks (256; also when split over threads), equal
/// to f32 rounding beyond.
#[test]
fn cpu_linear_matches_matmul_then_add() {
    for (m, k, n) in [(5, 7, 3), (33, 256, 65), (300, 200, 100), (64, 2000, 40)] {
        let x = CpuTensor::rand(&[m, k], -1.0, 1.0, 1).unwrap();
        let w = CpuTensor::rand(&[n, k], -1.0, 1.0, 2).unwrap();
        let b = CpuTensor::rand(&[n], -1.0, 1.0, 3).unwrap();
        let got = x.linear(&w, Some(&b)).unwrap().to_vec::<f32>().unwrap();
        let want = x.matmul_t(&w, false, true).unwrap().add(&b).unwrap();
        let want = want.to_vec::<f32>().unwrap();
        let what = format!("[{m}x{k}] W[{n}, {k}]");
        if k <= 256 {
            let same = got
                .iter()
                .zip(&want)
                .all(|(g, w)| g.to_bits() == w.to_bits());
            assert!(same, "{what}: not bit-identical");
        } else {
            assert_close(&got, &want, 1e-5, &what);
        }
    }
}

#[test]
fn bad_arguments_are_errors_naming_the_shapes() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let w = GpuTensor::zeros(&gpu, &[4, 5], DType::F32).unwrap();
    let msg = x.linear(&w, None).unwrap_err().to_string();
    assert!(
        msg.starts_with("linear:") && msg.contains("[2, 3]") && msg.contains("[4, 5]"),
        "{msg}"
    );
    let w = GpuTensor::zeros(&gpu, &[4, 3], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[5], DType::F32).unwrap();
    let msg = x.linear(&w, Some(&b)).unwrap_err().to_string();
    assert!(
        msg.contains("bias must have shape [4]") && msg.contains("[5]"),
        "{msg}"
    );
    let wi = GpuTensor::zeros(&gpu, &[4, 3], DType::I32).unwrap();
    assert!(matches!(
        x.linear(&wi, None),
        Err(Error::DTypeMismatch { op: "linear", .. })
    ));
    let msg = x.linear_variant(&w, None, "48", 1).unwrap_err().to_string();
    assert!(msg.contains("\"48\""), "{msg}");
    // The CPU names the same shapes.
    let cx = CpuTensor::full(&[2, 3], 0.0, DType::F32).unwrap();
    let cw = CpuTensor::full(&[4, 5], 0.0, DType::F32).unwrap();
    let cpu_msg = cx.linear(&cw, None).unwrap_err().to_string();
    let w = GpuTensor::zeros(&gpu, &[4, 5], DType::F32).unwrap();
    assert_eq!(cpu_msg, x.linear(&w, None).unwrap_err().to_string());
}

/// Times `linear` (bias in the product's store) against `matmul_t` then
/// `add` (a second pass over the output), per call in microseconds, at
/// precision "highest" and "medium" (the tensor cores, where the device
/// has them). `cargo test --release -p wgrad-gpu --test it bench_linear
/// -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn bench_linear() {
    use wgrad_core::precision::set_float32_matmul_precision;
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    // (name, x shape, out features)
    let cases: &[(&str, &[usize], usize)] = &[
        ("W1 fc1", &[128, 784], 256),
        ("W2 fc1", &[1024, 784], 1024),
        ("T2 qkv", &[32, 256, 384], 1152),
        ("T2 mlp", &[32, 256, 384], 1536),
        ("4096^3", &[4096, 4096], 4096),
    ];
    let time = |run: &dyn Fn()| {
        run();
        gpu.synchronize().unwrap();
        let start = std::time::Instant::now();
        run();
        gpu.synchronize().unwrap();
        let iters = ((0.2 / start.elapsed().as_secs_f64()) as u32).clamp(3, 200);
        let start = std::time::Instant::now();
        for _ in 0..iters {
            run();
        }
        gpu.synchronize().unwrap();
        start.elapsed().as_secs_f64() / f64::from(iters) * 1e6
    };
    println!(
        "{:<8} {:>9} {:>16} {:>16}",
        "case", "precision", "linear us", "matmul+add us"
    );
    for precision in ["highest", "medium"] {
        set_float32_matmul_precision(precision).unwrap();
        for &(name, sx, n) in cases {
            let k = sx[sx.len() - 1];
            let (_, x) = pair(&gpu, sx, 1);
            let (_, w) = pair(&gpu, &[n, k], 2);
            let (_, b) = pair(&gpu, &[n], 3);
            // Alternated and the best of three each, so that neither side
            // pays for the GPU's clocks ramping up.
            let (mut fused, mut split) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..3 {
                fused = fused.min(time(&|| drop(x.linear(&w, Some(&b)).unwrap())));
                split = split.min(time(&|| {
                    drop(x.matmul_t(&w, false, true).unwrap().add(&b).unwrap())
                }));
            }
            println!("{name:<8} {precision:>9} {fused:>16.1} {split:>16.1}");
        }
    }
    set_float32_matmul_precision("highest").unwrap();
}

/// `linear_relu` (the ReLU in the product's store, or in the split-K sum)
/// is bit for bit `linear` then `unary(Relu)`, on each kernel, split
/// counts, with and without bias, with NaN inputs and K = 0.
#[test]
fn linear_relu_is_linear_then_relu_bit_for_bit() {
    let Some(gpu) = shared_gpu() else { return };
    use wgrad_core::UnaryOp;
    for (i, &(rows, k, n)) in [(37, 70, 130), (128, 784, 256), (8, 2048, 16), (3, 0, 5)]
        .iter()
        .enumerate()
    {
        let (_, gx) = pair(&gpu, &[rows, k], 200 + i as u64);
        let (_, gw) = pair(&gpu, &[n, k], 210 + i as u64);
        let (_, gb) = pair(&gpu, &[n], 220 + i as u64);
        // A NaN input row (NaN passes through ReLU, as PyTorch's).
        let gx = if k > 0 {
            let mut v = gx.to_vec_blocking::<f32>().unwrap();
            v[0] = f32::NAN;
            GpuTensor::from_vec(&gpu, v, &[rows, k]).unwrap()
        } else {
            gx
        };
        for bias in [Some(&gb), None] {
            let want = gx.linear(&gw, bias).unwrap().unary(UnaryOp::Relu).unwrap();
            let what = format!("[{rows}, {k}] x W[{n}, {k}], bias {}", bias.is_some());
            check_bits(&gx.linear_relu(&gw, bias).unwrap(), &want, &what);
            // ("32", 64): the splits of few outputs summed by one
            // workgroup per output (sum_splits_tree) where K allows.
            for (kernel, splits) in [
                ("32", 1),
                ("32", 3),
                ("32", 64),
                ("64", 1),
                ("64", 3),
                ("64lean", 1),
                ("64lean", 3),
                ("128x64", 2),
                ("128", 1),
                ("128", 2),
            ] {
                let want = gx
                    .linear_variant(&gw, bias, kernel, splits)
                    .unwrap()
                    .unary(UnaryOp::Relu)
                    .unwrap();
                let got = gx.linear_relu_variant(&gw, bias, kernel, splits).unwrap();
                check_bits(
                    &got,
                    &want,
                    &format!("{what}, kernel {kernel}, {splits} splits"),
                );
            }
        }
    }
}
