//! `matmul` / `matmul_t` on the GPU against the CPU reference.
//!
//! Tolerance: inputs are uniform in [-1, 1]; the GPU sums K products in a
//! different order (and with fma, and split into chunks for split-K) than
//! the CPU's GEMM, so elementwise results agree to a few ulps of the partial
//! sums: `1e-4` relative error (`|gpu - cpu| / max(1, |cpu|)`) for K <= 80,
//! and `1e-5` in relative Frobenius norm for the large cases.
//!
//! Each kernel variant (64 x 64 or 128 x 128 output tiles, K split or not)
//! is exercised through the hidden `matmul_t_variant`, which forces one.

use wgrad_test_support::{assert_close, shared_gpu};

use crate::bits::f32_bits;

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
    assert_close(
        &got.to_vec_blocking::<f32>().unwrap(),
        &want.to_vec::<f32>().unwrap(),
        TOL,
        what,
    );
}

/// Relative Frobenius-norm error of `got` against `want`.
pub(crate) fn rel_norm_err(got: &GpuTensor, want: &CpuTensor) -> f64 {
    assert_eq!(got.shape(), want.shape());
    let got = got.to_vec_blocking::<f32>().unwrap();
    let want = want.to_vec::<f32>().unwrap();
    let diff: f64 = got
        .iter()
        .zip(&want)
        .map(|(&g, &w)| f64::from(g - w).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|&w| f64::from(w).powi(2)).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
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
        let Some(gpu) = shared_gpu() else { return Ok(()) };
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
        let Some(gpu) = shared_gpu() else { return Ok(()) };
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
        let Some(gpu) = shared_gpu() else { return Ok(()) };
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Every variant on 2-D products with sizes crossing the 128 (and 64)
    /// tile edges and the 8 / 16 K steps, plain and transposed.
    #[test]
    fn forced_variants_2d_match_cpu(
        m in 0usize..=270,
        n in 0usize..=270,
        k in 0usize..=80,
        trans_a: bool,
        trans_b: bool,
        kernel in prop::sample::select(vec!["32", "64", "64lean", "128x64", "128", "thin"]),
        splits in 1usize..=4,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (ca, ga) = pair(&gpu, &dims_2d(m, k, trans_a), seed);
        let (cb, gb) = pair(&gpu, &dims_2d(k, n, trans_b), seed + 1);
        let want = ca.matmul_t(&cb, trans_a, trans_b).unwrap();
        let got = ga.matmul_t_variant(&gb, trans_a, trans_b, kernel, splits).unwrap();
        check(
            &got,
            &want,
            &format!("[{m}x{k}]@[{k}x{n}] ta={trans_a} tb={trans_b} kernel={kernel} splits={splits}"),
        );
    }

    /// The skinny kernel forced on products with a short side (rows or
    /// columns, at most 16) and any K, plain and transposed (both of its
    /// load orders), against the CPU in relative norm.
    #[test]
    fn forced_skinny_matches_cpu(
        short in 1usize..=16,
        long in 0usize..=300,
        k in 0usize..=300,
        short_rows: bool,
        trans_a: bool,
        trans_b: bool,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (m, n) = if short_rows { (short, long) } else { (long, short) };
        let (ca, ga) = pair(&gpu, &dims_2d(m, k, trans_a), seed);
        let (cb, gb) = pair(&gpu, &dims_2d(k, n, trans_b), seed + 1);
        let want = ca.matmul_t(&cb, trans_a, trans_b).unwrap();
        let got = ga.matmul_t_variant(&gb, trans_a, trans_b, "skinny", 0).unwrap();
        let err = rel_norm_err(&got, &want);
        prop_assert!(err < 1e-5, "[{m}x{k}]@[{k}x{n}] ta={trans_a} tb={trans_b}: {err:e}");
    }

    /// Every variant on broadcast batches `[b1, 1, m, k] @ [b2, k, n]`.
    #[test]
    fn forced_variants_batched_match_cpu(
        b1 in 1usize..=2,
        b2 in 1usize..=3,
        m in 1usize..=140,
        n in 1usize..=140,
        k in 1usize..=40,
        trans_a: bool,
        trans_b: bool,
        kernel in prop::sample::select(vec!["32", "64", "64lean", "128x64", "128", "thin"]),
        splits in 1usize..=3,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let mut sa = vec![b1, 1];
        sa.extend(dims_2d(m, k, trans_a));
        let mut sb = vec![b2];
        sb.extend(dims_2d(k, n, trans_b));
        let (ca, ga) = pair(&gpu, &sa, seed);
        let (cb, gb) = pair(&gpu, &sb, seed + 7);
        let want = ca.matmul_t(&cb, trans_a, trans_b).unwrap();
        let got = ga.matmul_t_variant(&gb, trans_a, trans_b, kernel, splits).unwrap();
        check(
            &got,
            &want,
            &format!("{sa:?}@{sb:?} ta={trans_a} tb={trans_b} kernel={kernel} splits={splits}"),
        );
    }

    /// The 128 kernel on narrowed windows, permuted batches and stride-0
    /// expanded batches (no operand dim is unit-stride in some of them).
    #[test]
    fn big_tile_strided_views_match_cpu(
        m in 1usize..=150,
        n in 1usize..=150,
        k in 1usize..=40,
        start in 0usize..5,
        splits in 1usize..=2,
        seed in 0u64..1000,
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (ca, ga) = pair(&gpu, &[m + 5, k + 5], seed);
        let ca = ca.narrow(0, start, m).unwrap().narrow(1, 5 - start, k).unwrap();
        let ga = ga.narrow(0, start, m).unwrap().narrow(1, 5 - start, k).unwrap();
        let (cb, gb) = pair(&gpu, &[n, 2, k], seed + 3);
        let cb = cb.permute(&[1, 2, 0]).unwrap();
        let gb = gb.permute(&[1, 2, 0]).unwrap();
        let want = ca.matmul(&cb).unwrap();
        let got = ga.matmul_t_variant(&gb, false, false, "128", splits).unwrap();
        check(&got, &want, &format!("window[{m}x{k}] @ permuted[2,{k},{n}] splits={splits}"));
        // A with no unit-stride dim: every other element of a [m, k, 2] tensor.
        let (cw, gw) = pair(&gpu, &[m, k, 2], seed + 5);
        let cw = cw.narrow(2, 1, 1).unwrap().squeeze(2).unwrap();
        let gw = gw.narrow(2, 1, 1).unwrap().squeeze(2).unwrap();
        let cwe = cw.unsqueeze(0).unwrap().expand(&[2, m, k]).unwrap();
        let gwe = gw.unsqueeze(0).unwrap().expand(&[2, m, k]).unwrap();
        let want = cwe.matmul(&cb).unwrap();
        let got = gwe.matmul_t_variant(&gb, false, false, "128", splits).unwrap();
        check(&got, &want, &format!("strided[2,{m},{k}] @ permuted[2,{k},{n}] splits={splits}"));
    }
}

