//! The GPU execution model, measured through `DeviceStats`: a training step
//! (forward, backward, optimizer step) reads nothing back, and after warm-up
//! creates no buffers, bind groups or pipelines and submits only in the
//! recorder's own chunks and when the loss is read.

use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
use wgrad_autograd::{Device, Tensor};
use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad_nn::{Linear, Module, ReLU, Sequential};
use wgrad_test_support::own_gpu;

#[test]
fn training_step_is_readback_free_and_allocation_free_after_warm_up() {
    let Some(gpu) = own_gpu() else { return };
    let device = Device::Gpu(gpu.clone());
    wgrad_autograd::manual_seed(3);
    let model = Sequential::new()
        .add(Linear::new(32, 64, true, &device).unwrap())
        .add(ReLU::new())
        .add(Linear::new(64, 10, true, &device).unwrap());
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    let x = Tensor::randn_with(&[16, 32], 0.0, 1.0, 1, &device).unwrap();
    let y = Tensor::from_vec(
        (0..16).map(|i| i % 10).collect::<Vec<i32>>(),
        &[16],
        &device,
    )
    .unwrap();
    let step = |opt: &mut Adam| {
        opt.zero_grad();
        let loss = cross_entropy(
            &model.forward(&x).unwrap(),
            &y,
            CrossEntropyOptions::default(),
        )
        .unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
        loss
    };

    // Warm-up runs the loop exactly as measured below (the previous step's
    // loss alive while the next step runs; backward has already freed its
    // graph), so the pool and the bind-group cache see the same pattern.
    // Buffers settle after 3 steps; the bind groups of the 4th step's
    // pattern are new once (4 steps of warm-up, measured on lavapipe).
    let before_any = gpu.stats();
    let mut last = None;
    for _ in 0..4 {
        last = Some(step(&mut opt));
    }
    let warm_up = gpu.stats().since(&before_any);
    assert_eq!(
        warm_up.readbacks, 0,
        "forward/backward/step must not read back: {warm_up:?}"
    );
    gpu.synchronize().unwrap();

    let steady_start = gpu.stats();
    for _ in 0..3 {
        last = Some(step(&mut opt));
    }
    let steady = gpu.stats().since(&steady_start);
    assert_eq!(steady.readbacks, 0, "{steady:?}");
    assert_eq!(steady.bytes_downloaded, 0, "{steady:?}");
    assert_eq!(
        steady.bytes_uploaded, 0,
        "no host data goes up in a step: {steady:?}"
    );
    assert_eq!(
        steady.buffers_created, 0,
        "pool must serve every buffer: {steady:?}"
    );
    assert_eq!(
        steady.bind_groups_created, 0,
        "bind groups must come from the cache: {steady:?}"
    );
    assert_eq!(steady.pipelines_created, 0, "{steady:?}");
    // The recorder's own chunked submits only (after 16 pending
    // dispatches, then 32), none for data: 21 dispatches, one submit.
    assert_eq!(steady.submits, 1, "{steady:?}");
    assert!(steady.dispatches > 0);
    // The dispatch budget of this step, 7: forward linear + relu (one
    // pass: the Sequential fuses them), linear, the cross-entropy and its
    // mean (one pass for a batch this small, which also writes backward's
    // seed and the logits' gradient for it); backward linear 2's input
    // gradient (with linear 1's ReLU mask in its store) and its weight +
    // bias gradients (one product), linear 1's weight + bias gradients
    // (one product); one multi-tensor Adam dispatch for all four
    // parameters. A pass added to any of them fails here.
    assert_eq!(steady.dispatches, 3 * 7, "{steady:?}");

    let loss = last.unwrap().item().unwrap();
    assert!(loss.is_finite());
    let with_read = gpu.stats().since(&steady_start);
    assert_eq!(with_read.readbacks, 1, "{with_read:?}");
    assert_eq!(
        with_read.submits, 2,
        "the chunk after 16 dispatches, and the rest for the readback: {with_read:?}"
    );
}
