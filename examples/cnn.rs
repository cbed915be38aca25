//! The PyTorch MNIST example's convolutional net (conv 32 3x3, conv 64 3x3,
//! max-pool 2, dropout 0.25, linear 9216-128, dropout 0.5, linear 128-10),
//! trained with Adam and StepLR on procedurally drawn 28x28 digits (no
//! download), or on MNIST with `--data DIR`.
//!
//! `cargo run --release --example cnn` (add `--device gpu` for the GPU).
//!
//! The parameters carry PyTorch's names (`conv1.weight`, `fc1.bias`, ...):
//! `--save FILE` writes a state_dict that `model.load_state_dict(
//! safetensors.torch.load_file(FILE))` reads into the PyTorch example's
//! `Net`, and `--resume FILE` loads one written by it.

mod common;

use wgrad::nn::data::{mnist, synthetic};
use wgrad::nn::{
    Conv2d, Dropout, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential, state_dict,
};
use wgrad::optim::{Adam, AdamConfig, LrScheduler, Optimizer, StepLR};
use wgrad::prelude::*;

/// The tutorial's `Net`, as a Sequential whose parameter names are mapped to
/// the tutorial's attribute names.
struct Net {
    body: Sequential,
    training: bool,
}

/// Sequential index -> the PyTorch attribute name of that layer.
const NAMES: [(&str, &str); 4] = [
    ("0.", "conv1."),
    ("2.", "conv2."),
    ("7.", "fc1."),
    ("10.", "fc2."),
];

impl Net {
    fn new(device: &Device) -> Result<Net> {
        Ok(Net {
            body: Sequential::new()
                .add(Conv2d::new(1, 32, 3, device)?)
                .add(ReLU::new())
                .add(Conv2d::new(32, 64, 3, device)?)
                .add(ReLU::new())
                .add(MaxPool2d::new(2))
                .add(Dropout::new(0.25)?)
                .add(Flatten::new())
                .add(Linear::new(9216, 128, true, device)?)
                .add(ReLU::new())
                .add(Dropout::new(0.5)?)
                .add(Linear::new(128, 10, true, device)?),
            training: true,
        })
    }
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // The datasets hold flat 784-pixel rows; the convolutions want images.
        let images = x.reshape(&[-1, 1, 28, 28])?;
        self.body.forward(&images)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.body
            .named_parameters()
            .into_iter()
            .map(|(name, t)| {
                let renamed = NAMES
                    .iter()
                    .find(|(index, _)| name.starts_with(index))
                    .map(|(index, attr)| name.replacen(index, attr, 1))
                    .unwrap_or(name);
                (renamed, t)
            })
            .collect()
    }
    fn train(&mut self, on: bool) {
        self.training = on;
        self.body.train(on);
    }
    fn is_training(&self) -> bool {
        self.training
    }
    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.body.to_device(device)
    }
}

fn main() {
    let flags = common::parse_flags_with_checkpoints(3, 64, 1e-3);
    common::exit_on_error(run(&flags));
}

fn run(flags: &common::Flags) -> Result<()> {
    let device = &flags.device;
    manual_seed(flags.seed);
    let (train, test) = match &flags.data {
        Some(dir) => {
            println!("data: MNIST from {dir}");
            (mnist::load(dir, true)?, mnist::load(dir, false)?)
        }
        None => {
            println!("data: synthetic digits (pass --data DIR for MNIST)");
            // --train-size (quick runs) shrinks the test set with it.
            let test_size = flags.train_size.map_or(2_000, |n| (n / 4).clamp(64, 2_000));
            synthetic::digits_split(flags.train_size.unwrap_or(10_000), test_size, flags.seed)
        }
    };
    let mut model = Net::new(device)?;
    if let Some(path) = &flags.resume {
        state_dict::load(&model, path)?;
        println!("loaded weights from {path}");
    }
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: flags.lr,
            ..Default::default()
        },
    )?;
    // The tutorial decays the rate by 0.7 every epoch.
    let mut scheduler = StepLR::new(&mut opt, 1, 0.7)?;
    common::train_with_epoch_hook(
        &mut model,
        &mut opt,
        &train,
        &test,
        "test",
        flags,
        0,
        &mut |opt: &mut dyn Optimizer| scheduler.step(opt),
    )?;
    if let Some(path) = &flags.save {
        state_dict::save(&model, path)?;
        println!("saved the state_dict to {path}");
    }
    Ok(())
}
