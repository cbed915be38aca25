//! Fused cross-entropy (forward and backward) on the GPU vs the CPU
//! reference: random sizes (one class up to rows longer than a workgroup),
//! strided logits/targets/gradients, label smoothing, ignored targets,
//! extreme and -inf logits; device faults for out-of-range targets; errors.

use wgrad_test_support::{assert_close, own_gpu, shared_gpu};

use proptest::prelude::*;
use wgrad_core::{DType, Error, random};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

/// How the logits `[N, C]` are laid out.
#[derive(Clone, Copy, Debug)]
enum View {
    Dense,
    /// Stored as `[C, N]` and transposed (column stride 1 is gone).
    Transposed,
    /// Rows and columns narrowed out of a larger buffer (offset, padded rows).
    Narrowed,
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Dense),
        Just(View::Transposed),
        Just(View::Narrowed)
    ]
}

/// Uniform values in `[lo, hi)` from a seed (reproducible, no host RNG state).
fn values(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let keys = random::seed_keys(seed);
    (0..n as u32)
        .map(|i| random::uniform(keys, i, lo, hi))
        .collect()
}

/// The same logical `[n, c]` logits on both devices, laid out as `view`.
fn logits_pair(
    gpu: &GpuDevice,
    n: usize,
    c: usize,
    view: View,
    scale: f32,
    seed: u64,
) -> (CpuTensor, GpuTensor) {
    match view {
        View::Dense => {
            let v = values(n * c, -scale, scale, seed);
            (
                CpuTensor::from_vec(v.clone(), &[n, c]).unwrap(),
                GpuTensor::from_vec(gpu, v, &[n, c]).unwrap(),
            )
        }
        View::Transposed => {
            let v = values(n * c, -scale, scale, seed);
            let cpu = CpuTensor::from_vec(v.clone(), &[c, n])
                .unwrap()
                .transpose(0, 1)
                .unwrap();
            let gpu = GpuTensor::from_vec(gpu, v, &[c, n])
                .unwrap()
                .transpose(0, 1)
                .unwrap();
            (cpu, gpu)
        }
        View::Narrowed => {
            let (rn, rc) = (n + 2, c + 3);
            let v = values(rn * rc, -scale, scale, seed);
            let cut = |t: CpuTensor| t.narrow(0, 1, n).unwrap().narrow(1, 2, c).unwrap();
            let cpu = cut(CpuTensor::from_vec(v.clone(), &[rn, rc]).unwrap());
            let g = GpuTensor::from_vec(gpu, v, &[rn, rc])
                .unwrap()
                .narrow(0, 1, n)
                .unwrap()
                .narrow(1, 2, c)
                .unwrap();
            (cpu, g)
        }
    }
}

/// Targets in `0..c`, every `ignore_every`-th one set to `ignore`. With
/// `strided`, the targets are every other element of a longer vector.
fn targets_pair(
    gpu: &GpuDevice,
    n: usize,
    c: usize,
    ignore: i32,
    ignore_every: usize,
    strided: bool,
    seed: u64,
) -> (CpuTensor, GpuTensor) {
    let keys = random::seed_keys(seed);
    let t: Vec<i32> = (0..n)
        .map(|i| {
            if ignore_every > 0 && i.is_multiple_of(ignore_every) {
                ignore
            } else {
                (random::uniform(keys, i as u32, 0.0, c as f32) as i32).min(c as i32 - 1)
            }
        })
        .collect();
    if !strided {
        return (
            CpuTensor::from_vec(t.clone(), &[n]).unwrap(),
            GpuTensor::from_vec(gpu, t, &[n]).unwrap(),
        );
    }
    let padded: Vec<i32> = t.iter().flat_map(|&x| [x, 12345]).collect();
    let cpu = CpuTensor::from_vec(padded.clone(), &[n, 2])
        .unwrap()
        .narrow(1, 0, 1)
        .unwrap()
        .squeeze(1)
        .unwrap();
    let g = GpuTensor::from_vec(gpu, padded, &[n, 2])
        .unwrap()
        .narrow(1, 0, 1)
        .unwrap()
        .squeeze(1)
        .unwrap();
    (cpu, g)
}

