//! Modules and losses on a GPU vs the CPU: identical initialisation from the
//! same seed, the same dropout masks, and matching outputs and gradients of
//! small models trained one step; losses forward and backward; faults.

use wgrad_test_support::{assert_close, gpu, seed_lock};

use wgrad_autograd::{Device, Error, Tensor, manual_seed};
use wgrad_nn::loss::{
    CrossEntropyOptions, binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss,
    smooth_l1_loss,
};
use wgrad_nn::{
    Dropout, Embedding, Flatten, GELU, LayerNorm, Linear, Module, ReLU, Reduction, Sequential,
    SiLU, Tanh,
};

fn seeded() -> std::sync::MutexGuard<'static, ()> {
    seed_lock()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

/// Builds `make(device)` after `manual_seed(seed)`, runs `step` (forward and
/// backward, returning the loss) on it, and returns the model and loss; the
/// CPU and GPU runs draw identical seeds in identical order.
fn run_on<M: Module>(
    device: &Device,
    seed: u64,
    make: &dyn Fn(&Device) -> M,
    step: &dyn Fn(&M, &Device) -> Tensor,
) -> (M, Vec<f32>) {
    manual_seed(seed);
    let model = make(device);
    let loss = step(&model, device);
    loss.backward().unwrap();
    (model, f32s(&loss))
}

/// Compares parameters (values, then gradients) by name.
fn compare_models(cpu: &dyn Module, gpu: &dyn Module, grad_tol: f32) {
    let (c, g) = (cpu.named_parameters(), gpu.named_parameters());
    assert_eq!(c.len(), g.len());
    for ((name, pc), (name_g, pg)) in c.iter().zip(&g) {
        assert_eq!(name, name_g);
        assert!(pg.device().is_gpu(), "{name} not on the GPU");
        // Same seed -> bit-identical init on both devices (counter-based RNG),
        // up to the last bit of Box-Muller's transcendental functions.
        assert_close(&f32s(pg), &f32s(pc), 1e-5, &format!("{name} value"));
        let gc = pc.grad().unwrap_or_else(|| panic!("{name}: no CPU grad"));
        let gg = pg.grad().unwrap_or_else(|| panic!("{name}: no GPU grad"));
        assert_close(&f32s(&gg), &f32s(&gc), grad_tol, &format!("{name} grad"));
    }
}

#[test]
fn mlp_gradients_match_cpu() {
    let Some(gpu) = gpu() else { return };
    let _seed = seeded();
    let make = |d: &Device| {
        Sequential::new()
            .add(Linear::new(12, 32, true, d).unwrap())
            .add(GELU::new())
            .add(Dropout::new(0.2).unwrap())
            .add(LayerNorm::new(&[32], 1e-5, true, d).unwrap())
            .add(Linear::new(32, 16, true, d).unwrap())
            .add(SiLU::new())
            .add(Linear::new(16, 7, false, d).unwrap())
    };
    let step = |m: &Sequential, d: &Device| {
        let x = Tensor::randn_with(&[9, 12], 0.0, 1.0, 11, d).unwrap();
        let y = Tensor::from_vec(vec![0i32, 6, 3, -100, 2, 2, 5, 1, 4], &[9], d).unwrap();
        let options = CrossEntropyOptions {
            label_smoothing: 0.1,
            ..Default::default()
        };
        cross_entropy(&m.forward(&x).unwrap(), &y, options).unwrap()
    };
    let (cpu_model, cpu_loss) = run_on(&Device::Cpu, 7, &make, &step);
    let (gpu_model, gpu_loss) = run_on(&gpu, 7, &make, &step);
    assert_close(&gpu_loss, &cpu_loss, 1e-5, "loss");
    compare_models(&cpu_model, &gpu_model, 2e-4);
}

