//! `GpuTensor::adam_step_foreach_` (several parameters per dispatch)
//! against one `adam_step_` per parameter: the same arithmetic, so the
//! results must agree bit for bit, whatever mix of sizes, views, empty
//! parameters, overlapping buffers and hyper-parameters; plus its dispatch
//! count and its all-or-nothing error.

use wgrad_core::{DType, Error};
use wgrad_device::GpuDevice;
use wgrad_gpu::{AdamOperands, GpuTensor};
use wgrad_test_support::{own_gpu, shared_gpu};

/// Deterministic values in [-range, range).
fn values(seed: u64, n: usize, range: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * range
        })
        .collect()
}

fn read(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

/// One parameter with its gradient and state, twice: for the foreach
/// step and for the per-parameter reference.
struct Param {
    foreach: [GpuTensor; 4],
    single: [GpuTensor; 4],
}

fn param(dev: &GpuDevice, seed: u64, shape: &[usize]) -> Param {
    let n = shape.iter().product();
    let make = || {
        [
            GpuTensor::from_vec(dev, values(seed, n, 1.0), shape).unwrap(),
            GpuTensor::from_vec(dev, values(seed + 1, n, 0.5), shape).unwrap(),
            GpuTensor::zeros(dev, shape, DType::F32).unwrap(),
            GpuTensor::zeros(dev, shape, DType::F32).unwrap(),
        ]
    };
    Param {
        foreach: make(),
        single: make(),
    }
}

fn operands(t: &[GpuTensor; 4]) -> AdamOperands<'_> {
    AdamOperands {
        param: &t[0],
        grad: &t[1],
        exp_avg: &t[2],
        exp_avg_sq: &t[3],
    }
}

/// Steps both copies `steps` times with each hyper-parameter mix and
/// compares every tensor bit for bit.
fn check_against_single(params: &[Param], what: &str) {
    let mixes = [(0.0, false, false), (0.01, true, false), (0.1, false, true)];
    for (wd, decoupled, maximize) in mixes {
        for step in 1..=3u64 {
            let items: Vec<_> = params.iter().map(|p| operands(&p.foreach)).collect();
            GpuTensor::adam_step_foreach_(
                &items,
                step,
                1e-2,
                (0.9, 0.999),
                1e-8,
                wd,
                decoupled,
                maximize,
            )
            .unwrap();
            for p in params {
                let [w, g, m, v] = &p.single;
                w.adam_step_(
                    g,
                    m,
                    v,
                    None,
                    step,
                    1e-2,
                    (0.9, 0.999),
                    1e-8,
                    wd,
                    decoupled,
                    maximize,
                )
                .unwrap();
            }
            for (i, p) in params.iter().enumerate() {
                for k in [0, 2, 3] {
                    assert_eq!(
                        read(&p.foreach[k]),
                        read(&p.single[k]),
                        "{what}: parameter {i}, tensor {k}, step {step}, wd {wd} decoupled {decoupled} maximize {maximize}"
                    );
                }
            }
        }
    }
}

#[test]
fn matches_one_step_per_parameter() {
    let Some(dev) = shared_gpu() else { return };
    // Nine parameters: three dispatches of four, four and one; an empty
    // one and 0-d ones among them; sizes not multiples of the workgroup.
    let shapes: [&[usize]; 9] = [
        &[300, 7],
        &[5],
        &[],
        &[0, 3],
        &[257],
        &[64, 64],
        &[1],
        &[3, 1, 2],
        &[1000],
    ];
    let params: Vec<Param> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| param(&dev, 10 * i as u64 + 1, s))
        .collect();
    check_against_single(&params, "mixed sizes");
}

#[test]
fn views_strided_gradients_and_shared_buffers() {
    let Some(dev) = shared_gpu() else { return };
    // Parameters that are rows of one buffer (they must not share a
    // dispatch's written bindings), a transposed gradient, a gradient that
    // is another parameter's buffer.
    let build = || {
        let base = GpuTensor::from_vec(&dev, values(7, 40, 1.0), &[8, 5]).unwrap();
        let a = base.narrow(0, 1, 2).unwrap();
        let b = base.narrow(0, 4, 3).unwrap();
        let c = GpuTensor::from_vec(&dev, values(8, 10, 1.0), &[2, 5]).unwrap();
        let ga = GpuTensor::from_vec(&dev, values(9, 10, 0.5), &[5, 2])
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let gb = GpuTensor::from_vec(&dev, values(10, 15, 0.5), &[3, 5]).unwrap();
        let gc = a.clone();
        let z = |s: &[usize]| GpuTensor::zeros(&dev, s, DType::F32).unwrap();
        vec![
            [a, ga, z(&[2, 5]), z(&[2, 5])],
            [b, gb, z(&[3, 5]), z(&[3, 5])],
            [c, gc, z(&[2, 5]), z(&[2, 5])],
        ]
    };
    let params: Vec<Param> = build()
        .into_iter()
        .zip(build())
        .map(|(foreach, single)| Param { foreach, single })
        .collect();
    check_against_single(&params, "views");
}

