//! What the training examples share: flags and the train/evaluate loop.
#![allow(dead_code)]

use std::time::Instant;

use wgrad::nn::Module;
use wgrad::nn::data::{DataLoader, Dataset};
use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad::optim::Optimizer;
use wgrad::prelude::*;

/// Flags every training example takes.
pub struct Flags {
    pub device: Device,
    pub seed: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f64,
    /// `--data DIR` (mnist only).
    pub data: Option<String>,
    /// `--save FILE`: write a checkpoint after training (mnist only).
    pub save: Option<String>,
    /// `--resume FILE`: start from a checkpoint or state_dict (mnist only).
    pub resume: Option<String>,
    /// `--train-size N`: train on the first N samples only (quick runs, CI).
    pub train_size: Option<usize>,
}

/// Parses `--device auto|cpu|gpu|gpu:N --seed N --epochs N --batch-size N --lr X [--data DIR]`.
pub fn parse_flags(default_epochs: usize, default_batch: usize, default_lr: f64) -> Flags {
    parse(default_epochs, default_batch, default_lr, false)
}

/// [`parse_flags`] plus `--save FILE` and `--resume FILE`, for examples
/// that checkpoint (the others refuse those flags rather than ignore them).
pub fn parse_flags_with_checkpoints(
    default_epochs: usize,
    default_batch: usize,
    default_lr: f64,
) -> Flags {
    parse(default_epochs, default_batch, default_lr, true)
}

fn parse(default_epochs: usize, default_batch: usize, default_lr: f64, checkpoints: bool) -> Flags {
    let mut device = "auto".to_string();
    let mut flags = Flags {
        device: Device::Cpu,
        seed: 0,
        epochs: default_epochs,
        batch_size: default_batch,
        lr: default_lr,
        data: None,
        save: None,
        resume: None,
        train_size: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value"), checkpoints))
        };
        match flag.as_str() {
            "--device" => device = value(),
            "--seed" => {
                flags.seed = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--seed takes an integer", checkpoints))
            }
            "--epochs" => {
                flags.epochs = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--epochs takes an integer", checkpoints))
            }
            "--batch-size" => {
                flags.batch_size = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--batch-size takes an integer", checkpoints))
            }
            "--lr" => {
                flags.lr = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--lr takes a number", checkpoints))
            }
            "--data" => flags.data = Some(value()),
            "--train-size" => {
                flags.train_size = Some(
                    value()
                        .parse()
                        .unwrap_or_else(|_| usage("--train-size takes an integer", checkpoints)),
                )
            }
            "--save" if checkpoints => flags.save = Some(value()),
            "--resume" if checkpoints => flags.resume = Some(value()),
            "-h" | "--help" => usage("", checkpoints),
            other => usage(&format!("unknown flag {other}"), checkpoints),
        }
    }
    let (chosen, reason) = Device::parse_with_reason(&device).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    });
    flags.device = chosen;
    manual_seed(flags.seed);
    // Which device and why (auto skips software GPU adapters such as lavapipe).
    println!("device: {} ({reason})", flags.device);
    flags
}

fn usage(problem: &str, checkpoints: bool) -> ! {
    if !problem.is_empty() {
        eprintln!("error: {problem}");
    }
    eprintln!(
        "flags: --device auto|cpu|gpu|gpu:N  --seed N  --epochs N  --batch-size N  --lr X  [--data DIR]  [--train-size N]"
    );
    if checkpoints {
        eprintln!(
            "       [--save FILE]  [--resume FILE]  (--epochs counts all epochs, resumed ones included)"
        );
    }
    std::process::exit(if problem.is_empty() { 0 } else { 2 });
}