#[test]
fn embedding_model_gradients_match_cpu() {
    let Some(gpu) = gpu() else { return };
    let _seed = seeded();
    let make = |d: &Device| {
        Sequential::new()
            .add(Embedding::new(10, 4, d).unwrap())
            .add(Flatten::new())
            .add(Linear::new(12, 8, true, d).unwrap())
            .add(Tanh::new())
            .add(Linear::new(8, 5, true, d).unwrap())
            .add(ReLU::new())
    };
    let step = |m: &Sequential, d: &Device| {
        // Repeated indices accumulate into the same embedding rows.
        let idx =
            Tensor::from_vec(vec![1i32, 2, 3, 9, 1, 1, 0, 4, 2, 7, 7, 7], &[4, 3], d).unwrap();
        let target = Tensor::randn_with(&[4, 5], 0.0, 1.0, 3, d).unwrap();
        mse_loss(&m.forward(&idx).unwrap(), &target, Reduction::Mean).unwrap()
    };
    let (cpu_model, cpu_loss) = run_on(&Device::Cpu, 21, &make, &step);
    let (gpu_model, gpu_loss) = run_on(&gpu, 21, &make, &step);
    assert_close(&gpu_loss, &cpu_loss, 1e-5, "loss");
    compare_models(&cpu_model, &gpu_model, 2e-4);
}

#[test]
fn dropout_masks_match_across_devices() {
    let Some(gpu) = gpu() else { return };
    let _seed = seeded();
    let d = Dropout::new(0.5).unwrap();
    manual_seed(5);
    let c = f32s(
        &d.forward(&Tensor::ones(&[1000], &Device::Cpu).unwrap())
            .unwrap(),
    );
    manual_seed(5);
    let g = f32s(&d.forward(&Tensor::ones(&[1000], &gpu).unwrap()).unwrap());
    assert_eq!(c, g);
    let dropped = c.iter().filter(|&&v| v == 0.0).count();
    assert!((400..600).contains(&dropped), "{dropped}");
}

#[test]
fn to_device_moves_parameters_and_keeps_outputs() {
    let Some(gpu) = gpu() else { return };
    let _seed = seeded();
    let mut model = Sequential::new()
        .add(Linear::new(6, 4, true, &Device::Cpu).unwrap())
        .add(LayerNorm::new(&[4], 1e-5, true, &Device::Cpu).unwrap());
    let x = Tensor::randn_with(&[3, 6], 0.0, 1.0, 9, &Device::Cpu).unwrap();
    let want = f32s(&model.forward(&x).unwrap());
    model.to_device(&gpu).unwrap();
    assert!(
        model
            .parameters()
            .iter()
            .all(|p| p.device().is_gpu() && p.requires_grad() && p.is_leaf())
    );
    let got = model.forward(&x.to(&gpu).unwrap()).unwrap();
    assert_close(&f32s(&got), &want, 1e-5, "moved forward");
    // Mixing devices is an error, not a silent copy.
    assert!(matches!(
        model.forward(&x),
        Err(Error::DeviceMismatch { .. })
    ));
    // Gradients land on the moved parameters.
    got.sum_all().unwrap().backward().unwrap();
    assert!(
        model
            .parameters()
            .iter()
            .all(|p| p.grad().is_some_and(|g| g.device().is_gpu()))
    );
    model.to_device(&Device::Cpu).unwrap();
    assert_close(
        &f32s(&model.forward(&x).unwrap()),
        &want,
        1e-5,
        "moved back",
    );
}

/// Runs `loss(inputs)` forward and backward on both devices and compares the
/// loss and every input's gradient.
fn loss_parity(
    what: &str,
    gpu: &Device,
    inputs: &[(Vec<f32>, Vec<usize>)],
    loss: &dyn Fn(&[Tensor], &Device) -> Tensor,
) {
    let on = |d: &Device| {
        let ts: Vec<Tensor> = inputs
            .iter()
            .map(|(v, s)| {
                Tensor::from_vec(v.clone(), s, d)
                    .unwrap()
                    .with_requires_grad(true)
                    .unwrap()
            })
            .collect();
        let l = loss(&ts, d);
        l.sum_all().unwrap().backward().unwrap();
        let grads: Vec<Vec<f32>> = ts
            .iter()
            .map(|t| t.grad().map(|g| f32s(&g)).unwrap_or_default())
            .collect();
        (f32s(&l), grads)
    };
    let (cl, cg) = on(&Device::Cpu);
    let (gl, gg) = on(gpu);
    assert_close(&gl, &cl, 1e-5, &format!("{what} loss"));
    for (i, (g, c)) in gg.iter().zip(&cg).enumerate() {
        assert_close(g, c, 1e-5, &format!("{what} grad {i}"));
    }
}

fn sample(n: usize, seed: u64) -> Vec<f32> {
    f32s(&Tensor::randn_with(&[n], 0.0, 2.0, seed, &Device::Cpu).unwrap())
}

