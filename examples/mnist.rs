//! An MLP on MNIST (`--data DIR` with the IDX files) or, when no data is
//! given, on procedurally drawn 28x28 digits that need no download.
//!
//! `cargo run --release --example mnist`

mod common;

use wgrad::nn::data::{mnist, synthetic};
use wgrad::nn::{Linear, ReLU, Sequential};
use wgrad::optim::{Adam, AdamConfig};
use wgrad::prelude::*;

fn main() {
    let flags = common::parse_flags(3, 128, 1e-3);
    common::exit_on_error(run(&flags));
}

fn run(flags: &common::Flags) -> Result<()> {
    let device = &flags.device;
    let (train, test) = match &flags.data {
        Some(dir) => {
            println!("data: MNIST from {dir}");
            (mnist::load(dir, true)?, mnist::load(dir, false)?)
        }
        None => {
            println!("data: synthetic digits (pass --data DIR for MNIST)");
            synthetic::digits_split(20_000, 2_000, flags.seed)
        }
    };
    let mut model = Sequential::new()
        .add(Linear::new(784, 256, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(256, 256, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(256, 10, true, device)?);
    let mut opt = Adam::new(
        wgrad::nn::Module::parameters(&model),
        AdamConfig {
            lr: flags.lr,
            ..Default::default()
        },
    )?;
    common::train(&mut model, &mut opt, &train, &test, "test", flags)?;
    Ok(())
}