fn gpu_f32(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

fn cpu_f32(t: &CpuTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn cross_entropy_forward_backward_match_cpu(
        n in 0usize..40,
        c in prop_oneof![1usize..12, 250usize..700],
        view in view_strategy(),
        strided_targets in any::<bool>(),
        smoothing in prop_oneof![Just(0.0f32), Just(0.1f32), 0.0f32..1.0],
        ignore in prop_oneof![Just(-100i32), Just(0i32)],
        ignore_every in 0usize..4,
        scale in prop_oneof![Just(3.0f32), Just(60.0f32)],
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (cx, gx) = logits_pair(&gpu, n, c, view, scale, seed);
        let (ct, gt) = targets_pair(&gpu, n, c, ignore, ignore_every, strided_targets, seed ^ 1);

        let want = cpu_f32(&cx.cross_entropy(&ct, smoothing, ignore).unwrap());
        let got = gpu_f32(&gx.cross_entropy(&gt, smoothing, ignore).unwrap());
        // Sums of up to ~700 exps in a different order, then a log.
        assert_close(&got, &want, 2e-5, "cross_entropy");

        // Upstream gradient: a strided view (every other element) half the time.
        let g = values(2 * n, -2.0, 2.0, seed ^ 2);
        let (cg, gg) = if seed.is_multiple_of(2) {
            (CpuTensor::from_vec(g[..n].to_vec(), &[n]).unwrap(), GpuTensor::from_vec(&gpu, g[..n].to_vec(), &[n]).unwrap())
        } else {
            let pick = |t: CpuTensor| t.narrow(1, 1, 1).unwrap().squeeze(1).unwrap();
            let gg = GpuTensor::from_vec(&gpu, g.clone(), &[n, 2]).unwrap().narrow(1, 1, 1).unwrap().squeeze(1).unwrap();
            (pick(CpuTensor::from_vec(g, &[n, 2]).unwrap()), gg)
        };
        let want = cpu_f32(&cx.cross_entropy_backward(&ct, &cg, smoothing, ignore).unwrap());
        let got = gx.cross_entropy_backward(&gt, &gg, smoothing, ignore).unwrap();
        prop_assert_eq!(got.shape(), &[n, c]);
        prop_assert!(got.is_contiguous());
        assert_close(&gpu_f32(&got), &want, 1e-5, "cross_entropy_backward");
    }
}

#[test]
fn cross_entropy_known_values() {
    let Some(gpu) = shared_gpu() else { return };
    // log(e^1 + e^2 + e^3) = 3.4076059644; row 1 is row 0 shifted by -2.
    let x = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0, 3.0, 1.0, 0.0, -1.0], &[2, 3]).unwrap();
    let t = GpuTensor::from_vec(&gpu, vec![2i32, 1], &[2]).unwrap();
    assert_close(
        &gpu_f32(&x.cross_entropy(&t, 0.0, -100).unwrap()),
        &[0.40760596, 1.407606],
        1e-6,
        "plain",
    );
    // ls = 0.1: 0.9 * nll + 0.1 / 3 * (sum of -logp = 4.2228179).
    assert_close(
        &gpu_f32(&x.cross_entropy(&t, 0.1, -100).unwrap()),
        &[0.50760596, 1.407606],
        1e-6,
        "smoothed",
    );
    // Ignoring class 1 zeroes row 1 (loss and gradient).
    assert_close(
        &gpu_f32(&x.cross_entropy(&t, 0.1, 1).unwrap()),
        &[0.50760596, 0.0],
        1e-6,
        "ignored",
    );
    let g = GpuTensor::from_vec(&gpu, vec![0.5f32, 0.5], &[2]).unwrap();
    let d = gpu_f32(&x.cross_entropy_backward(&t, &g, 0.0, 1).unwrap());
    assert_close(
        &d,
        &[0.04501529, 0.12236424, -0.16737952, 0.0, 0.0, 0.0],
        1e-6,
        "backward",
    );
}