/// Odd sizes past several 128 tiles, for every variant and transpose, and
/// products whose automatic plan picks the 128 kernel and/or splits K.
#[test]
fn odd_sizes_every_variant_relative_norm() {
    let Some(gpu) = shared_gpu() else { return };
    let (m, k, n) = (263, 301, 131);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (ca, ga) = pair(&gpu, &dims_2d(m, k, ta), 41);
        let (cb, gb) = pair(&gpu, &dims_2d(k, n, tb), 42);
        let want = ca.matmul_t(&cb, ta, tb).unwrap();
        let variants = [
            ("auto", 0),
            ("32", 1),
            ("32", 3),
            ("64", 1),
            ("64", 3),
            ("64lean", 1),
            ("64lean", 3),
            ("128x64", 1),
            ("128x64", 3),
            ("128", 1),
            ("128", 2),
            ("128", 7),
        ];
        for (kernel, splits) in variants {
            let got = ga.matmul_t_variant(&gb, ta, tb, kernel, splits).unwrap();
            let rel = rel_norm_err(&got, &want);
            assert!(
                rel < 1e-5,
                "ta={ta} tb={tb} kernel={kernel} splits={splits}: relative error {rel}"
            );
        }
    }
    // Automatic plans (see `plans_by_shape` in src/ops/matmul/plan.rs): 64
    // tiles over a batch; 32 tiles split 4 ways (long K, few tiles); 32
    // tiles with A broadcast over a batch.
    let cases: &[(&[usize], &[usize], bool, bool)] = &[
        (&[2, 1024, 512], &[640, 512], false, true),
        (&[130, 1000], &[140, 1000], false, true),
        (&[3, 260, 256], &[256, 250], false, false),
    ];
    for (i, &(sa, sb, ta, tb)) in cases.iter().enumerate() {
        let (ca, ga) = pair(&gpu, sa, 50 + i as u64);
        let (cb, gb) = pair(&gpu, sb, 60 + i as u64);
        let want = ca.matmul_t(&cb, ta, tb).unwrap();
        let got = ga.matmul_t(&gb, ta, tb).unwrap();
        let rel = rel_norm_err(&got, &want);
        assert!(rel < 1e-5, "{sa:?} @ {sb:?}: relative error {rel}");
    }
}

