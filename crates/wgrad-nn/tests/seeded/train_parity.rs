//! The same model, seed and data trained for 20 steps on the CPU and on the
//! GPU gives the same losses (same init and RNG on both devices).

use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
use wgrad_autograd::{Device, Tensor, manual_seed};
use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad_nn::{Dropout, GELU, Linear, Module, ReLU, Sequential};
use wgrad_test_support::{gpu, seed_lock};

fn losses(device: &Device) -> Vec<f32> {
    let _seed = seed_lock();
    manual_seed(42);
    let mut model = Sequential::new()
        .add(Linear::new(16, 32, true, device).unwrap())
        .add(ReLU::new())
        .add(Dropout::new(0.1).unwrap())
        .add(Linear::new(32, 32, true, device).unwrap())
        .add(GELU::new())
        .add(Linear::new(32, 4, true, device).unwrap());
    model.train(true);
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 1e-2,
            ..Default::default()
        },
    )
    .unwrap();
    let x = Tensor::randn_with(&[24, 16], 0.0, 1.0, 7, device).unwrap();
    let y = Tensor::from_vec(
        (0..24).map(|i: i32| i * 7 % 4).collect::<Vec<_>>(),
        &[24],
        device,
    )
    .unwrap();
    (0..20)
        .map(|_| {
            opt.zero_grad();
            let loss = cross_entropy(
                &model.forward(&x).unwrap(),
                &y,
                CrossEntropyOptions::default(),
            )
            .unwrap();
            loss.backward().unwrap();
            opt.step().unwrap();
            loss.item().unwrap()
        })
        .collect()
}

#[test]
fn twenty_steps_agree_on_cpu_and_gpu() {
    let Some(gpu) = gpu() else { return };
    let on_cpu = losses(&Device::Cpu);
    let on_gpu = losses(&gpu);
    assert!(
        on_cpu[19] < on_cpu[0] * 0.5,
        "training must make progress: {on_cpu:?}"
    );
    // Tolerance: f32 kernels that sum in different orders drift by ~1e-6 per
    // step; 20 Adam steps stay well inside 1e-3 relative.
    for (step, (c, g)) in on_cpu.iter().zip(&on_gpu).enumerate() {
        assert!(
            (c - g).abs() <= 1e-3 * c.abs().max(1e-3),
            "step {step}: cpu {c} gpu {g}\ncpu {on_cpu:?}\ngpu {on_gpu:?}"
        );
    }
}
