//! A progress bar (indicatif) whose loss costs no readback per batch.
//!
//! Each batch adds its loss (and, for classifiers, its count of correct
//! predictions) to a running sum that stays on the device. The sums are read
//! back only when the bar is due for a refresh (every [`REFRESH`]), and then
//! restart from zero: the bar shows the mean loss of the batches since the
//! previous refresh, and [`Progress::finish`] adds the windows up into the
//! mean over all batches. On a GPU a readback waits for the queued work, so
//! reading after every batch would stall the pipeline once per batch; here
//! it happens about four times a second. When stderr is not a terminal (CI,
//! a pipe) the bar is hidden and nothing is read back before `finish`.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use wgrad::prelude::*;

/// How often the bar's loss is read back from the device.
pub const REFRESH: Duration = Duration::from_millis(250);

/// Means over every batch given to a [`Progress`].
#[derive(Clone, Copy, Debug)]
pub struct Totals {
    /// Mean loss per sample.
    pub loss: f32,
    /// Fraction of correct predictions (NaN without [`Progress::batch`]'s logits).
    pub accuracy: f32,
    /// Samples seen.
    pub samples: usize,
}

/// One bar: an epoch of batches or a run of steps.
pub struct Progress {
    bar: ProgressBar,
    device: Device,
    /// Sum of `loss * samples` since the last readback (0-d, on the device).
    loss_sum: Tensor,
    /// Correct predictions since the last readback (0-d, on the device).
    correct: Tensor,
    window_samples: usize,
    with_accuracy: bool,
    /// What earlier windows added up to (host).
    total_loss: f64,
    total_correct: f64,
    total_samples: usize,
    last_read: Instant,
}

impl Progress {
    /// A bar over the `batches` of epoch `epoch` (0-based) of `epochs`.
    pub fn epoch(epoch: usize, epochs: usize, batches: usize, device: &Device) -> Result<Progress> {
        Progress::new(format!("epoch {}/{epochs}", epoch + 1), batches, device)
    }

    /// A bar over `total` items (batches, steps) labelled `label`.
    pub fn new(label: String, total: usize, device: &Device) -> Result<Progress> {
        let bar = ProgressBar::new(total as u64);
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30.cyan/blue}] {pos:>5}/{len:5} {msg} ({elapsed}, eta {eta})",
        )
        .map_err(|e| Error::invalid("progress", e.to_string()))?
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label);
        // Drawn at once, before the first batch has finished.
        bar.tick();
        Ok(Progress {
            bar,
            device: device.clone(),
            loss_sum: Tensor::zeros(&[], device)?,
            correct: Tensor::zeros(&[], device)?,
            window_samples: 0,
            with_accuracy: false,
            total_loss: 0.0,
            total_correct: 0.0,
            total_samples: 0,
            last_read: Instant::now(),
        })
    }

    /// Adds a classifier's batch: its mean `loss`, its `logits` `[B, C]`
    /// and `labels` `[B]`. No readback unless the bar is due a refresh.
    pub fn batch(&mut self, loss: &Tensor, logits: &Tensor, labels: &Tensor) -> Result<()> {
        let _no_grad = no_grad();
        let hits = logits
            .detach()
            .argmax(1, false)?
            .eq(labels)?
            .cast(DType::F32)?
            .sum_all()?;
        self.correct = self.correct.add(&hits)?;
        self.with_accuracy = true;
        self.step(loss, labels.shape()[0])
    }

    /// Adds a step's mean `loss` over `samples` samples (no accuracy).
    pub fn step(&mut self, loss: &Tensor, samples: usize) -> Result<()> {
        {
            let _no_grad = no_grad();
            self.loss_sum = self
                .loss_sum
                .add(&loss.detach().mul_scalar(samples as f32)?)?;
        }
        self.window_samples += samples;
        self.bar.inc(1);
        if !self.bar.is_hidden() && self.last_read.elapsed() >= REFRESH {
            self.read_window()?;
        }
        Ok(())
    }

    /// Reads the device sums back (one readback), shows their mean on the
    /// bar and starts a new window.
    fn read_window(&mut self) -> Result<()> {
        if self.window_samples == 0 {
            return Ok(());
        }
        let both = Tensor::stack(&[&self.loss_sum, &self.correct], 0)?.to_vec_f32()?;
        let n = self.window_samples as f64;
        let mut message = format!("loss {:.4}", f64::from(both[0]) / n);
        if self.with_accuracy {
            message.push_str(&format!(" acc {:.3}", f64::from(both[1]) / n));
        }
        self.bar.set_message(message);
        self.total_loss += f64::from(both[0]);
        self.total_correct += f64::from(both[1]);
        self.total_samples += self.window_samples;
        self.window_samples = 0;
        self.loss_sum = Tensor::zeros(&[], &self.device)?;
        self.correct = Tensor::zeros(&[], &self.device)?;
        self.last_read = Instant::now();
        Ok(())
    }

    /// Prints `line` above the bar (or plainly when the bar is hidden).
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            println!("{}", line.as_ref());
        } else {
            self.bar.println(line);
        }
    }

    /// Reads the last window, removes the bar and returns the means over
    /// every batch.
    pub fn finish(mut self) -> Result<Totals> {
        self.read_window()?;
        self.bar.finish_and_clear();
        let n = self.total_samples.max(1) as f64;
        Ok(Totals {
            loss: (self.total_loss / n) as f32,
            accuracy: if self.with_accuracy {
                (self.total_correct / n) as f32
            } else {
                f32::NAN
            },
            samples: self.total_samples,
        })
    }
}