#[test]
fn bad_variant_is_an_error() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::zeros(&gpu, &[2, 2], DType::F32).unwrap();
    let msg = a
        .matmul_t_variant(&a, false, false, "48", 1)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("kernel") && msg.contains("\"48\""), "{msg}");
}

#[test]
fn one_d_operands_are_promoted_and_squeezed() {
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
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
    let got = ga.matmul_t_variant(&gb, true, true, "128", 1).unwrap();
    check(
        &got,
        &want,
        "rank-6 alternating broadcast, transposed, 128 tiles",
    );
}

#[test]
fn large_product_relative_norm() {
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
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
    let Some(gpu) = shared_gpu() else { return };
    let v = GpuTensor::zeros(&gpu, &[3], DType::F32).unwrap();
    let m = GpuTensor::zeros(&gpu, &[3, 3], DType::F32).unwrap();
    let msg = v.matmul_t(&m, true, false).unwrap_err().to_string();
    assert!(msg.contains("matmul_t") && msg.contains("[3]"), "{msg}");
    assert!(m.matmul_t(&v, false, true).is_err());
    assert_eq!(v.matmul_t(&m, false, true).unwrap().shape(), &[3]);
}

/// Throughput of each kernel variant on the current adapter (not a
/// correctness test). Run with
/// `cargo test --release -p wgrad-gpu --test it -- --ignored --nocapture parity_matmul::bench_matmul_throughput`.
/// `WGRAD_BENCH_MAX_DIM=<d>` skips shapes with a dim above `d` (for slow
/// adapters), `WGRAD_BENCH_ONLY=<s>` runs only the cases whose name contains
/// `s`. Prints GFLOP/s per shape for: `auto` (the shape-based choice),
/// `k64` / `k128` (the 64 x 64 / 128 x
/// 128 kernels, no split), `k64+` / `k128+` (that kernel with the automatic
/// K split), and `k64/sN`, `k128/sN` (N splits).
#[test]
#[ignore = "benchmark"]
fn bench_matmul_throughput() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    let max_dim: usize = std::env::var("WGRAD_BENCH_MAX_DIM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let only = std::env::var("WGRAD_BENCH_ONLY").unwrap_or_default();
    // (name, A shape, B shape, trans_a, trans_b)
    type Case = (&'static str, &'static [usize], &'static [usize], bool, bool);
    let cases: &[Case] = &[
        // First: brings the GPU's clock up before the small cases.
        ("warm 4096^3", &[4096, 4096], &[4096, 4096], false, false),
        ("4096^3", &[4096, 4096], &[4096, 4096], false, false),
        ("4096^3 B^T", &[4096, 4096], &[4096, 4096], false, true),
        ("4096^3 A^T", &[4096, 4096], &[4096, 4096], true, false),
        ("2048^3", &[2048, 2048], &[2048, 2048], false, false),
        ("1536^3", &[1536, 1536], &[1536, 1536], false, false),
        ("2048x1024", &[2048, 1024], &[1024, 1024], false, false),
        ("1024^3", &[1024, 1024], &[1024, 1024], false, false),
        ("512^3", &[512, 512], &[512, 512], false, false),
        ("W2 fwd x@W^T", &[1024, 784], &[1024, 784], false, true),
        ("1024 x@W^T", &[1024, 1024], &[1024, 1024], false, true),
        ("W2 dW g^T@x", &[1024, 1024], &[1024, 784], true, false),
        ("W2 dx g@W", &[1024, 1024], &[1024, 784], false, false),
        ("W1 fwd x@W^T", &[128, 784], &[256, 784], false, true),
        ("W1 dW g^T@x", &[128, 256], &[128, 784], true, false),
        ("W1 dx g@W", &[128, 256], &[256, 784], false, false),
        ("W1 fc2 fwd", &[128, 256], &[256, 256], false, true),
        ("W1 fc2 dx", &[128, 256], &[256, 256], false, false),
        ("W1 fc2 dW", &[128, 256], &[128, 256], true, false),
        ("cls fwd", &[128, 256], &[10, 256], false, true),
        ("cls dW", &[128, 10], &[128, 256], true, false),
        ("batched 32x", &[32, 256, 64], &[32, 64, 256], false, false),
        // The MNIST CNN's fc1 (9216 -> 128, batch 128).
        ("cnn fc1 fwd", &[128, 9216], &[128, 9216], false, true),
        ("cnn fc1 dW", &[128, 128], &[128, 9216], true, false),
        ("cnn fc1 dx", &[128, 128], &[128, 9216], false, false),
        // Its classifier (128 -> 10) and W2's (1024 -> 10): skinny products.
        ("tiny fc2 fwd", &[128, 128], &[10, 128], false, true),
        ("tiny fc2 dx", &[128, 10], &[10, 128], false, false),
        ("tiny fc2 dW", &[128, 10], &[128, 128], true, false),
        ("tiny W2 fc3 fwd", &[1024, 1024], &[10, 1024], false, true),
        ("tiny W2 fc3 dx", &[1024, 10], &[10, 1024], false, false),
        ("tiny W2 fc3 dW", &[1024, 10], &[1024, 1024], true, false),
        // The skinny kernel's K range: its longest K, and past it.
        ("tiny K4096 fwd", &[1024, 4096], &[10, 4096], false, true),
        ("tiny K4096 dW", &[4096, 10], &[4096, 1024], true, false),
        ("tiny K8192 dW", &[8192, 10], &[8192, 1024], true, false),
        ("tiny 8192 fwd", &[8192, 384], &[10, 384], false, true),
        // One 64 x 64 tile over K = 16 .. 4096 (unsplit): the time per K step.
        ("lat K16", &[64, 16], &[16, 64], false, false),
        ("lat K64", &[64, 64], &[64, 64], false, false),
        ("lat K256", &[64, 256], &[256, 64], false, false),
        ("lat K1024", &[64, 1024], &[1024, 64], false, false),
        ("lat K4096", &[64, 4096], &[4096, 64], false, false),
        ("lat T K1024", &[64, 1024], &[64, 1024], false, true),
        ("lat 8x K1024", &[512, 1024], &[1024, 64], false, false),
        // Around the lean 64 x 64 core's rule (more tiles than 2 per SM).
        (
            "lean 272t K1024",
            &[1088, 1024],
            &[1024, 1024],
            false,
            false,
        ),
        ("lean 320t K256", &[1280, 256], &[256, 1024], false, false),
        ("lean 384t K512", &[1536, 512], &[512, 1024], false, false),
        ("lean 384t K128 T", &[128, 1536], &[128, 1024], true, false),
        ("lean 240t K512", &[960, 512], &[512, 1024], false, false),
        // T2's products (8192 tokens, C 384, MLP 1536, vocab 1024).
        ("T2 qkv fwd", &[8192, 384], &[1152, 384], false, true),
        ("T2 proj fwd", &[8192, 384], &[384, 384], false, true),
        ("T2 fc fwd", &[8192, 384], &[1536, 384], false, true),
        ("T2 fc2 fwd", &[8192, 1536], &[384, 1536], false, true),
        ("T2 head fwd", &[8192, 384], &[1024, 384], false, true),
        ("T2 qkv dx", &[8192, 1152], &[1152, 384], false, false),
        ("T2 fc dx", &[8192, 1536], &[1536, 384], false, false),
        ("T2 fc2 dx", &[8192, 384], &[384, 1536], false, false),
        ("T2 qkv dW", &[8192, 1152], &[8192, 384], true, false),
        ("T2 proj dW", &[8192, 384], &[8192, 384], true, false),
        ("T2 fc dW", &[8192, 1536], &[8192, 384], true, false),
        ("T2 fc2 dW", &[8192, 384], &[8192, 1536], true, false),
        // The Winograd convolutions' 16 products (batch 32, 3x3): forward
        // and input gradient U @ V, weight gradient dM @ V^T.
        (
            "wino 64ch 56 fwd",
            &[16, 64, 64],
            &[16, 64, 25088],
            false,
            false,
        ),
        (
            "wino 128ch 28 fwd",
            &[16, 128, 128],
            &[16, 128, 6272],
            false,
            false,
        ),
        (
            "wino 256ch 14 fwd",
            &[16, 256, 256],
            &[16, 256, 1568],
            false,
            false,
        ),
        (
            "wino 128ch 28 dW",
            &[16, 128, 6272],
            &[16, 128, 6272],
            false,
            true,
        ),
    ];
    let variants: &[(&str, &str, usize)] = &[
        ("auto", "auto", 0),
        ("k32", "32", 1),
        ("k32+", "32", 0),
        ("k32/s2", "32", 2),
        ("k32/s4", "32", 4),
        ("k32/s8", "32", 8),
        ("k32/s16", "32", 16),
        ("k64", "64", 1),
        ("k64+", "64", 0),
        ("k64/s2", "64", 2),
        ("k64/s4", "64", 4),
        ("k64/s8", "64", 8),
        ("k64/s16", "64", 16),
        ("lean", "64lean", 1),
        ("lean+", "64lean", 0),
        ("lean/s2", "64lean", 2),
        ("lean/s4", "64lean", 4),
        ("k128x64", "128x64", 1),
        ("k128x64+", "128x64", 0),
        ("k128x64/s2", "128x64", 2),
        ("k128x64/s4", "128x64", 4),
        ("k128", "128", 1),
        ("k128+", "128", 0),
        ("k128/s2", "128", 2),
        ("k128/s4", "128", 4),
        ("k128/s8", "128", 8),
        ("k128/s16", "128", 16),
        ("skinny", "skinny", 0),
        ("thin", "thin", 0),
    ];
    let mut header = format!("{:<14} {:>16}", "case", "[M,N,K]");
    for (name, _, _) in variants {
        header += &format!(" {name:>8}");
    }
    println!("{header}   (GFLOP/s)");
    for &(name, sa, sb, ta, tb) in cases {
        // WGRAD_BENCH_ONLY: substrings of case names, `|`-separated.
        let wanted = only.split('|').any(|o| name.contains(o));
        if sa.iter().chain(sb).any(|&d| d > max_dim) || !wanted {
            continue;
        }
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
        let flops = 2.0 * (batch * m * n * k) as f64;
        let mut line = format!("{name:<14} {:>16}", format!("[{m},{n},{k}]"));
        for &(_, kernel, splits) in variants {
            if (kernel == "skinny" && m.min(n) > 16) || (kernel == "thin" && k > 64) {
                line += &format!(" {:>8}", "-");
                continue;
            }
            let run = || drop(a.matmul_t_variant(&b, ta, tb, kernel, splits).unwrap());
            // Warm up (pipeline creation, pool buffers), then size the timed
            // batch to about 0.2 s.
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
            let secs = start.elapsed().as_secs_f64() / f64::from(iters);
            line += &format!(" {:>8.1}", flops / secs / 1e9);
        }
        println!("{line}");
    }
}

/// `kernel` (forced) and the automatic plan on 2-D products of each
/// `(m, k, n)` in every transpose, against the CPU in relative norm.
fn kernel_and_auto_match_cpu(
    gpu: &GpuDevice,
    kernel: &str,
    shapes: &[(usize, usize, usize)],
    seed: u64,
) {
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (ca, ga) = pair(gpu, &dims_2d(m, k, ta), seed + 2 * i as u64);
            let (cb, gb) = pair(gpu, &dims_2d(k, n, tb), seed + 2 * i as u64 + 1);
            let want = ca.matmul_t(&cb, ta, tb).unwrap();
            for kernel in [kernel, "auto"] {
                let got = ga.matmul_t_variant(&gb, ta, tb, kernel, 0).unwrap();
                let rel = rel_norm_err(&got, &want);
                assert!(
                    rel < 1e-5,
                    "[{m}, {k}] x [{k}, {n}] trans ({ta}, {tb}) {kernel}: relative error {rel}"
                );
            }
        }
    }
}

