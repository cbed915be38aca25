//! XOR: the smallest network that needs a hidden layer.
//!
//! `cargo run --release --example xor -- --device cpu --epochs 30`

mod common;

use clap::Parser;
use wgrad::nn::data::{DataLoader, Dataset};
use wgrad::nn::{Linear, Module, Sequential, Tanh};
use wgrad::optim::{Adam, AdamConfig};
use wgrad::prelude::*;

/// XOR: a 2-8-2 MLP learns the four noisy corners of the unit square.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    train: common::TrainArgs,
    #[command(flatten)]
    output: common::OutputArgs,
}

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

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[("epochs", "30"), ("batch_size", "32"), ("lr", "0.05")]);
    let device = &args.device.setup()?;
    let mut model = Sequential::new()
        .add(Linear::new(2, 8, true, device)?)
        .add(Tanh::new())
        .add(Linear::new(8, 2, true, device)?);
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: args.train.lr,
            ..Default::default()
        },
    )?;
    let train = xor_points(512, args.device.seed)?;
    let test = xor_points(256, args.device.seed + 1)?;
    let loader = DataLoader::new(&train, args.train.batch_size)?.shuffle(args.device.seed);
    let epochs = args.train.epochs;
    let mut run = common::Run::new("xor", epochs, &args.output)?;
    let mut amp = common::Amp::new(args.train.amp);
    for epoch in 0..epochs {
        let stats = common::train_epoch(
            &mut model, &mut opt, &mut amp, &loader, epoch, epochs, device,
        )?;
        let test_result = common::evaluate(&mut model, &test, 256, device)?;
        run.end_epoch(epoch, &stats, test_result, &model, &opt)?;
    }
    run.finish();
    Ok(())
}
