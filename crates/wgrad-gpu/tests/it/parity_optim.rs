//! Parity of the fused optimizer kernels (`GpuTensor::sgd_step_` /
//! `adam_step_`, in place) against the CPU reference
//! (`CpuTensor::sgd_step` / `adam_step`, pure) over several consecutive
//! steps with random shapes, values and hyper-parameter combinations, plus
//! strided gradients, parameters at a buffer offset, the no-readback
//! guarantee and the error cases.
//!
//! Tolerance: 1e-5 relative (`|g-w| / max(1, |w|)`) on the parameter and
//! every state tensor after each step: the kernels perform the CPU's f32
//! operations in the same order, but the GPU may fuse multiply-adds and its
//! sqrt/division are within a few ulp.

use wgrad_test_support::{assert_close, own_gpu, shared_gpu};

use proptest::prelude::*;
use wgrad_core::{DType, Error};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

const TOL: f32 = 1e-5;

/// SplitMix64 value stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn values(&mut self, n: usize, range: f32) -> Vec<f32> {
        (0..n)
            .map(|_| ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * range)
            .collect()
    }
}

fn cpu(data: &[f32], shape: &[usize]) -> CpuTensor {
    CpuTensor::from_vec(data.to_vec(), shape).unwrap()
}

fn gpu_t(dev: &GpuDevice, data: &[f32], shape: &[usize]) -> GpuTensor {
    GpuTensor::from_vec(dev, data.to_vec(), shape).unwrap()
}