/// `linear_relu` of an `[rows, in]` input and `[out, in]` weight against
/// the CPU's product, bias and ReLU.
fn linear_relu_matches_cpu(gpu: &GpuDevice, rows: usize, inputs: usize, outputs: usize, seed: u64) {
    let (cx, gx) = pair(gpu, &[rows, inputs], seed);
    let (cw, gw) = pair(gpu, &[outputs, inputs], seed + 1);
    let (cbias, gbias) = pair(gpu, &[outputs], seed + 2);
    let want = cx
        .matmul_t(&cw, false, true)
        .unwrap()
        .binary(&cbias, wgrad_core::BinaryOp::Add)
        .unwrap()
        .unary(wgrad_core::UnaryOp::Relu)
        .unwrap();
    let got = gx.linear_relu(&gw, Some(&gbias)).unwrap();
    check(
        &got,
        &want,
        &format!("linear_relu [{rows}, {inputs}] -> {outputs}"),
    );
}

/// The skinny kernel (a short output side of at most 16, whole per
/// workgroup, K shared by its threads): forced and by the automatic plan,
/// short rows or short columns, every transpose (so both of its load
/// orders), a batch with a broadcast operand, `linear`'s bias with ReLU,
/// and the error where neither side is short.
#[test]
fn skinny_products_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    // (m, k, n): short N, short M, both short, one column, K not a
    // multiple of the lanes, the longest short side.
    let shapes = [
        (263, 301, 10),
        (10, 517, 263),
        (7, 1000, 3),
        (300, 64, 1),
        (1, 4096, 70),
        (16, 129, 200),
    ];
    kernel_and_auto_match_cpu(&gpu, "skinny", &shapes, 500);
    // A batch, B broadcast over it (a classifier head over [batch, tokens]).
    let (ca, ga) = pair(&gpu, &[3, 70, 200], 540);
    let (cb, gb) = pair(&gpu, &[12, 200], 541);
    let want = ca.matmul_t(&cb, false, true).unwrap();
    let got = ga.matmul_t_variant(&gb, false, true, "skinny", 0).unwrap();
    assert!(rel_norm_err(&got, &want) < 1e-5, "batched skinny");
    // 10 outputs: bias and ReLU in the skinny store.
    linear_relu_matches_cpu(&gpu, 50, 300, 10, 542);
    // Neither side short: a clear error.
    let (_, g) = pair(&gpu, &[20, 64], 545);
    let msg = g
        .matmul_t_variant(&g, false, true, "skinny", 0)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("skinny") && msg.contains("[20, 20]"), "{msg}");
}

