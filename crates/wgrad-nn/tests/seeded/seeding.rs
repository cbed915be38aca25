//! `manual_seed` makes initialisation and dropout reproducible. The default
//! generator is process-wide, so every test of this binary that draws from
//! it holds `seed_lock()` (parallel draws would interleave).

use wgrad_autograd::{Device, Tensor, manual_seed};
use wgrad_nn::{Dropout, Embedding, Linear, Module, init};
use wgrad_test_support::seed_lock;

fn draw() -> Vec<Vec<f32>> {
    let l = Linear::new(5, 3, true, &Device::Cpu).unwrap();
    let e = Embedding::new(4, 2, &Device::Cpu).unwrap();
    let w = Tensor::zeros(&[3, 3], &Device::Cpu).unwrap();
    init::xavier_normal_(&w, 1.0).unwrap();
    let mask = Dropout::new(0.5)
        .unwrap()
        .forward(&Tensor::ones(&[16], &Device::Cpu).unwrap())
        .unwrap();
    [&l.weight, l.bias.as_ref().unwrap(), &e.weight, &w, &mask]
        .iter()
        .map(|t| t.to_vec_f32().unwrap())
        .collect()
}

#[test]
fn manual_seed_reproduces_init_and_dropout() {
    let _seed = seed_lock();
    manual_seed(42);
    let a = draw();
    manual_seed(42);
    let b = draw();
    assert_eq!(a, b);
    manual_seed(43);
    let c = draw();
    for (x, y) in a.iter().zip(&c) {
        assert_ne!(x, y, "a different seed must draw different values");
    }
}
