//! `matmul` / `matmul_t` on the GPU against the CPU reference.
//!
//! Tolerance: inputs are uniform in [-1, 1]; the GPU sums K products in a
//! different order (and with fma) than the CPU's GEMM, so elementwise
//! results agree to a few ulps of the partial sums: `1e-4` relative error
//! (`|gpu - cpu| / max(1, |cpu|)`) for K <= 70, and `1e-5` in relative
//! Frobenius norm for the large case.

mod common;

use proptest::prelude::*;
use wgrad_core::{DType, Error};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

const TOL: f32 = 1e-4;

/// The same random f32 data on both devices.
fn pair(gpu: &GpuDevice, shape: &[usize], seed: u64) -> (CpuTensor, GpuTensor) {
    let cpu = CpuTensor::rand(shape, -1.0, 1.0, seed).unwrap();
    let data = cpu.to_vec::<f32>().unwrap();
    (cpu, GpuTensor::from_vec(gpu, data, shape).unwrap())
}

/// Asserts that the GPU result has the CPU result's shape and values.
fn check(got: &GpuTensor, want: &CpuTensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert!(got.is_contiguous(), "{what}: output must be contiguous");
    common::assert_close(
        &got.to_vec_blocking::<f32>().unwrap(),
        &want.to_vec::<f32>().unwrap(),
        TOL,
        what,
    );
}