/// The thin kernel (a short K, outputs computed straight from the
/// operands): forced and by the automatic plan, every transpose, K from 1
/// to 16 and past it, edge tiles, a batch with a broadcast operand, and
/// `linear` + ReLU with 10 inputs.
#[test]
fn thin_products_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let shapes = [
        (263, 10, 131),
        (1, 1, 1),
        (70, 16, 300),
        (33, 3, 129),
        (40, 37, 50),
    ];
    kernel_and_auto_match_cpu(&gpu, "thin", &shapes, 600);
    let (ca, ga) = pair(&gpu, &[3, 70, 10], 640);
    let (cb, gb) = pair(&gpu, &[10, 90], 641);
    let want = ca.matmul(&cb).unwrap();
    check(&ga.matmul(&gb).unwrap(), &want, "batched thin");
    linear_relu_matches_cpu(&gpu, 50, 10, 40, 642);
}

/// `matmul_t_with_row_sums` (B's virtual ones column: `linear`'s weight and
/// bias gradients in one product) against the CPU's product and sum, on
/// the shapes that reach each path: both tile kernels, split K (long K,
/// few tiles), edge tiles, a single row or column, K = 0, and a large
/// product whose N fills its tiles (computed as a product and a sum).
#[test]
fn products_with_row_sums_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    // (m, k, n, trans_a, trans_b)
    let cases = [
        (256, 128, 784, true, false), // W1's first weight gradient
        (10, 128, 256, true, false),
        (384, 2048, 1152, true, false), // N a multiple of 64, long K: product + sum
        (100, 4096, 130, true, false),  // long K, few tiles: split
        (300, 70, 500, false, true),
        (1, 33, 1, false, false),
        (65, 17, 3, true, true),
        (640, 64, 640, false, false), // 128 x 128 tiles
        (5, 0, 7, true, false),
        (10, 1024, 1024, true, false), // W2's last weight gradient: skinny, ones column long
        (16, 300, 5, false, false),    // skinny, ones column among the short side
        (1024, 1024, 128, true, false), // product + row sums alone (skinny)
        (300, 10, 200, true, false),   // a short K: thin, with the ones column
        (128, 128, 9216, true, false), // the CNN's fc1 gradient: the lean kernel (290 tiles)
    ];
    for (i, &(m, k, n, ta, tb)) in cases.iter().enumerate() {
        let what = format!("m {m} k {k} n {n} trans ({ta}, {tb})");
        let (ca, ga) = pair(&gpu, &dims_2d(m, k, ta), 40 + i as u64);
        let (cb, gb) = pair(&gpu, &dims_2d(k, n, tb), 80 + i as u64);
        let (product, sums) = ga.matmul_t_with_row_sums(&gb, ta, tb).unwrap();
        let want = ca.matmul_t(&cb, ta, tb).unwrap();
        let want_sums = ca.sum(&[if ta { 0 } else { 1 }], false).unwrap();
        assert_eq!(product.shape(), &[m, n], "{what}");
        assert_eq!(sums.shape(), &[m], "{what}");
        assert!(product.is_contiguous() && sums.is_contiguous(), "{what}");
        if k == 0 {
            assert!(
                product
                    .to_vec_blocking::<f32>()
                    .unwrap()
                    .iter()
                    .all(|&v| v == 0.0)
            );
            assert!(
                sums.to_vec_blocking::<f32>()
                    .unwrap()
                    .iter()
                    .all(|&v| v == 0.0)
            );
            continue;
        }
        let err = rel_norm_err(&product, &want);
        assert!(err < 1e-5, "product, {what}: {err:e}");
        let err = rel_norm_err(&sums, &want_sums);
        assert!(err < 1e-5, "row sums, {what}: {err:e}");
    }
    // Batched operands are refused.
    let (_, g3) = pair(&gpu, &[2, 3, 4], 1);
    assert!(g3.matmul_t_with_row_sums(&g3, false, true).is_err());
}

