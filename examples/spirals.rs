//! An MLP on two interleaved spirals (a classic non-linear toy problem).
//!
//! `cargo run --release --example spirals -- --device gpu`

mod common;

use clap::Parser;
use wgrad::nn::data::{DataLoader, synthetic};
use wgrad::nn::{Linear, Module, ReLU, Sequential};
use wgrad::optim::{Adam, AdamConfig};

/// Two interleaved spirals, separated by a 2-128-128-2 MLP.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    train: common::TrainArgs,
    #[command(flatten)]
    output: common::OutputArgs,
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[("epochs", "60"), ("batch_size", "64"), ("lr", "0.01")]);
    let device = &args.device.setup()?;
    let mut model = Sequential::new()
        .add(Linear::new(2, 128, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(128, 128, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(128, 2, true, device)?);
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: args.train.lr,
            ..Default::default()
        },
    )?;
    // The same two spirals, with noise drawn from other seeds for the test points.
    let seed = args.device.seed;
    let train = synthetic::two_spirals(500, 0.05, seed);
    let test = synthetic::two_spirals(250, 0.05, seed ^ 0x7465_7374);
    let loader = DataLoader::new(&train, args.train.batch_size)?.shuffle(seed);
    let epochs = args.train.epochs;
    let mut run = common::Run::new("spirals", epochs, &args.output)?;
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