fn dims_2d(rows: usize, cols: usize, trans: bool) -> Vec<usize> {
    if trans {
        vec![cols, rows]
    } else {
        vec![rows, cols]
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Plain and transposed 2-D products with sizes crossing the 64 / 16 tile edges.
    #[test]
    fn matmul_t_2d_matches_cpu(
        m in 0usize..=70,
        n in 0usize..=70,
        k in 0usize..=70,
        trans_a: bool,
        trans_b: bool,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = common::gpu() else { return Ok(()) };
        let (ca, ga) = pair(&gpu, &dims_2d(m, k, trans_a), seed);
        let (cb, gb) = pair(&gpu, &dims_2d(k, n, trans_b), seed + 1);
        let want = ca.matmul_t(&cb, trans_a, trans_b).unwrap();
        let got = ga.matmul_t(&gb, trans_a, trans_b).unwrap();
        check(&got, &want, &format!("[{m}x{k}]@[{k}x{n}] ta={trans_a} tb={trans_b}"));
    }

    /// Batch broadcasting `[b1, 1, m, k] @ [b2, k, n]`, with transposes.
    #[test]
    fn batched_broadcast_matches_cpu(
        b1 in 1usize..=2,
        b2 in 1usize..=3,
        m in 0usize..=20,
        n in 0usize..=20,
        k in 0usize..=20,
        trans_a: bool,
        trans_b: bool,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = common::gpu() else { return Ok(()) };
        let mut sa = vec![b1, 1];
        sa.extend(dims_2d(m, k, trans_a));
        let mut sb = vec![b2];
        sb.extend(dims_2d(k, n, trans_b));
        let (ca, ga) = pair(&gpu, &sa, seed);
        let (cb, gb) = pair(&gpu, &sb, seed + 7);
        let want = ca.matmul_t(&cb, trans_a, trans_b).unwrap();
        let got = ga.matmul_t(&gb, trans_a, trans_b).unwrap();
        check(&got, &want, &format!("{sa:?}@{sb:?} ta={trans_a} tb={trans_b}"));
    }

    /// Non-contiguous operands: narrowed windows of larger tensors, permuted
    /// batch dims and stride-0 expanded batches.
    #[test]
    fn strided_views_match_cpu(
        m in 1usize..=40,
        n in 1usize..=40,
        k in 1usize..=40,
        start in 0usize..5,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = common::gpu() else { return Ok(()) };
        // A: a [m, k] window (offset, row stride k + 5) of a [m + 5, k + 5] tensor.
        let (ca, ga) = pair(&gpu, &[m + 5, k + 5], seed);
        let ca = ca.narrow(0, start, m).unwrap().narrow(1, 5 - start, k).unwrap();
        let ga = ga.narrow(0, start, m).unwrap().narrow(1, 5 - start, k).unwrap();
        // B: a [3, k, n] batch stored as [n, 3, k], permuted into place.
        let (cb, gb) = pair(&gpu, &[n, 3, k], seed + 3);
        let cb = cb.permute(&[1, 2, 0]).unwrap();
        let gb = gb.permute(&[1, 2, 0]).unwrap();
        let want = ca.matmul(&cb).unwrap();
        let got = ga.matmul(&gb).unwrap();
        check(&got, &want, &format!("window[{m}x{k}] @ permuted[3,{k},{n}]"));
        // A expanded over a batch of 2 (stride 0) against the permuted batch.
        let cae = ca.unsqueeze(0).unwrap().expand(&[2, 3, m, k]).unwrap();
        let gae = ga.unsqueeze(0).unwrap().expand(&[2, 3, m, k]).unwrap();
        let want = cae.matmul(&cb).unwrap();
        let got = gae.matmul(&gb).unwrap();
        check(&got, &want, &format!("expanded[2,3,{m},{k}] @ permuted[3,{k},{n}]"));
    }
}

#[test]
fn one_d_operands_are_promoted_and_squeezed() {
    let Some(gpu) = common::gpu() else { return };
    let cases: &[(&[usize], &[usize])] = &[
        (&[5], &[5, 3]),    // vector @ matrix -> [3]
        (&[4, 5], &[5]),    // matrix @ vector -> [4]
        (&[5], &[5]),       // dot -> []
        (&[2, 4, 5], &[5]), // batched matrix @ vector -> [2, 4]
        (&[5], &[2, 5, 3]), // vector @ batched matrix -> [2, 3]
        (&[0], &[0]),       // empty dot -> 0
        (&[0], &[0, 3]),    // K = 0 -> zeros [3]
        (&[70], &[70, 67]), // crosses tile edges
    ];
    for (i, (sa, sb)) in cases.iter().enumerate() {
        let (ca, ga) = pair(&gpu, sa, 10 + i as u64);
        let (cb, gb) = pair(&gpu, sb, 100 + i as u64);
        let want = ca.matmul(&cb).unwrap();
        let got = ga.matmul(&gb).unwrap();
        check(&got, &want, &format!("{sa:?} @ {sb:?}"));
    }
    // The dot product's result is a 0-D tensor.
    let (_, ga) = pair(&gpu, &[5], 1);
    assert_eq!(ga.matmul(&ga).unwrap().shape(), &[] as &[usize]);
}

#[test]
fn empty_and_zero_k_products() {
    let Some(gpu) = common::gpu() else { return };
    let cases: &[(&[usize], &[usize])] = &[
        (&[0, 4], &[4, 3]),       // M = 0 -> [0, 3]
        (&[3, 4], &[4, 0]),       // N = 0 -> [3, 0]
        (&[3, 0], &[0, 5]),       // K = 0 -> zeros [3, 5]
        (&[0, 3, 2], &[2, 4]),    // empty batch -> [0, 3, 4]
        (&[2, 3, 0], &[1, 0, 4]), // K = 0 with batch broadcast -> zeros [2, 3, 4]
    ];
    for (sa, sb) in cases {
        let (ca, ga) = pair(&gpu, sa, 5);
        let (cb, gb) = pair(&gpu, sb, 6);
        let want = ca.matmul(&cb).unwrap();
        let got = ga.matmul(&gb).unwrap();
        check(&got, &want, &format!("{sa:?} @ {sb:?}"));
    }
    // K = 0 really writes zeros into a recycled (dirty) pool buffer.
    let (_, ga) = pair(&gpu, &[64, 0], 1);
    let (_, gb) = pair(&gpu, &[0, 64], 2);
    let got = ga.matmul(&gb).unwrap().to_vec_blocking::<f32>().unwrap();
    assert!(got.iter().all(|&v| v == 0.0));
}

/// Four batch dims (rank 6) with alternating broadcast that cannot be merged.
#[test]
fn rank_six_alternating_broadcast() {
    let Some(gpu) = common::gpu() else { return };
    let (ca, ga) = pair(&gpu, &[2, 1, 3, 1, 5, 7], 21);
    let (cb, gb) = pair(&gpu, &[1, 2, 1, 2, 7, 4], 22);
    let want = ca.matmul(&cb).unwrap();
    let got = ga.matmul(&gb).unwrap();
    assert_eq!(got.shape(), &[2, 2, 3, 2, 5, 4]);
    check(&got, &want, "rank-6 alternating broadcast");
    // Same with both operands transposed in their last two dims.
    let (ca, ga) = pair(&gpu, &[2, 1, 3, 1, 7, 5], 23);
    let (cb, gb) = pair(&gpu, &[1, 2, 1, 2, 4, 7], 24);
    let want = ca.matmul_t(&cb, true, true).unwrap();
    let got = ga.matmul_t(&gb, true, true).unwrap();
    check(&got, &want, "rank-6 alternating broadcast, transposed");
}

#[test]
fn large_product_relative_norm() {
    let Some(gpu) = common::gpu() else { return };
    for (ta, tb) in [(false, false), (true, true)] {
        let (ca, ga) = pair(&gpu, &dims_2d(257, 300, ta), 31);
        let (cb, gb) = pair(&gpu, &dims_2d(300, 129, tb), 32);
        let want = ca.matmul_t(&cb, ta, tb).unwrap().to_vec::<f32>().unwrap();
        let got = ga.matmul_t(&gb, ta, tb).unwrap();
        assert_eq!(got.shape(), &[257, 129]);
        let got = got.to_vec_blocking::<f32>().unwrap();
        let diff: f64 = got
            .iter()
            .zip(&want)
            .map(|(&g, &w)| f64::from(g - w).powi(2))
            .sum();
        let norm: f64 = want.iter().map(|&w| f64::from(w).powi(2)).sum();
        let rel = (diff / norm).sqrt();
        assert!(rel < 1e-5, "ta={ta} tb={tb}: relative error {rel}");
    }
}

#[test]
fn inner_dim_mismatch_names_both_shapes() {
    let Some(gpu) = common::gpu() else { return };
    let a = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[4, 5], DType::F32).unwrap();
    let err = a.matmul(&b).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("matmul") && msg.contains("[2, 3]") && msg.contains("[4, 5]"),
        "{msg}"
    );
    // Batch dims that do not broadcast name the full shapes too.
    let a = GpuTensor::zeros(&gpu, &[2, 3, 4], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[3, 4, 5], DType::F32).unwrap();
    let msg = a.matmul(&b).unwrap_err().to_string();
    assert!(
        msg.contains("[2, 3, 4]") && msg.contains("[3, 4, 5]"),
        "{msg}"
    );
    // matmul_t checks (and names) the transposed shapes.
    let a = GpuTensor::zeros(&gpu, &[3, 2], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[3, 4], DType::F32).unwrap();
    let msg = a.matmul_t(&b, false, true).unwrap_err().to_string();
    assert!(
        msg.contains("matmul_t") && msg.contains("[3, 2]") && msg.contains("[4, 3]"),
        "{msg}"
    );
    assert_eq!(a.matmul_t(&b, true, false).unwrap().shape(), &[2, 4]);
}

