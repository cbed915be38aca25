//! The GPU device layer under a real training loop, through `DeviceStats`:
//! uploads of a batch per step do not pile up in the pool when nothing is
//! read back per step, and a bad embedding id is reported as the lookup
//! (the op the user called), not as its backward `index_add`.

use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use wgrad_autograd::{Device, Tensor};
use wgrad_core::Error;
use wgrad_nn::data::DataLoader;
use wgrad_nn::data::synthetic::digits;
use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad_nn::{Embedding, Linear, Module, ReLU, Sequential};
use wgrad_test_support::own_gpu;

#[test]
fn training_without_per_step_readback_does_not_pile_up_uploads() {
    let Some(gpu) = own_gpu() else { return };
    let device = Device::Gpu(gpu.clone());
    wgrad_autograd::manual_seed(5);
    let data = digits(64 * 40, 5);
    let model = Sequential::new()
        .add(Linear::new(784, 64, true, &device).unwrap())
        .add(ReLU::new())
        .add(Linear::new(64, 10, true, &device).unwrap());
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    let loader = DataLoader::new(&data, 64).unwrap().shuffle(5);
    let mut max_cached = 0;
    let mut created_in_second_epoch = 0;
    for epoch in 0..2 {
        // Accumulated on the device: no readback inside the epoch.
        let mut loss_sum = Tensor::zeros(&[], &device).unwrap();
        for batch in loader.epoch(epoch, &device) {
            let before = gpu.stats();
            let (x, y) = batch.unwrap();
            let loss = cross_entropy(
                &model.forward(&x).unwrap(),
                &y,
                CrossEntropyOptions::default(),
            )
            .unwrap();
            opt.zero_grad();
            loss.backward().unwrap();
            opt.step().unwrap();
            loss_sum = loss_sum.add(&loss.detach()).unwrap();
            let s = gpu.stats();
            max_cached = max_cached.max(s.cached_bytes);
            if epoch == 1 {
                created_in_second_epoch += s.since(&before).buffers_created;
            }
        }
        assert!(loss_sum.item().unwrap().is_finite());
    }
    let s = gpu.stats();
    eprintln!(
        "40 steps x 2 epochs: peak live {:.2} MB, max cached {:.2} MB ({:.2}x), \
         buffers created in epoch 2: {created_in_second_epoch}, {s:?}",
        s.peak_live_bytes as f64 / 1e6,
        max_cached as f64 / 1e6,
        max_cached as f64 / s.peak_live_bytes as f64
    );
    assert!(
        max_cached <= 2 * s.peak_live_bytes,
        "the pool cached {max_cached} bytes for a peak of {} live",
        s.peak_live_bytes
    );
    assert_eq!(
        created_in_second_epoch, 0,
        "each step's batch upload must reuse a pool buffer"
    );
}

#[test]
fn bad_embedding_id_is_reported_as_the_lookup() {
    let Some(gpu) = own_gpu() else { return };
    let device = Device::Gpu(gpu);
    let emb = Embedding::new(10, 4, &device).unwrap();
    let mut opt = Sgd::new(emb.parameters(), SgdConfig::new(0.1)).unwrap();
    let ids = Tensor::from_vec(vec![3i32, 12, 0], &[3], &device).unwrap();
    // Forward (index_select), backward (index_add over the same ids) and an
    // optimizer step are all recorded before the loss is read.
    let loss = emb.forward(&ids).unwrap().sum_all().unwrap();
    opt.zero_grad();
    loss.backward().unwrap();
    opt.step().unwrap();
    match loss.item().unwrap_err() {
        Error::IndexOutOfRange { op, index, size } => {
            assert_eq!((op, index, size), ("index_select", 12, 10));
        }
        other => panic!("expected IndexOutOfRange from the lookup, got {other}"),
    }
}
