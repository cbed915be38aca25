//! The 28x28 digit tasks of `mnist`, `cnn` and `infer`: their data (MNIST
//! from a directory, or procedurally drawn digits that need no download)
//! and their two classifiers (`infer` rebuilds whichever one a checkpoint
//! holds).

use std::path::Path;

use wgrad::nn::data::{Dataset, mnist, synthetic};
use wgrad::nn::{Conv2d, Dropout, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential};
use wgrad::prelude::*;

/// The training and test sets: MNIST from `dir` (the IDX files, `.gz` or
/// not) when given, else `n_train` and `n_test` synthetic digits drawn
/// from `seed`. Prints which.
pub fn load(
    dir: Option<&Path>,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(Dataset, Dataset)> {
    match dir {
        Some(dir) => {
            println!("data: MNIST from {}", dir.display());
            Ok((mnist::load(dir, true)?, mnist::load(dir, false)?))
        }
        None => {
            println!(
                "data: {n_train} synthetic training digits, {n_test} test digits (--data DIR for MNIST)"
            );
            Ok(synthetic::digits_split(n_train, n_test, seed))
        }
    }
}

/// `mnist`'s MLP, laid out as torch's `nn.Sequential(nn.Linear(784, 256),
/// nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))`:
/// parameters `0.*`, `2.*`, `4.*`, as in its state_dict.
pub fn mlp(device: &Device) -> Result<Sequential> {
    Ok(Sequential::new()
        .add(Linear::new(784, 256, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(256, 256, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(256, 10, true, device)?))
}

/// The PyTorch MNIST example's `Net` (conv 32 3x3, conv 64 3x3, max-pool 2,
/// dropout 0.25, linear 9216-128, dropout 0.5, linear 128-10), as a
/// Sequential whose parameter names are mapped to the tutorial's attribute
/// names (`conv1.weight`, `fc2.bias`, ...).
pub struct Net {
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
    pub fn new(device: &Device) -> Result<Net> {
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