#[test]
fn non_f32_operand_is_a_dtype_mismatch() {
    let Some(gpu) = common::gpu() else { return };
    let f = GpuTensor::zeros(&gpu, &[2, 2], DType::F32).unwrap();
    let i = GpuTensor::zeros(&gpu, &[2, 2], DType::I32).unwrap();
    for err in [f.matmul(&i).unwrap_err(), i.matmul(&f).unwrap_err()] {
        assert!(
            matches!(
                err,
                Error::DTypeMismatch {
                    op: "matmul",
                    expected: DType::F32,
                    got: DType::I32
                }
            ),
            "{err:?}"
        );
    }
}

#[test]
fn zero_d_operand_is_an_error() {
    let Some(gpu) = common::gpu() else { return };
    let s = GpuTensor::from_vec(&gpu, vec![2.0f32], &[]).unwrap();
    let v = GpuTensor::zeros(&gpu, &[3], DType::F32).unwrap();
    for err in [s.matmul(&v).unwrap_err(), v.matmul(&s).unwrap_err()] {
        let msg = err.to_string();
        assert!(
            matches!(err, Error::InvalidArgument { op: "matmul", .. }) && msg.contains("[]"),
            "{msg}"
        );
    }
}

#[test]
fn transposing_a_vector_is_an_error() {
    let Some(gpu) = common::gpu() else { return };
    let v = GpuTensor::zeros(&gpu, &[3], DType::F32).unwrap();
    let m = GpuTensor::zeros(&gpu, &[3, 3], DType::F32).unwrap();
    let msg = v.matmul_t(&m, true, false).unwrap_err().to_string();
    assert!(msg.contains("matmul_t") && msg.contains("[3]"), "{msg}");
    assert!(m.matmul_t(&v, false, true).is_err());
    assert_eq!(v.matmul_t(&m, false, true).unwrap().shape(), &[3]);
}

/// Throughput on the current adapter (not a correctness test). Run with
/// `cargo test --release -p wgrad-gpu --test parity_matmul -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn bench_matmul_throughput() {
    let Some(gpu) = common::gpu() else { return };
    println!("adapter: {}", gpu.label());
    let cases: &[(&[usize], &[usize], bool, bool)] = &[
        (&[4096, 4096], &[4096, 4096], false, false),
        (&[4096, 4096], &[4096, 4096], false, true),
        (&[4096, 4096], &[4096, 4096], true, false),
        (&[2048, 2048], &[2048, 2048], false, false),
        (&[32, 256, 64], &[32, 64, 256], false, false),
    ];
    for &(sa, sb, ta, tb) in cases {
        let (_, a) = pair(&gpu, sa, 1);
        let (_, b) = pair(&gpu, sb, 2);
        let c = a.matmul_t(&b, ta, tb).unwrap();
        let (m, n) = (c.shape()[c.rank() - 2], c.shape()[c.rank() - 1]);
        let k = if ta {
            sa[sa.len() - 2]
        } else {
            sa[sa.len() - 1]
        };
        let batch: usize = c.shape()[..c.rank() - 2].iter().product();
        gpu.synchronize().unwrap();
        let iters = 10;
        let start = std::time::Instant::now();
        for _ in 0..iters {
            drop(a.matmul_t(&b, ta, tb).unwrap());
        }
        gpu.synchronize().unwrap();
        let secs = start.elapsed().as_secs_f64() / f64::from(iters);
        let flops = 2.0 * (batch * m * n * k) as f64;
        println!(
            "{sa:?} @ {sb:?} ta={ta} tb={tb}: {:.3} ms, {:.0} GFLOP/s",
            secs * 1e3,
            flops / secs / 1e9
        );
    }
}