#[test]
fn cross_entropy_extreme_logits_stay_finite() {
    let Some(gpu) = shared_gpu() else { return };
    // Huge logits would overflow a naive exp; a -inf logit (a masked class)
    // must not turn the loss or its gradient into NaN, with or without smoothing
    // (with smoothing the loss is +inf, as in torch, since logp = -inf there).
    let x = vec![
        1000.0f32,
        -1000.0,
        f32::NEG_INFINITY,
        0.5,
        88.0,
        89.0,
        90.0,
        -5.0,
    ];
    let cx = CpuTensor::from_vec(x.clone(), &[2, 4]).unwrap();
    let gx = GpuTensor::from_vec(&gpu, x, &[2, 4]).unwrap();
    let ct = CpuTensor::from_vec(vec![0i32, 3], &[2]).unwrap();
    let gt = GpuTensor::from_vec(&gpu, vec![0i32, 3], &[2]).unwrap();
    let want = cpu_f32(&cx.cross_entropy(&ct, 0.0, -100).unwrap());
    let got = gpu_f32(&gx.cross_entropy(&gt, 0.0, -100).unwrap());
    assert!(got.iter().all(|v| v.is_finite()), "{got:?}");
    assert_close(&got, &want, 1e-5, "extreme forward");
    let cg = CpuTensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    let gg = GpuTensor::from_vec(&gpu, vec![1.0f32, 1.0], &[2]).unwrap();
    let want = cpu_f32(&cx.cross_entropy_backward(&ct, &cg, 0.3, -100).unwrap());
    let got = gpu_f32(&gx.cross_entropy_backward(&gt, &gg, 0.3, -100).unwrap());
    assert!(got.iter().all(|v| v.is_finite()), "{got:?}");
    assert_close(&got, &want, 1e-5, "extreme backward");
    let smoothed = gpu_f32(&gx.cross_entropy(&gt, 0.3, -100).unwrap());
    assert_eq!(smoothed[0], f32::INFINITY);
    assert!(smoothed[1].is_finite());
}

#[test]
fn cross_entropy_nan_logit_propagates() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::from_vec(&gpu, vec![0.0f32, f32::NAN, 1.0, 2.0], &[2, 2]).unwrap();
    let t = GpuTensor::from_vec(&gpu, vec![0i32, 0], &[2]).unwrap();
    let got = gpu_f32(&x.cross_entropy(&t, 0.0, -100).unwrap());
    assert!(got[0].is_nan() && got[1].is_finite(), "{got:?}");
}

#[test]
fn out_of_range_target_faults_the_next_readback() {
    // A private device: the fault is per device, and tests on the shared
    // one run in parallel.
    let Some(gpu) = own_gpu() else { return };
    let x = GpuTensor::from_vec(&gpu, vec![0.0f32; 6], &[2, 3]).unwrap();
    let g = GpuTensor::from_vec(&gpu, vec![1.0f32; 2], &[2]).unwrap();
    for (bad, backward) in [(3i32, false), (-1, false), (7, true), (-2, true)] {
        let t = GpuTensor::from_vec(&gpu, vec![0i32, bad], &[2]).unwrap();
        let out = if backward {
            x.cross_entropy_backward(&t, &g, 0.0, -100).unwrap()
        } else {
            x.cross_entropy(&t, 0.0, -100).unwrap()
        };
        let err = out.to_vec_blocking::<f32>().unwrap_err();
        match &err {
            Error::IndexOutOfRange { op, index, size } => {
                assert!(op.contains("cross_entropy"), "{err}");
                assert_eq!((*index, *size), (i64::from(bad), 3), "{err}");
            }
            other => panic!("expected IndexOutOfRange, got {other}"),
        }
        // The readback that reported the fault cleared it.
        assert_eq!(
            gpu_f32(
                &x.cross_entropy(
                    &GpuTensor::from_vec(&gpu, vec![0i32, 2], &[2]).unwrap(),
                    0.0,
                    -100
                )
                .unwrap()
            )
            .len(),
            2
        );
    }
    // ignore_index is exempt even when it lies outside 0..C.
    let t = GpuTensor::from_vec(&gpu, vec![-100i32, 1], &[2]).unwrap();
    assert_eq!(gpu_f32(&x.cross_entropy(&t, 0.0, -100).unwrap())[0], 0.0);
    // No classes: a target that is not ignored is out of range.
    let empty = GpuTensor::zeros(&gpu, &[2, 0], DType::F32).unwrap();
    let t = GpuTensor::from_vec(&gpu, vec![-100i32, 0], &[2]).unwrap();
    assert!(matches!(
        empty
            .cross_entropy(&t, 0.0, -100)
            .unwrap()
            .to_vec_blocking::<f32>(),
        Err(Error::IndexOutOfRange {
            index: 0,
            size: 0,
            ..
        })
    ));
}

