//! The PyTorch MNIST example's convolutional net (conv 32 3x3, conv 64 3x3,
//! max-pool 2, dropout 0.25, linear 9216-128, dropout 0.5, linear 128-10),
//! trained with Adam, gradient clipping and StepLR on procedurally drawn
//! 28x28 digits (no download), or on MNIST with `--data DIR`.
//!
//! `cargo run --release --example cnn` (add `--device gpu` for the GPU).
//!
//! The parameters carry PyTorch's names (`conv1.weight`, `fc1.bias`, ...):
//! the best epoch's weights that `--save FILE` writes to `FILE` with `.best`
//! before the extension are a state_dict that `model.load_state_dict(
//! safetensors.torch.load_file(path))` reads into the PyTorch example's
//! `Net`; `--resume FILE` loads one written by it (or the weights of a
//! checkpoint written by `--save`).

mod common;

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use common::digits::{self, Net};
use common::progress::Progress;
use common::train::EpochStats;
use wgrad::nn::data::DataLoader;
use wgrad::nn::loss::cross_entropy;
use wgrad::nn::{Module, state_dict};
use wgrad::optim::{Adam, AdamConfig, LrScheduler, Optimizer, StepLR, clip_grad_norm_};
use wgrad::prelude::*;

/// The PyTorch MNIST example's conv net on MNIST-like digits.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    train: common::TrainArgs,
    #[command(flatten)]
    output: common::OutputArgs,

    /// Directory with the MNIST IDX files (`.gz` or not); without it,
    /// synthetic digits
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,

    /// Train on N synthetic digits (the test set has N/4, at most 2000)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    train_size: usize,

    /// Learning-rate decay per epoch (StepLR's gamma)
    #[arg(long, default_value_t = 0.7)]
    gamma: f64,

    /// Clip the gradients' global L2 norm to this before each step
    #[arg(long, value_name = "NORM", default_value_t = 1.0)]
    max_grad_norm: f64,

    /// Start from these weights (a state_dict, e.g. saved by PyTorch's
    /// example, or a checkpoint of --save)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
}

/// One epoch, as the tutorial's `train()`: forward, loss, backward, clip,
/// step. The progress bar sums the loss on the device (no readback per batch).
fn train(
    args: &Cli,
    model: &mut Net,
    opt: &mut Adam,
    amp: &mut common::Amp,
    loader: &DataLoader<'_>,
    epoch: usize,
    device: &Device,
) -> Result<EpochStats> {
    let start = Instant::now();
    let lr = opt.lr();
    model.train(true);
    let params = model.parameters();
    let mut progress = Progress::epoch(epoch, args.train.epochs, loader.num_batches(), device)?;
    for batch in loader.epoch(epoch as u64, device) {
        let (data, target) = batch?;
        let region = amp.autocast()?;
        let output = model.forward(&data)?;
        let loss = cross_entropy(&output, &target, Default::default())?;
        drop(region);
        opt.zero_grad();
        amp.backward(&loss)?;
        amp.unscale(opt)?;
        clip_grad_norm_(&params, args.max_grad_norm, 2.0)?;
        amp.step(opt)?;
        progress.batch(&loss, &output, &target)?;
    }
    let totals = progress.finish()?;
    Ok(EpochStats {
        loss: totals.loss,
        accuracy: totals.accuracy,
        lr,
        samples: totals.samples,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[("epochs", "3"), ("batch_size", "64"), ("lr", "1e-3")]);
    let device = &args.device.setup()?;
    let n_test = (args.train_size / 4).clamp(64, 2_000);
    let (train_set, test_set) = digits::load(
        args.data.as_deref(),
        args.train_size,
        n_test,
        args.device.seed,
    )?;

    let mut model = Net::new(device)?;
    if let Some(path) = &args.resume {
        state_dict::load(&model, path)?;
        println!("loaded weights from {}", path.display());
    }
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: args.train.lr,
            ..Default::default()
        },
    )?;
    // The tutorial decays the rate by 0.7 every epoch.
    let mut scheduler = StepLR::new(&mut opt, 1, args.gamma)?;

    let loader = DataLoader::new(&train_set, args.train.batch_size)?.shuffle(args.device.seed);
    let mut run = common::Run::new("cnn", args.train.epochs, &args.output)?;
    let mut amp = common::Amp::new(args.train.amp);
    for epoch in 0..args.train.epochs {
        let stats = train(
            &args, &mut model, &mut opt, &mut amp, &loader, epoch, device,
        )?;
        let test_result = common::evaluate(&mut model, &test_set, 1000, device)?;
        scheduler.step(&mut opt);
        run.end_epoch(epoch, &stats, test_result, &model, &opt)?;
    }
    run.finish();
    Ok(())
}