/// The products of a fused Linear + ReLU's backward, with ReLU's gradient
/// folded into A's loads (`matmul_t_relu_grad`,
/// `matmul_t_with_row_sums_relu_grad`), bit for bit against masking first
/// (`unary_backward(out, Relu)`) and then the plain products; NaN in the
/// gradient and the output included, and a mask whose layout differs from
/// the gradient's (taken the explicit way).
#[test]
fn relu_masked_products_match_masking_first() {
    let Some(gpu) = shared_gpu() else { return };
    use wgrad_core::UnaryOp;
    for (i, &(rows, out, other)) in [(128, 256, 784), (37, 10, 65), (8, 300, 2048)]
        .iter()
        .enumerate()
    {
        let what = format!("g [{rows}, {out}], other {other}");
        let (_, g) = pair(&gpu, &[rows, out], 300 + i as u64);
        let (_, pre) = pair(&gpu, &[rows, out], 310 + i as u64);
        let mut y = pre
            .unary(UnaryOp::Relu)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        y[3] = f32::NAN; // a NaN output passes the gradient
        let mut gv = g.to_vec_blocking::<f32>().unwrap();
        gv[5] = f32::NAN; // a NaN gradient is blocked where the output is 0
        let y = GpuTensor::from_vec(&gpu, y, &[rows, out]).unwrap();
        let g = GpuTensor::from_vec(&gpu, gv, &[rows, out]).unwrap();
        let masked = g.unary_backward(&y, UnaryOp::Relu).unwrap();
        // dx = g' @ W (W [out, other] here) and dW, db = g'^T x.
        let (_, w) = pair(&gpu, &[out, other], 320 + i as u64);
        let (_, x) = pair(&gpu, &[rows, other], 330 + i as u64);
        let want = masked.matmul_t(&w, false, false).unwrap();
        let got = g.matmul_t_relu_grad(&y, &w, false, false).unwrap();
        assert_eq!(f32_bits(&got), f32_bits(&want), "dx, {what}");
        let (want_w, want_b) = masked.matmul_t_with_row_sums(&x, true, false).unwrap();
        let (got_w, got_b) = g
            .matmul_t_with_row_sums_relu_grad(&y, &x, true, false)
            .unwrap();
        assert_eq!(f32_bits(&got_w), f32_bits(&want_w), "dW, {what}");
        assert_eq!(f32_bits(&got_b), f32_bits(&want_b), "db, {what}");
        // A mask laid out differently (transposed storage): masked first.
        let y_t = y
            .transpose(0, 1)
            .unwrap()
            .contiguous()
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let got = g.matmul_t_relu_grad(&y_t, &w, false, false).unwrap();
        assert_eq!(
            f32_bits(&got),
            f32_bits(&want),
            "dx with a strided mask, {what}"
        );
    }
}