#[test]
fn cpu_rejects_out_of_range_targets() {
    let x = CpuTensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    let t = CpuTensor::from_vec(vec![0i32, 3], &[2]).unwrap();
    let g = CpuTensor::from_vec(vec![1.0f32; 2], &[2]).unwrap();
    assert!(matches!(
        x.cross_entropy(&t, 0.0, -100),
        Err(Error::IndexOutOfRange {
            index: 3,
            size: 3,
            ..
        })
    ));
    assert!(matches!(
        x.cross_entropy_backward(&t, &g, 0.0, -100),
        Err(Error::IndexOutOfRange {
            index: 3,
            size: 3,
            ..
        })
    ));
    // ... unless it is the ignore_index.
    assert_eq!(
        x.cross_entropy(&t, 0.0, 3)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[1],
        0.0
    );
}

#[test]
fn empty_batches() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::zeros(&gpu, &[0, 5], DType::F32).unwrap();
    let t = GpuTensor::zeros(&gpu, &[0], DType::I32).unwrap();
    let g = GpuTensor::zeros(&gpu, &[0], DType::F32).unwrap();
    assert_eq!(x.cross_entropy(&t, 0.0, -100).unwrap().shape(), &[0]);
    assert_eq!(
        x.cross_entropy_backward(&t, &g, 0.0, -100).unwrap().shape(),
        &[0, 5]
    );
}

#[test]
fn cross_entropy_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let t = GpuTensor::zeros(&gpu, &[2], DType::I32).unwrap();
    let g = GpuTensor::zeros(&gpu, &[2], DType::F32).unwrap();
    let cx = CpuTensor::zeros(&[2, 3], DType::F32).unwrap();
    let ct = CpuTensor::zeros(&[2], DType::I32).unwrap();

    // Logits must be 2-D.
    let x3 = GpuTensor::zeros(&gpu, &[2, 3, 1], DType::F32).unwrap();
    let e = x3.cross_entropy(&t, 0.0, -100).unwrap_err().to_string();
    assert!(e.contains("[2, 3, 1]"), "{e}");
    let e = CpuTensor::zeros(&[6], DType::F32)
        .unwrap()
        .cross_entropy(&ct, 0.0, -100)
        .unwrap_err()
        .to_string();
    assert!(e.contains("[6]"), "{e}");
    // Target length must be N.
    let t3 = GpuTensor::zeros(&gpu, &[3], DType::I32).unwrap();
    assert!(
        matches!(x.cross_entropy(&t3, 0.0, -100), Err(Error::ShapeMismatch { ref lhs, ref rhs, .. }) if lhs == &[2, 3] && rhs == &[3])
    );
    assert!(matches!(
        cx.cross_entropy(&CpuTensor::zeros(&[3], DType::I32).unwrap(), 0.0, -100),
        Err(Error::ShapeMismatch { .. })
    ));
    // Dtypes: F32 logits, I32 targets, F32 grad.
    let tf = GpuTensor::zeros(&gpu, &[2], DType::F32).unwrap();
    assert!(matches!(
        x.cross_entropy(&tf, 0.0, -100),
        Err(Error::DTypeMismatch {
            expected: DType::I32,
            got: DType::F32,
            ..
        })
    ));
    let xi = GpuTensor::zeros(&gpu, &[2, 3], DType::I32).unwrap();
    assert!(matches!(
        xi.cross_entropy(&t, 0.0, -100),
        Err(Error::DTypeMismatch {
            expected: DType::F32,
            ..
        })
    ));
    assert!(matches!(
        x.cross_entropy_backward(&t, &t, 0.0, -100),
        Err(Error::DTypeMismatch { .. })
    ));
    // Grad shape must be [N].
    let g3 = GpuTensor::zeros(&gpu, &[2, 1], DType::F32).unwrap();
    assert!(matches!(
        x.cross_entropy_backward(&t, &g3, 0.0, -100),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        cx.cross_entropy_backward(&ct, &CpuTensor::zeros(&[3], DType::F32).unwrap(), 0.0, -100),
        Err(Error::ShapeMismatch { .. })
    ));
    // Smoothing outside [0, 1] (and NaN).
    for ls in [-0.1f32, 1.5, f32::NAN] {
        let e = x.cross_entropy(&t, ls, -100).unwrap_err().to_string();
        assert!(e.contains("label_smoothing"), "{e}");
        assert!(cx.cross_entropy(&ct, ls, -100).is_err());
        assert!(x.cross_entropy_backward(&t, &g, ls, -100).is_err());
    }
}