fn read(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

fn cpu_vec(t: &CpuTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[derive(Clone, Copy, Debug)]
struct SgdCase {
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
}

fn sgd_case() -> impl Strategy<Value = SgdCase> {
    (
        prop_oneof![Just(0.0), Just(0.9), 0.1f64..0.99],
        prop_oneof![Just(0.0), Just(0.0), 0.0f64..0.5],
        prop_oneof![Just(0.0), 1e-3f64..0.1],
        any::<bool>(),
        any::<bool>(),
        1e-3f64..0.5,
    )
        .prop_map(
            |(momentum, dampening, weight_decay, nesterov, maximize, lr)| {
                // torch requires momentum > 0 and zero dampening for Nesterov.
                let nesterov = nesterov && momentum > 0.0;
                SgdCase {
                    lr,
                    momentum,
                    dampening: if nesterov { 0.0 } else { dampening },
                    weight_decay,
                    nesterov,
                    maximize,
                }
            },
        )
}

#[derive(Clone, Copy, Debug)]
struct AdamCase {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    decoupled: bool,
    maximize: bool,
}

fn adam_case() -> impl Strategy<Value = AdamCase> {
    (
        1e-4f64..0.1,
        prop_oneof![Just((0.9, 0.999)), (0.0f64..0.99, 0.5f64..0.9999)],
        prop_oneof![Just(1e-8), 1e-6f64..1e-2],
        prop_oneof![Just(0.0), 1e-3f64..0.1],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(lr, betas, eps, weight_decay, amsgrad, decoupled, maximize)| AdamCase {
                lr,
                betas,
                eps,
                weight_decay,
                amsgrad,
                decoupled,
                maximize,
            },
        )
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..6, 0..4)
}

/// Runs `steps` SGD steps on both devices with fresh random gradients and
/// compares parameter and momentum buffer after each.
fn sgd_trajectory(dev: &GpuDevice, shape: &[usize], case: SgdCase, seed: u64, steps: usize) {
    let n: usize = shape.iter().product();
    let mut rng = Rng(seed);
    let p0 = rng.values(n, 2.0);
    let mut cpu_p = cpu(&p0, shape);
    let mut cpu_buf: Option<CpuTensor> = None;
    let gpu_p = gpu_t(dev, &p0, shape);
    let gpu_buf = (case.momentum != 0.0).then(|| GpuTensor::zeros(dev, shape, DType::F32).unwrap());
    for step in 0..steps {
        let g = rng.values(n, 1.0);
        let (np, nb) = cpu_p
            .sgd_step(
                &cpu(&g, shape),
                cpu_buf.as_ref(),
                case.lr,
                case.momentum,
                case.dampening,
                case.weight_decay,
                case.nesterov,
                case.maximize,
            )
            .unwrap();
        cpu_p = np;
        cpu_buf = nb;
        gpu_p
            .sgd_step_(
                &gpu_t(dev, &g, shape),
                gpu_buf.as_ref(),
                step == 0,
                case.lr,
                case.momentum,
                case.dampening,
                case.weight_decay,
                case.nesterov,
                case.maximize,
            )
            .unwrap();
        let what = format!("sgd {case:?} shape {shape:?} step {step}");
        assert_close(
            &read(&gpu_p),
            &cpu_vec(&cpu_p),
            TOL,
            &format!("{what}: param"),
        );
        if let (Some(gb), Some(cb)) = (&gpu_buf, &cpu_buf) {
            assert_close(&read(gb), &cpu_vec(cb), TOL, &format!("{what}: buffer"));
        }
    }
}

/// Runs `steps` Adam steps on both devices and compares parameter and state.
fn adam_trajectory(dev: &GpuDevice, shape: &[usize], case: AdamCase, seed: u64, steps: u64) {
    let n: usize = shape.iter().product();
    let mut rng = Rng(seed);
    let p0 = rng.values(n, 2.0);
    let zeros = vec![0.0f32; n];
    let mut c = (cpu(&p0, shape), cpu(&zeros, shape), cpu(&zeros, shape));
    let mut c_max = case.amsgrad.then(|| cpu(&zeros, shape));
    let gp = gpu_t(dev, &p0, shape);
    let gm = GpuTensor::zeros(dev, shape, DType::F32).unwrap();
    let gv = GpuTensor::zeros(dev, shape, DType::F32).unwrap();
    let g_max = case
        .amsgrad
        .then(|| GpuTensor::zeros(dev, shape, DType::F32).unwrap());
    for step in 1..=steps {
        // Shrinking gradients make amsgrad's running max differ from v.
        let g = rng.values(n, 1.0 / step as f32);
        let (np, nm, nv, nmax) =
            c.0.adam_step(
                &cpu(&g, shape),
                &c.1,
                &c.2,
                c_max.as_ref(),
                step,
                case.lr,
                case.betas,
                case.eps,
                case.weight_decay,
                case.decoupled,
                case.maximize,
            )
            .unwrap();
        c = (np, nm, nv);
        c_max = nmax;
        gp.adam_step_(
            &gpu_t(dev, &g, shape),
            &gm,
            &gv,
            g_max.as_ref(),
            step,
            case.lr,
            case.betas,
            case.eps,
            case.weight_decay,
            case.decoupled,
            case.maximize,
        )
        .unwrap();
        let what = format!("adam {case:?} shape {shape:?} step {step}");
        assert_close(&read(&gp), &cpu_vec(&c.0), TOL, &format!("{what}: param"));
        assert_close(&read(&gm), &cpu_vec(&c.1), TOL, &format!("{what}: exp_avg"));
        assert_close(
            &read(&gv),
            &cpu_vec(&c.2),
            TOL,
            &format!("{what}: exp_avg_sq"),
        );
        if let (Some(gx), Some(cx)) = (&g_max, &c_max) {
            assert_close(
                &read(gx),
                &cpu_vec(cx),
                TOL,
                &format!("{what}: max_exp_avg_sq"),
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn sgd_matches_cpu(shape in shape_strategy(), case in sgd_case(), seed in any::<u64>()) {
        let Some(dev) = shared_gpu() else { return Ok(()) };
        sgd_trajectory(&dev, &shape, case, seed, 4);
    }

    #[test]
    fn adam_matches_cpu(shape in shape_strategy(), case in adam_case(), seed in any::<u64>()) {
        let Some(dev) = shared_gpu() else { return Ok(()) };
        adam_trajectory(&dev, &shape, case, seed, 4);
    }
}

#[test]
fn every_sgd_and_adam_variant_matches_cpu() {
    let Some(dev) = shared_gpu() else { return };
    // More elements than one workgroup, so the grid indexing is exercised.
    let shape = [3, 130];
    for (momentum, dampening, nesterov) in [
        (0.0, 0.0, false),
        (0.9, 0.0, false),
        (0.9, 0.3, false),
        (0.9, 0.0, true),
    ] {
        for weight_decay in [0.0, 0.01] {
            for maximize in [false, true] {
                let case = SgdCase {
                    lr: 0.1,
                    momentum,
                    dampening,
                    weight_decay,
                    nesterov,
                    maximize,
                };
                sgd_trajectory(&dev, &shape, case, 7, 3);
            }
        }
    }
    for amsgrad in [false, true] {
        for decoupled in [false, true] {
            for weight_decay in [0.0, 0.05] {
                for maximize in [false, true] {
                    let case = AdamCase {
                        lr: 0.01,
                        betas: (0.9, 0.999),
                        eps: 1e-8,
                        weight_decay,
                        amsgrad,
                        decoupled,
                        maximize,
                    };
                    adam_trajectory(&dev, &shape, case, 11, 3);
                }
            }
        }
    }
}

#[test]
fn strided_grad_and_offset_param_are_handled() {
    let Some(dev) = shared_gpu() else { return };
    let mut rng = Rng(3);
    // The parameter is rows 1..3 of a [4, 5] buffer: contiguous, offset 5.
    let base = rng.values(20, 1.0);
    let base_gpu = gpu_t(&dev, &base, &[4, 5]);
    let param = base_gpu.narrow(0, 1, 2).unwrap();
    // The gradient is a transposed view.
    let g_t = rng.values(10, 1.0);
    let grad_gpu = gpu_t(&dev, &g_t, &[5, 2]).transpose(0, 1).unwrap();
    let grad_cpu = cpu(&g_t, &[5, 2]).transpose(0, 1).unwrap();
    let param_cpu = cpu(&base, &[4, 5]).narrow(0, 1, 2).unwrap();
    let (want, _) = param_cpu
        .sgd_step(&grad_cpu, None, 0.5, 0.0, 0.0, 0.1, false, false)
        .unwrap();
    param
        .sgd_step_(&grad_gpu, None, false, 0.5, 0.0, 0.0, 0.1, false, false)
        .unwrap();
    assert_close(&read(&param), &cpu_vec(&want), TOL, "offset param");
    // Rows outside the view are untouched.
    let all = read(&base_gpu);
    assert_eq!(&all[..5], &base[..5]);
    assert_eq!(&all[15..], &base[15..]);

    // Adam through the same views.
    let z = GpuTensor::zeros(&dev, &[2, 5], DType::F32).unwrap();
    let z2 = GpuTensor::zeros(&dev, &[2, 5], DType::F32).unwrap();
    let zc = CpuTensor::full(&[2, 5], 0.0, DType::F32).unwrap();
    let (want, ..) = want
        .adam_step(
            &grad_cpu,
            &zc,
            &zc,
            None,
            1,
            0.01,
            (0.9, 0.999),
            1e-8,
            0.0,
            false,
            false,
        )
        .unwrap();
    param
        .adam_step_(
            &grad_gpu,
            &z,
            &z2,
            None,
            1,
            0.01,
            (0.9, 0.999),
            1e-8,
            0.0,
            false,
            false,
        )
        .unwrap();
    assert_close(&read(&param), &cpu_vec(&want), TOL, "adam offset param");
}

#[test]
fn grad_aliasing_the_param_is_copied_first() {
    let Some(dev) = shared_gpu() else { return };
    let p = gpu_t(&dev, &[1.0, -2.0, 4.0], &[3]);
    // p -= 0.5 * p
    p.sgd_step_(&p.clone(), None, false, 0.5, 0.0, 0.0, 0.0, false, false)
        .unwrap();
    assert_eq!(read(&p), vec![0.5, -1.0, 2.0]);
}

#[test]
fn a_step_records_one_dispatch_and_no_readback() {
    let Some(dev) = own_gpu() else { return };
    let shape = [64];
    let p = GpuTensor::ones(&dev, &shape, DType::F32).unwrap();
    let g = GpuTensor::ones(&dev, &shape, DType::F32).unwrap();
    let m = GpuTensor::zeros(&dev, &shape, DType::F32).unwrap();
    let v = GpuTensor::zeros(&dev, &shape, DType::F32).unwrap();
    let buf = GpuTensor::zeros(&dev, &shape, DType::F32).unwrap();
    // Warm the pipelines so the counted steps create none.
    p.adam_step_(
        &g,
        &m,
        &v,
        None,
        1,
        1e-3,
        (0.9, 0.999),
        1e-8,
        0.0,
        false,
        false,
    )
    .unwrap();
    p.sgd_step_(&g, Some(&buf), true, 0.1, 0.9, 0.0, 0.0, false, false)
        .unwrap();
    let before = dev.stats();
    p.adam_step_(
        &g,
        &m,
        &v,
        None,
        2,
        1e-3,
        (0.9, 0.999),
        1e-8,
        0.0,
        false,
        false,
    )
    .unwrap();
    p.sgd_step_(&g, Some(&buf), false, 0.1, 0.9, 0.0, 0.0, false, false)
        .unwrap();
    let d = dev.stats().since(&before);
    assert_eq!(d.readbacks, 0, "{d:?}");
    assert_eq!(d.dispatches, 2, "one fused dispatch per update: {d:?}");
    assert_eq!(
        d.pool_hits + d.pool_misses,
        0,
        "an in-place step allocates nothing: {d:?}"
    );
}

#[test]
fn bad_operands_are_errors() {
    let Some(dev) = shared_gpu() else { return };
    let p = GpuTensor::ones(&dev, &[2, 3], DType::F32).unwrap();
    let g = GpuTensor::ones(&dev, &[2, 3], DType::F32).unwrap();
    let z = || GpuTensor::zeros(&dev, &[2, 3], DType::F32).unwrap();
    let betas = (0.9, 0.999);

    let short = GpuTensor::ones(&dev, &[3], DType::F32).unwrap();
    let err = p
        .sgd_step_(&short, None, false, 0.1, 0.0, 0.0, 0.0, false, false)
        .unwrap_err();
    assert!(
        matches!(err, Error::ShapeMismatch { op: "sgd_step", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("[3]"), "{err}");

    let ints = GpuTensor::zeros(&dev, &[2, 3], DType::I32).unwrap();
    let err = p
        .sgd_step_(&ints, None, false, 0.1, 0.0, 0.0, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::DTypeMismatch { .. }), "{err}");

    let transposed = GpuTensor::ones(&dev, &[3, 2], DType::F32)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let err = transposed
        .sgd_step_(&g, None, false, 0.1, 0.0, 0.0, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert!(err.to_string().contains("contiguous"), "{err}");

    let err = p
        .sgd_step_(&g, None, true, 0.1, 0.9, 0.0, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let buf = z();
    let err = p
        .sgd_step_(&g, Some(&buf), true, 0.1, 0.0, 0.0, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");

    let (m, v) = (z(), z());
    let err = p
        .adam_step_(&g, &m, &v, None, 0, 1e-3, betas, 1e-8, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    // exp_avg and exp_avg_sq in one buffer would race.
    let err = p
        .adam_step_(&g, &m, &m, None, 1, 1e-3, betas, 1e-8, 0.0, false, false)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert!(err.to_string().contains("share a buffer"), "{err}");

    // A tensor on another device.
    let other = GpuDevice::new().unwrap();
    let foreign = GpuTensor::ones(&other, &[2, 3], DType::F32).unwrap();
    let err = p
        .adam_step_(
            &foreign, &m, &v, None, 1, 1e-3, betas, 1e-8, 0.0, false, false,
        )
        .unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");

    // Nothing was written by the failed calls.
    assert_eq!(read(&p), vec![1.0; 6]);
}
