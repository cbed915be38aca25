//! The 28x28 digit tasks of `mnist`, `cnn` and `infer`: their data (MNIST
//! from a directory, or procedurally drawn digits that need no download)
//! and their two classifiers (`infer` rebuilds whichever one a checkpoint
//! holds).

use std::path::Path;

use wgrad::nn::data::{Dataset, mnist, synthetic};
use wgrad::nn::{Conv2d, Dropout, Linear, MaxPool2d, Module, ReLU, Sequential};
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

/// The PyTorch MNIST example's `Net`, field for field, so its parameters
/// carry the tutorial's names (`conv1.weight`, `fc2.bias`, ...): conv 32
/// 3x3, conv 64 3x3, max-pool 2, dropout 0.25, linear 9216-128, dropout
/// 0.5, linear 128-10.
#[derive(Module)]
pub struct Net {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    dropout1: Dropout,
    dropout2: Dropout,
    fc1: Linear,
    fc2: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Result<Net> {
        Ok(Net {
            conv1: Conv2d::new(1, 32, 3, device)?,
            conv2: Conv2d::new(32, 64, 3, device)?,
            pool: MaxPool2d::new(2),
            dropout1: Dropout::new(0.25)?,
            dropout2: Dropout::new(0.5)?,
            fc1: Linear::new(9216, 128, true, device)?,
            fc2: Linear::new(128, 10, true, device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // The datasets hold flat 784-pixel rows; the convolutions want images.
        let x = x.reshape(&[-1, 1, 28, 28])?;
        let x = self.conv1.forward(&x)?.relu()?;
        let x = self.conv2.forward(&x)?.relu()?;
        let x = self.dropout1.forward(&self.pool.forward(&x)?)?;
        let x = self.fc1.forward(&x.flatten(1)?)?.relu()?;
        self.fc2.forward(&self.dropout2.forward(&x)?)
    }
}