/// Throughput of the fused kernels on a large-vocabulary batch (run with
/// `--ignored --nocapture` on a real GPU; lavapipe would take long). Checks
/// a few rows against the CPU so a fast wrong kernel cannot pass.
#[test]
#[ignore]
fn bench_cross_entropy_large() {
    let Some(gpu) = shared_gpu() else { return };
    let (n, c) = (4096usize, 32000usize);
    let x = GpuTensor::randn(&gpu, &[n, c], 0.0, 3.0, 1).unwrap();
    let labels: Vec<i32> = (0..n).map(|i| ((i * 7919) % c) as i32).collect();
    let t = GpuTensor::from_vec(&gpu, labels.clone(), &[n]).unwrap();
    let g = GpuTensor::ones(&gpu, &[n], DType::F32).unwrap();
    let run = |iters: usize| {
        let start = std::time::Instant::now();
        for _ in 0..iters {
            let _ = x.cross_entropy(&t, 0.1, -100).unwrap();
            let _ = x.cross_entropy_backward(&t, &g, 0.1, -100).unwrap();
        }
        gpu.synchronize().unwrap();
        start.elapsed().as_secs_f64() / iters as f64
    };
    run(2);
    let per = run(20);
    // Forward reads the logits twice (max/sum, then logp with smoothing),
    // backward reads them twice and writes once.
    let bytes = (n * c * 4 * 5) as f64;
    println!(
        "cross_entropy fwd+bwd [{n}, {c}]: {:.3} ms, ~{:.0} GB/s effective",
        per * 1e3,
        bytes / per / 1e9
    );
    let rows = 3;
    let got = x
        .narrow(0, 0, rows)
        .unwrap()
        .cross_entropy(&t.narrow(0, 0, rows).unwrap(), 0.1, -100)
        .unwrap();
    let cx = CpuTensor::from_vec(
        x.narrow(0, 0, rows)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap(),
        &[rows, c],
    )
    .unwrap();
    let ct = CpuTensor::from_vec(labels[..rows].to_vec(), &[rows]).unwrap();
    assert_close(
        &gpu_f32(&got),
        &cpu_f32(&cx.cross_entropy(&ct, 0.1, -100).unwrap()),
        1e-4,
        "large rows",
    );
}

