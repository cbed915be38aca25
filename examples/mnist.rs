//! An MLP on MNIST (`--data DIR` with the IDX files, `.gz` as downloaded or
//! not) or, when no data is given, on procedurally drawn 28x28 digits that
//! need no download.
//!
//! `cargo run --release --example mnist`
//!
//! `--out DIR` writes `metrics.csv` and `metrics.png` (loss and accuracy per
//! epoch). Checkpoints: `--save FILE` writes the model, the Adam state and
//! the epoch count after every epoch (and the best epoch's weights to
//! `FILE` with `.best` before the extension, which the `infer` example
//! loads); `--resume FILE` restores them before training and carries on from
//! the next epoch up to `--epochs` in all (`--epochs 3 --save
//! run.safetensors`, then `--epochs 5 --resume run.safetensors` trains
//! epochs 4 and 5, with the numbers an uninterrupted 5-epoch run gives).
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
//! round, the `.best` file loads into that torch model with
//! `model.load_state_dict(safetensors.torch.load_file(f))`, and the model
//! part of a checkpoint with `model.load_state_dict({k: v for k, v in
//! safetensors.torch.load_file(f).items() if not k.startswith("optim.")})`
//! (the `optim.*` tensors are Adam's state).

mod common;

use std::path::PathBuf;

use clap::Parser;
use common::digits;
use wgrad::nn::data::DataLoader;
use wgrad::nn::{Module, checkpoint, state_dict};
use wgrad::optim::{Adam, AdamConfig, Optimizer};

/// An MLP (784-256-256-10) on MNIST-like digits.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    train: common::TrainArgs,
    #[command(flatten)]
    output: common::OutputArgs,

    /// Directory with the MNIST IDX files (`.gz` or not; torchvision's
    /// `MNIST/raw` layout works too); without it, synthetic digits
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,

    /// Train on N synthetic digits (the test set has N/10)
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    train_size: usize,

    /// Start from a checkpoint of --save (carrying on after its epochs) or
    /// from a state_dict (weights only)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[("epochs", "3"), ("batch_size", "128"), ("lr", "1e-3")]);
    let device = &args.device.setup()?;
    let (n_train, seed) = (args.train_size, args.device.seed);
    let (train, test) = digits::load(args.data.as_deref(), n_train, n_train / 10, seed)?;

    let mut model = digits::mlp(device)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: args.train.lr,
            ..Default::default()
        },
    )?;
    let start_epoch = match &args.resume {
        Some(path) if checkpoint::is_checkpoint(path)? => {
            let done = checkpoint::load(path, &model, &mut opt)?;
            println!(
                "resumed from {}: {done} epoch(s) done, lr {}",
                path.display(),
                opt.lr()
            );
            usize::try_from(done)?
        }
        Some(path) => {
            state_dict::load(&model, path)?;
            println!(
                "loaded weights from {} (a state_dict: fresh optimizer)",
                path.display()
            );
            0
        }
        None => 0,
    };
    let epochs = args.train.epochs;
    if start_epoch >= epochs {
        println!("nothing to train: {start_epoch} epoch(s) done, --epochs {epochs}");
    }

    let loader = DataLoader::new(&train, args.train.batch_size)?.shuffle(seed);
    let mut run = common::Run::new("mnist", epochs, &args.output)?;
    let mut amp = common::Amp::new(args.train.amp);
    for epoch in start_epoch..epochs {
        let stats = common::train_epoch(
            &mut model, &mut opt, &mut amp, &loader, epoch, epochs, device,
        )?;
        let test_result = common::evaluate(&mut model, &test, 1024, device)?;
        run.end_epoch(epoch, &stats, test_result, &model, &opt)?;
    }
    if run.is_empty() {
        // Resumed with nothing left to train: report the loaded model.
        let (loss, accuracy) = common::evaluate(&mut model, &test, 1024, device)?;
        println!("final: loss={loss:.4} accuracy={accuracy:.4}");
    } else {
        run.finish();
    }
    Ok(())
}
