//! XOR: the smallest network that needs a hidden layer.
//!
//! `cargo run --release --example xor -- --device cpu --epochs 30`

mod common;

use wgrad::nn::data::Dataset;
use wgrad::nn::{Linear, Sequential, Tanh};
use wgrad::optim::{Adam, AdamConfig};
use wgrad::prelude::*;

/// Noisy copies of the four XOR corners.
fn xor_points(n: usize, seed: u64) -> Result<Dataset> {
    let noise = Tensor::randn_with(&[n, 2], 0.0, 0.1, seed, &Device::Cpu)?.to_vec_f32()?;
    let mut features = Vec::with_capacity(2 * n);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (i % 2, (i / 2) % 2);
        features.push(a as f32 + noise[2 * i]);
        features.push(b as f32 + noise[2 * i + 1]);
        labels.push((a ^ b) as i32);
    }
    Dataset::new(features, &[2], labels)
}

fn main() {
    let flags = common::parse_flags(30, 32, 0.05);
    common::exit_on_error(run(&flags));
}

fn run(flags: &common::Flags) -> Result<()> {
    let device = &flags.device;
    let mut model = Sequential::new()
        .add(Linear::new(2, 8, true, device)?)
        .add(Tanh::new())
        .add(Linear::new(8, 2, true, device)?);
    let mut opt = Adam::new(
        wgrad::nn::Module::parameters(&model),
        AdamConfig {
            lr: flags.lr,
            ..Default::default()
        },
    )?;
    let train = xor_points(512, flags.seed)?;
    let test = xor_points(256, flags.seed + 1)?;
    common::train(&mut model, &mut opt, &train, &test, "test", flags)?;
    Ok(())
}