/// The fused 'mean' reduction (`cross_entropy_mean`) against the CPU's f64
/// sum: batch sizes around the workgroup's 256 and well past it (each
/// thread then sums many losses), strided targets, ignored samples, every
/// sample ignored (0 / 0 = NaN, as PyTorch) and no samples at all.
#[test]
fn cross_entropy_mean_matches_cpu() {
    let Some(dev) = shared_gpu() else { return };
    let cases = [
        (1, 0, false),
        (255, 3, false),
        (256, 0, true),
        (1000, 7, true),
        (70_000, 5, false),
        (9, 1, false),
        (0, 0, false),
    ];
    for (n, ignore_every, strided) in cases {
        let (ct, gt) = targets_pair(&dev, n, 10, -100, ignore_every, strided, n as u64);
        let mut losses = values(n, 0.0, 5.0, 3 + n as u64);
        // A NaN loss among the counted ones makes the mean NaN (as PyTorch);
        // put it on a sample that is not ignored.
        if n == 255 {
            losses[1] = f32::NAN;
        }
        let cl = CpuTensor::from_vec(losses.clone(), &[n]).unwrap();
        let gl = GpuTensor::from_vec(&dev, losses, &[n]).unwrap();
        let (cm, cc) = cl.cross_entropy_mean(&ct, -100).unwrap();
        let (gm, gc) = gl.cross_entropy_mean(&gt, -100).unwrap();
        assert_eq!(gm.shape(), &[] as &[usize]);
        let what = format!("n {n} ignore_every {ignore_every} strided {strided}");
        assert_eq!(gpu_f32(&gc), cpu_f32(&cc), "count, {what}");
        let (want, got) = (cpu_f32(&cm)[0], gpu_f32(&gm)[0]);
        if want.is_nan() {
            assert!(
                got.is_nan(),
                "every sample ignored gives NaN, got {got}: {what}"
            );
        } else {
            assert!(
                (got - want).abs() <= 2e-6 * want.abs(),
                "{got} vs {want}: {what}"
            );
        }
    }
    // Shapes and dtypes are checked.
    let l = GpuTensor::zeros(&dev, &[4], DType::F32).unwrap();
    let t = GpuTensor::zeros(&dev, &[5], DType::I32).unwrap();
    assert!(matches!(
        l.cross_entropy_mean(&t, -100),
        Err(Error::ShapeMismatch { .. })
    ));
    let tf = GpuTensor::zeros(&dev, &[4], DType::F32).unwrap();
    assert!(matches!(
        l.cross_entropy_mean(&tf, -100),
        Err(Error::DTypeMismatch { .. })
    ));
}

