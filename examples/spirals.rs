//! An MLP on two interleaved spirals (a classic non-linear toy problem).
//!
//! `cargo run --release --example spirals -- --device gpu`

mod common;

use wgrad::nn::data::synthetic;
use wgrad::nn::{Linear, ReLU, Sequential};
use wgrad::optim::{Adam, AdamConfig};
use wgrad::prelude::*;

fn main() {
    let flags = common::parse_flags(60, 64, 0.01);
    common::exit_on_error(run(&flags));
}

fn run(flags: &common::Flags) -> Result<()> {
    let device = &flags.device;
    let mut model = Sequential::new()
        .add(Linear::new(2, 128, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(128, 128, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(128, 2, true, device)?);
    let mut opt = Adam::new(
        wgrad::nn::Module::parameters(&model),
        AdamConfig {
            lr: flags.lr,
            ..Default::default()
        },
    )?;
    let data = synthetic::two_spirals(500, 0.05, flags.seed);
    // The target is fitting the spirals: report accuracy on the training set.
    common::train(&mut model, &mut opt, &data, &data, "train", flags)?;
    Ok(())
}