/// Dispatches of one foreach step over `params` after a warm-up step.
fn dispatches_per_step(dev: &GpuDevice, params: &[Param]) -> u64 {
    let items: Vec<_> = params.iter().map(|p| operands(&p.foreach)).collect();
    let step = |t| {
        GpuTensor::adam_step_foreach_(&items, t, 1e-3, (0.9, 0.999), 1e-8, 0.0, false, false)
            .unwrap()
    };
    step(1); // warms the pipeline and bind groups
    let before = dev.stats();
    step(2);
    let d = dev.stats().since(&before);
    assert_eq!(d.readbacks, 0, "{d:?}");
    d.dispatches
}

#[test]
fn parameters_share_dispatches() {
    let Some(dev) = own_gpu() else { return };
    let buffers = dev.limits().max_storage_buffers_per_shader_stage;
    if buffers < 16 {
        return; // the per-parameter fallback: one dispatch each
    }
    // Six parameters starting their buffers: one wide dispatch (eight
    // slots) where the device allows 32 storage buffers, else two of four.
    let params: Vec<Param> = (0..6).map(|i| param(&dev, i, &[100])).collect();
    let want = if buffers >= 32 { 1 } else { 2 };
    assert_eq!(dispatches_per_step(&dev, &params), want);
    // Gradients at offsets in one buffer do not change that.
    let grads = GpuTensor::from_vec(&dev, values(3, 600, 0.5), &[600]).unwrap();
    let params: Vec<Param> = (0..6)
        .map(|i| {
            let mut p = param(&dev, i, &[100]);
            p.foreach[1] = grads.narrow(0, 100 * i as usize, 100).unwrap();
            p
        })
        .collect();
    assert_eq!(dispatches_per_step(&dev, &params), want);
    // Seventeen: three wide dispatches (8, 8, 1).
    let params: Vec<Param> = (0..17).map(|i| param(&dev, i, &[33])).collect();
    let want = if buffers >= 32 { 3 } else { 5 };
    assert_eq!(dispatches_per_step(&dev, &params), want);
}

/// Parameters at an offset in their buffer take the four-slot kernel and
/// the others the wide one, in the same step, with the results of one step
/// per parameter.
#[test]
fn offset_and_buffer_start_parameters_mix() {
    let Some(dev) = shared_gpu() else { return };
    let build = || {
        let base = GpuTensor::from_vec(&dev, values(21, 60, 1.0), &[12, 5]).unwrap();
        let z = |s: &[usize]| GpuTensor::zeros(&dev, s, DType::F32).unwrap();
        let g = |seed, n: usize| GpuTensor::from_vec(&dev, values(seed, n, 0.5), &[n]).unwrap();
        let mut out = Vec::new();
        for i in 0..10usize {
            let n = 5 + 7 * i;
            let p = GpuTensor::from_vec(&dev, values(30 + i as u64, n, 1.0), &[n]).unwrap();
            out.push([p, g(40 + i as u64, n), z(&[n]), z(&[n])]);
        }
        // Rows of one buffer at offsets 5 and 35, with an offset gradient.
        let grad_base = GpuTensor::from_vec(&dev, values(50, 20, 0.5), &[20]).unwrap();
        let a = base.narrow(0, 1, 2).unwrap();
        let b = base.narrow(0, 7, 3).unwrap();
        out.push([
            a,
            grad_base
                .narrow(0, 3, 10)
                .unwrap()
                .reshape(&[2, 5])
                .unwrap(),
            z(&[2, 5]),
            z(&[2, 5]),
        ]);
        out.push([
            b,
            g(51, 15).reshape(&[3, 5]).unwrap(),
            z(&[3, 5]),
            z(&[3, 5]),
        ]);
        // A parameter at its buffer's start with a gradient at an offset
        // (a bias gradient after its weight gradient): the wide kernel.
        let p = GpuTensor::from_vec(&dev, values(52, 9, 1.0), &[9]).unwrap();
        out.push([p, grad_base.narrow(0, 11, 9).unwrap(), z(&[9]), z(&[9])]);
        out
    };
    let params: Vec<Param> = build()
        .into_iter()
        .zip(build())
        .map(|(foreach, single)| Param { foreach, single })
        .collect();
    check_against_single(&params, "offsets and buffer starts");
}

#[test]
fn a_bad_operand_updates_nothing() {
    let Some(dev) = shared_gpu() else { return };
    let good: Vec<Param> = (0..5).map(|i| param(&dev, i, &[6])).collect();
    let before: Vec<Vec<f32>> = good.iter().map(|p| read(&p.foreach[0])).collect();
    let bad_grad = GpuTensor::zeros(&dev, &[7], DType::F32).unwrap();
    let mut items: Vec<_> = good.iter().map(|p| operands(&p.foreach)).collect();
    items[4].grad = &bad_grad;
    let err = GpuTensor::adam_step_foreach_(&items, 1, 1e-3, (0.9, 0.999), 1e-8, 0.0, false, false)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ShapeMismatch { .. } | Error::InvalidArgument { .. }
        ),
        "{err:?}"
    );
    let after: Vec<Vec<f32>> = good.iter().map(|p| read(&p.foreach[0])).collect();
    assert_eq!(before, after, "a failed step must change no parameter");
    // A state tensor shared by two parameters' slots is the same error as
    // in adam_step_.
    let p = &good[0].foreach;
    let shared = AdamOperands {
        param: &p[0],
        grad: &p[1],
        exp_avg: &p[2],
        exp_avg_sq: &p[2],
    };
    assert!(
        GpuTensor::adam_step_foreach_(&[shared], 1, 1e-3, (0.9, 0.999), 1e-8, 0.0, false, false)
            .is_err()
    );
}