/// Input gradients masked by the ReLU before the layer in the product's
/// store (`matmul_t_masked_by_relu`), bit for bit against the product and
/// then ReLU's gradient, for shapes that take each kernel: the tiled
/// ones, split K (the mask in the sum pass), a short K (`matmul_thin`), a
/// short output side (`matmul_skinny`), a batch, and a mask that starts
/// inside its buffer. Masks that do not fit (strided, another shape) are
/// refused without a dispatch.
#[test]
fn relu_masked_outputs_match_masking_after() {
    let Some(gpu) = shared_gpu() else { return };
    use wgrad_core::UnaryOp;
    let shapes: [(&[usize], usize, usize); 8] = [
        (&[128], 256, 784),
        (&[1280], 256, 1024), // 320 tiles: the lean 64 x 64 kernel
        (&[1024], 10, 1024),
        (&[1024], 1024, 10),
        (&[16], 4096, 64),
        (&[37], 65, 33),
        (&[2, 5], 7, 6),
        (&[3], 1, 300),
    ];
    for (i, &(lead, k, n)) in shapes.iter().enumerate() {
        let what = format!("g {lead:?} x {k}, W [{k}, {n}]");
        let g_shape: Vec<usize> = lead.iter().copied().chain([k]).collect();
        let out_shape: Vec<usize> = lead.iter().copied().chain([n]).collect();
        let (_, g) = pair(&gpu, &g_shape, 400 + i as u64);
        let (_, w) = pair(&gpu, &[k, n], 410 + i as u64);
        let numel: usize = out_shape.iter().product();
        // The mask sits after 3 elements of its buffer (an offset).
        let (_, pre) = pair(&gpu, &[numel + 3], 420 + i as u64);
        let mut y = pre
            .unary(UnaryOp::Relu)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        y[4] = f32::NAN; // a NaN output passes the gradient
        y[5] = 0.0; // a tie blocks it
        let y = GpuTensor::from_vec(&gpu, y, &[numel + 3]).unwrap();
        let y = y
            .narrow(0, 3, numel)
            .unwrap()
            .reshape(&out_shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
            .unwrap();
        let want = g
            .matmul_t(&w, false, false)
            .unwrap()
            .unary_backward(&y, UnaryOp::Relu)
            .unwrap();
        let got = g
            .matmul_t_masked_by_relu(&w, false, false, &y)
            .unwrap()
            .expect("a contiguous mask of the output's shape folds");
        assert_eq!(f32_bits(&got), f32_bits(&want), "{what}");
        // The weight transposed in storage (x @ W^T, as `linear` reads it).
        let w_t = w.transpose(0, 1).unwrap().contiguous().unwrap();
        let want = g
            .matmul_t(&w_t, false, true)
            .unwrap()
            .unary_backward(&y, UnaryOp::Relu)
            .unwrap();
        let got = g
            .matmul_t_masked_by_relu(&w_t, false, true, &y)
            .unwrap()
            .expect("folds");
        assert_eq!(f32_bits(&got), f32_bits(&want), "{what}, W^T");
    }
    let (_, g) = pair(&gpu, &[6, 4], 430);
    let (_, w) = pair(&gpu, &[4, 6], 431);
    let (_, y) = pair(&gpu, &[6, 6], 432);
    let strided = y.transpose(0, 1).unwrap();
    assert!(
        g.matmul_t_masked_by_relu(&w, false, false, &strided)
            .unwrap()
            .is_none()
    );
    let (_, other_shape) = pair(&gpu, &[6, 5], 433);
    assert!(
        g.matmul_t_masked_by_relu(&w, false, false, &other_shape)
            .unwrap()
            .is_none()
    );
}

/// Few outputs over many K splits: the splits are added by one workgroup
/// per output (`sum_splits_tree`), with the bias of `linear` after the
/// sum; against the CPU, and the tree's order is the same on every run.
#[test]
fn many_splits_of_few_outputs_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    for (m, n, k, splits) in [(8, 8, 4096, 64), (3, 5, 2000, 40), (40, 30, 1024, 32)] {
        let (ca, ga) = pair(&gpu, &[m, k], 70);
        let (cb, gb) = pair(&gpu, &[k, n], 71);
        let want = ca.matmul(&cb).unwrap();
        let got = ga
            .matmul_t_variant(&gb, false, false, "32", splits)
            .unwrap();
        let rel = rel_norm_err(&got, &want);
        assert!(
            rel < 1e-5,
            "[{m}, {k}] x [{k}, {n}], {splits} splits: {rel}"
        );
        let again = ga
            .matmul_t_variant(&gb, false, false, "32", splits)
            .unwrap();
        assert_eq!(
            got.to_vec_blocking::<f32>().unwrap(),
            again.to_vec_blocking::<f32>().unwrap(),
            "deterministic"
        );
        // linear: x [m, k] @ w [n, k]^T + bias [n].
        let (cw, gw) = pair(&gpu, &[n, k], 72);
        let (cbias, gbias) = pair(&gpu, &[n], 73);
        let want = ca.linear(&cw, Some(&cbias)).unwrap();
        let got = ga.linear_variant(&gw, Some(&gbias), "32", splits).unwrap();
        let rel = rel_norm_err(&got, &want);
        assert!(
            rel < 1e-5,
            "linear [{m}, {k}] x [{n}, {k}], {splits} splits: {rel}"
        );
    }
}