/// Mean loss and accuracy of `model` over `data`. Sums stay on the device;
/// one readback at the end.
pub fn evaluate(
    model: &mut dyn Module,
    data: &Dataset,
    batch_size: usize,
    device: &Device,
) -> Result<(f32, f32)> {
    let _no_grad = no_grad();
    model.eval();
    let loader = DataLoader::new(data, batch_size)?;
    let mut loss_sum = Tensor::zeros(&[], device)?;
    let mut correct = Tensor::zeros(&[], device)?;
    for batch in loader.epoch(0, device) {
        let (x, y) = batch?;
        let logits = model.forward(&x)?;
        let options = CrossEntropyOptions {
            reduction: wgrad::nn::Reduction::Sum,
            ..Default::default()
        };
        loss_sum = loss_sum.add(&cross_entropy(&logits, &y, options)?)?;
        correct = correct.add(
            &logits
                .argmax(1, false)?
                .eq(&y)?
                .cast(DType::F32)?
                .sum_all()?,
        )?;
    }
    model.train(true);
    let n = data.len().max(1) as f32;
    Ok((loss_sum.item()? / n, correct.item()? / n))
}

/// Trains for `flags.epochs`, printing one line per epoch, and returns the
/// final (loss, accuracy) on `eval_on`.
pub fn train(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    train_data: &Dataset,
    eval_on: &Dataset,
    eval_name: &str,
    flags: &Flags,
) -> Result<(f32, f32)> {
    train_from(model, opt, train_data, eval_on, eval_name, flags, 0)
}

/// [`train`] starting at epoch index `start_epoch` (the number of epochs a
/// resumed checkpoint completed) and running up to `flags.epochs` in all.
/// Each epoch's shuffle depends only on the seed and the epoch index, so a
/// resumed run sees the batches an uninterrupted one would have.
pub fn train_from(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    train_data: &Dataset,
    eval_on: &Dataset,
    eval_name: &str,
    flags: &Flags,
    start_epoch: usize,
) -> Result<(f32, f32)> {
    train_with_epoch_hook(
        model,
        opt,
        train_data,
        eval_on,
        eval_name,
        flags,
        start_epoch,
        &mut |_| {},
    )
}

/// [`train_from`] calling `after_epoch(opt)` at the end of every epoch
/// (where a learning-rate scheduler steps, as in PyTorch's loops).
#[allow(clippy::too_many_arguments)]
pub fn train_with_epoch_hook(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    train_data: &Dataset,
    eval_on: &Dataset,
    eval_name: &str,
    flags: &Flags,
    start_epoch: usize,
    after_epoch: &mut dyn FnMut(&mut dyn Optimizer),
) -> Result<(f32, f32)> {
    let loader = DataLoader::new(train_data, flags.batch_size)?.shuffle(flags.seed);
    let device = &flags.device;
    for epoch in start_epoch..flags.epochs {
        let start = Instant::now();
        // Accumulated on the device: no readback inside the epoch.
        let mut loss_sum = Tensor::zeros(&[], device)?;
        let mut correct = Tensor::zeros(&[], device)?;
        for batch in loader.epoch(epoch as u64, device) {
            let (x, y) = batch?;
            let logits = model.forward(&x)?;
            let loss = cross_entropy(&logits, &y, CrossEntropyOptions::default())?;
            opt.zero_grad();
            loss.backward()?;
            opt.step()?;
            let _no_grad = no_grad();
            let batch_len = y.numel() as f32;
            loss_sum = loss_sum.add(&loss.detach().mul_scalar(batch_len)?)?;
            correct = correct.add(
                &logits
                    .detach()
                    .argmax(1, false)?
                    .eq(&y)?
                    .cast(DType::F32)?
                    .sum_all()?,
            )?;
        }
        let n = train_data.len().max(1) as f32;
        let (loss, accuracy) = (loss_sum.item()? / n, correct.item()? / n);
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "epoch {:>3}/{}: loss={loss:.4} accuracy={accuracy:.4} ({:.0} samples/s)",
            epoch + 1,
            flags.epochs,
            train_data.len() as f64 / seconds.max(1e-9)
        );
        after_epoch(opt);
    }
    let (loss, accuracy) = evaluate(model, eval_on, flags.batch_size.max(256), device)?;
    println!("{eval_name}: loss={loss:.4} accuracy={accuracy:.4}");
    println!("final: loss={loss:.4} accuracy={accuracy:.4}");
    Ok((loss, accuracy))
}

/// Prints the error and exits non-zero.
pub fn exit_on_error<T>(result: Result<T>) -> T {
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    })
}
