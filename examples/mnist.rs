//! An MLP on MNIST (`--data DIR` with the IDX files) or, when no data is
//! given, on procedurally drawn 28x28 digits that need no download.
//!
//! `cargo run --release --example mnist`
//!
//! Checkpoints: `--save FILE` writes the model, the Adam state and the epoch
//! count after training; `--resume FILE` restores them before training and
//! carries on from the next epoch up to `--epochs` in all (`--epochs 3 --save
//! run.safetensors`, then `--epochs 5 --resume run.safetensors` trains epochs
//! 4 and 5, with the numbers an uninterrupted 5-epoch run gives).
//!
//! `--resume` also takes a plain state_dict, e.g. one saved from PyTorch for
//! the equivalent model:
//!
//! ```python
//! model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256),
//!                       nn.ReLU(), nn.Linear(256, 10))
//! # ... train ...
//! safetensors.torch.save_file(model.state_dict(), "torch_mnist.safetensors")
//! ```
//!
//! loads with `wgrad::nn::state_dict::load` (same names, shapes and float32),
//! and training then starts at epoch 1 with a fresh optimizer. The other way
//! round, the model part of a checkpoint saved here loads into that torch
//! model with `model.load_state_dict({k: v for k, v in
//! safetensors.torch.load_file(f).items() if not k.startswith("optim.")},
//! strict=True)` (the `optim.*` tensors are Adam's state).

mod common;

use wgrad::nn::checkpoint;
use wgrad::nn::data::{mnist, synthetic};
use wgrad::nn::state_dict;
use wgrad::nn::{Linear, ReLU, Sequential};
use wgrad::optim::{Adam, AdamConfig, Optimizer};
use wgrad::prelude::*;

fn main() {
    let flags = common::parse_flags_with_checkpoints(3, 128, 1e-3);
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
    // The layout of torch's `nn.Sequential(Linear, ReLU, Linear, ReLU,
    // Linear)`: parameters `0.*`, `2.*`, `4.*`, as in its state_dict.
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
    let start_epoch = match &flags.resume {
        Some(path) if checkpoint::is_checkpoint(path)? => {
            let done = checkpoint::load(path, &model, &mut opt)?;
            println!("resumed from {path}: {done} epoch(s) done, lr {}", opt.lr());
            usize::try_from(done).unwrap_or(usize::MAX)
        }
        Some(path) => {
            state_dict::load(&model, path)?;
            println!("loaded weights from {path} (a state_dict: fresh optimizer)");
            0
        }
        None => 0,
    };
    if start_epoch >= flags.epochs {
        println!(
            "nothing to train: {start_epoch} epoch(s) done, --epochs {}",
            flags.epochs
        );
    }
    common::train_from(
        &mut model,
        &mut opt,
        &train,
        &test,
        "test",
        flags,
        start_epoch,
    )?;
    if let Some(path) = &flags.save {
        let epochs_done = flags.epochs.max(start_epoch) as u64;
        checkpoint::save(path, &model, &opt, epochs_done)?;
        println!("saved checkpoint to {path} ({epochs_done} epoch(s) done)");
    }
    Ok(())
}