#[test]
fn losses_match_cpu() {
    let Some(gpu) = gpu() else { return };
    let pair = |seed| {
        vec![
            (sample(24, seed), vec![4, 6]),
            (sample(24, seed + 1), vec![4, 6]),
        ]
    };
    loss_parity("mse", &gpu, &pair(1), &|t, _| {
        mse_loss(&t[0], &t[1], Reduction::Mean).unwrap()
    });
    loss_parity("smooth_l1", &gpu, &pair(3), &|t, _| {
        smooth_l1_loss(&t[0], &t[1], 0.5, Reduction::None).unwrap()
    });
    let probs: Vec<f32> = sample(24, 5)
        .iter()
        .map(|v| 1.0 / (1.0 + (-v).exp()))
        .collect();
    let bce_inputs = vec![(sample(24, 6), vec![4, 6]), (probs, vec![4, 6])];
    loss_parity("bce", &gpu, &bce_inputs, &|t, _| {
        binary_cross_entropy_with_logits(&t[0], &t[1].detach(), Reduction::Sum).unwrap()
    });
    // Infinite and confident logits (PyTorch: +inf loss, gradient 1 - t at
    // +inf; NaN at -inf; the tails of softplus).
    let inf = f32::INFINITY;
    let extreme = vec![
        (vec![inf, -inf, 30., -30., 0., 25.], vec![6]),
        (vec![0.25, 0.25, 1., 0., 1., 0.5], vec![6]),
    ];
    loss_parity("bce extreme", &gpu, &extreme, &|t, _| {
        binary_cross_entropy_with_logits(&t[0], &t[1].detach(), Reduction::None).unwrap()
    });
    let targets = |d: &Device| Tensor::from_vec(vec![5i32, 0, -100, 3], &[4], d).unwrap();
    loss_parity("nll", &gpu, &[(sample(24, 7), vec![4, 6])], &|t, d| {
        nll_loss(&t[0].log_softmax(1).unwrap(), &targets(d), Reduction::Mean).unwrap()
    });
    for (reduction, ls) in [
        (Reduction::None, 0.0),
        (Reduction::Mean, 0.25),
        (Reduction::Sum, 1.0),
    ] {
        let options = CrossEntropyOptions {
            reduction,
            label_smoothing: ls,
            ignore_index: -100,
        };
        loss_parity(
            "cross_entropy",
            &gpu,
            &[(sample(24, 8), vec![4, 6])],
            &|t, d| cross_entropy(&t[0], &targets(d), options).unwrap(),
        );
    }
    // [N, C, d] logits and probability targets.
    let kdim = |d: &Device| Tensor::from_vec(vec![0i32, 2, 1, 2, 0, 1], &[2, 3], d).unwrap();
    loss_parity(
        "cross_entropy K-dim",
        &gpu,
        &[(sample(18, 9), vec![2, 3, 3])],
        &|t, d| cross_entropy(&t[0], &kdim(d), CrossEntropyOptions::default()).unwrap(),
    );
    let soft: Vec<f32> = sample(24, 10).iter().map(|v| v.abs()).collect();
    loss_parity(
        "cross_entropy soft",
        &gpu,
        &[(sample(24, 11), vec![4, 6]), (soft, vec![4, 6])],
        &|t, _| cross_entropy(&t[0], &t[1].detach(), CrossEntropyOptions::default()).unwrap(),
    );
}

#[test]
fn out_of_range_target_fails_the_readback() {
    if gpu().is_none() {
        return;
    }
    // A private device: the fault is per device, and tests on the shared one
    // run in parallel.
    let own = Device::Gpu(wgrad_gpu::GpuDevice::new().unwrap());
    let x = Tensor::zeros(&[2, 3], &own)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let y = Tensor::from_vec(vec![1i32, 3], &[2], &own).unwrap();
    let loss = cross_entropy(&x, &y, CrossEntropyOptions::default()).unwrap();
    let e = loss.item().unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 3,
                size: 3,
                ..
            }
        ),
        "{e}"
    );
    // The error names the op and the fault resets.
    assert!(e.to_string().contains("cross_entropy"), "{e}");
    let ok = Tensor::from_vec(vec![1i32, 2], &[2], &own).unwrap();
    assert!(
        cross_entropy(&x, &ok, CrossEntropyOptions::default())
            .unwrap()
            .item()
            .unwrap()
            .is_finite()
    );
}