/// `cross_entropy_mean_loss` (the loss and its 'mean' in one pass where
/// the logits fit one workgroup, else the two passes) against the CPU's
/// two passes: on both sides of the one-pass limit (16384 logits; rows
/// past 256 in blocks), with label smoothing, ignored samples, every sample ignored
/// (NaN, as PyTorch), a NaN logit, transposed logits and no rows.
#[test]
fn cross_entropy_mean_loss_matches_cpu() {
    let Some(dev) = shared_gpu() else { return };
    // (rows, classes, smoothing, ignore_every, transposed logits)
    let cases = [
        (1, 1, 0.0, 0, false),
        (7, 10, 0.0, 3, false),
        (128, 10, 0.1, 0, true),
        (256, 64, 0.0, 5, false),
        (256, 65, 0.2, 0, false),
        (257, 10, 0.0, 4, false),
        (1024, 10, 0.0, 7, false),
        (1500, 10, 0.1, 0, true),
        (3000, 6, 0.0, 0, false),
        (100, 1000, 0.0, 0, true),
        (9, 3, 0.0, 1, false),
        (0, 4, 0.0, 0, false),
    ];
    for (i, &(n, c, smoothing, ignore_every, transposed)) in cases.iter().enumerate() {
        let (ct, gt) = targets_pair(&dev, n, c, -100, ignore_every, false, 70 + i as u64);
        let mut x = values(n * c, -4.0, 4.0, 90 + i as u64);
        if n == 7 {
            x[12] = f32::NAN; // row 1: its loss and so the mean are NaN
        }
        let shape = if transposed { [c, n] } else { [n, c] };
        let cx = CpuTensor::from_vec(x.clone(), &shape).unwrap();
        let gx = GpuTensor::from_vec(&dev, x, &shape).unwrap();
        let (cx, gx) = if transposed {
            (cx.transpose(0, 1).unwrap(), gx.transpose(0, 1).unwrap())
        } else {
            (cx, gx)
        };
        let (cm, cc) = cx
            .cross_entropy(&ct, smoothing, -100)
            .unwrap()
            .cross_entropy_mean(&ct, -100)
            .unwrap();
        let (gm, gc, unit) = gx.cross_entropy_mean_loss(&gt, smoothing, -100).unwrap();
        // The one pass's seed is 1.0; the two passes give none.
        let fused = n > 0 && n * c.max(1) <= 16384;
        assert_eq!(unit.is_some(), fused, "seed, n {n} c {c}");
        if let Some(unit) = unit {
            assert_eq!(unit.shape(), &[] as &[usize]);
            assert_eq!(gpu_f32(&unit), vec![1.0]);
        }
        let what = format!("n {n} c {c} smoothing {smoothing} ignore_every {ignore_every}");
        assert_eq!(gm.shape(), &[] as &[usize], "{what}");
        assert_eq!(gpu_f32(&gc), cpu_f32(&cc), "count, {what}");
        let (want, got) = (cpu_f32(&cm)[0], gpu_f32(&gm)[0]);
        if want.is_nan() {
            assert!(got.is_nan(), "NaN expected, got {got}: {what}");
        } else {
            assert!(
                (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                "{got} vs {want}: {what}"
            );
        }
        // The one pass's gradient for its own seed: the backward kernel's
        // bits.
        let (_, _, seeded) = gx
            .cross_entropy_mean_loss_with_grad(&gt, smoothing, -100)
            .unwrap();
        assert_eq!(seeded.is_some(), fused, "seeded gradient, {what}");
        if let Some((unit, grad)) = seeded {
            assert_eq!(grad.shape(), &[n, c], "{what}");
            let want = gx
                .cross_entropy_mean_backward(&gt, &unit, &gc, smoothing, -100)
                .unwrap();
            let bits =
                |t: &GpuTensor| -> Vec<u32> { gpu_f32(t).iter().map(|v| v.to_bits()).collect() };
            assert_eq!(bits(&grad), bits(&want), "gradient, {what}");
        }
    }
    // A target out of range is the device fault's error at the next readback.
    let own = own_gpu().unwrap();
    let x = GpuTensor::zeros(&own, &[4, 3], DType::F32).unwrap();
    let t = GpuTensor::from_vec(&own, vec![0i32, 1, 3, 2], &[4]).unwrap();
    let (mean, _, _) = x.cross_entropy_mean_loss(&t, 0.0, -100).unwrap();
    assert!(matches!(
        mean.to_vec_blocking::<f32>(),
        Err(Error::IndexOutOfRange { .. })
    ));
}

/// The fused 'mean' backward (`cross_entropy_mean_backward`: the division
/// by the count inside the gradient kernel) against dividing first and
/// running `cross_entropy_backward` on the broadcast share, and against
/// the CPU.
#[test]
fn cross_entropy_mean_backward_matches_dividing_first() {
    let Some(dev) = shared_gpu() else { return };
    let (n, c) = (70, 13);
    let logits: Vec<f32> = values(n * c, -3.0, 3.0, 41);
    let gx = GpuTensor::from_vec(&dev, logits.clone(), &[n, c]).unwrap();
    let cx = CpuTensor::from_vec(logits, &[n, c]).unwrap();
    let (ct, gt) = targets_pair(&dev, n, c, -100, 4, true, 42);
    for smoothing in [0.0, 0.2] {
        let (_, gcount) = gx
            .cross_entropy(&gt, smoothing, -100)
            .unwrap()
            .cross_entropy_mean(&gt, -100)
            .unwrap();
        let g = GpuTensor::from_vec(&dev, vec![0.75f32], &[]).unwrap();
        let fused = gx
            .cross_entropy_mean_backward(&gt, &g, &gcount, smoothing, -100)
            .unwrap();
        let share = g
            .binary(&gcount, wgrad_core::BinaryOp::Div)
            .unwrap()
            .reshape(&[1])
            .unwrap()
            .expand(&[n])
            .unwrap();
        let want = gx
            .cross_entropy_backward(&gt, &share, smoothing, -100)
            .unwrap();
        assert_close(
            &gpu_f32(&fused),
            &gpu_f32(&want),
            1e-6,
            "fused vs divided first",
        );
        let (_, ccount) = cx
            .cross_entropy(&ct, smoothing, -100)
            .unwrap()
            .cross_entropy_mean(&ct, -100)
            .unwrap();
        let count = cpu_f32(&ccount)[0];
        let cshare = CpuTensor::from_vec(vec![0.75 / count; n], &[n]).unwrap();
        let cwant = cx
            .cross_entropy_backward(&ct, &cshare, smoothing, -100)
            .unwrap();
        assert_close(&gpu_f32(&fused), &cpu_f32(&cwant), 1e-5, "fused vs CPU");
    }
}
