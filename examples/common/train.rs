//! One training epoch and one evaluation pass of a classifier, as the
//! `train()` and `test()` functions of a PyTorch script.

use std::time::Instant;

use wgrad::nn::Module;
use wgrad::nn::data::{DataLoader, Dataset};
use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad::optim::Optimizer;
use wgrad::prelude::*;

use super::amp::Amp;
use super::progress::Progress;

/// What one training epoch measured.
#[derive(Clone, Copy, Debug)]
pub struct EpochStats {
    /// Mean training loss over the epoch's batches (per sample).
    pub loss: f32,
    /// Training accuracy over the epoch's batches.
    pub accuracy: f32,
    /// The learning rate the epoch ran with.
    pub lr: f64,
    /// Samples trained on.
    pub samples: usize,
    /// Wall time of the epoch.
    pub seconds: f64,
}

/// Trains `model` for one epoch (index `epoch` of `epochs`, which also
/// picks the shuffle) over `loader` with cross-entropy, showing a progress
/// bar, in the mixed precision `amp` sets up. The loss and accuracy are
/// summed on the device; see [`Progress`](super::progress::Progress).
#[allow(clippy::too_many_arguments)]
pub fn train_epoch(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    amp: &mut Amp,
    loader: &DataLoader<'_>,
    epoch: usize,
    epochs: usize,
    device: &Device,
) -> Result<EpochStats> {
    let start = Instant::now();
    let lr = opt.lr();
    model.train(true);
    let mut progress = Progress::epoch(epoch, epochs, loader.num_batches(), device)?;
    for batch in loader.epoch(epoch as u64, device) {
        let (x, y) = batch?;
        let region = amp.autocast()?;
        let logits = model.forward(&x)?;
        let loss = cross_entropy(&logits, &y, CrossEntropyOptions::default())?;
        drop(region);
        opt.zero_grad();
        amp.backward(&loss)?;
        amp.step(opt)?;
        progress.batch(&loss, &logits, &y)?;
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

/// Mean loss and accuracy of `model` (in eval mode, without gradients) over
/// `data`. The sums stay on the device; one readback at the end.
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
    let sum = CrossEntropyOptions {
        reduction: wgrad::nn::Reduction::Sum,
        ..Default::default()
    };
    for batch in loader.epoch(0, device) {
        let (x, y) = batch?;
        let logits = model.forward(&x)?;
        loss_sum = loss_sum.add(&cross_entropy(&logits, &y, sum)?)?;
        let hits = logits.argmax(1, false)?.eq(&y)?.cast(DType::F32)?;
        correct = correct.add(&hits.sum_all()?)?;
    }
    model.train(true);
    let n = data.len().max(1) as f32;
    let both = Tensor::stack(&[&loss_sum, &correct], 0)?.to_vec_f32()?;
    Ok((both[0] / n, both[1] / n))
}
