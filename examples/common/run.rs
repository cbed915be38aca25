//! The bookkeeping of one training run of a classifier: after every epoch a
//! line on stdout, `metrics.csv` and `metrics.png` under `--out`, the
//! checkpoints of `--save`; at the end the summary table and the
//! `final: loss=<x> accuracy=<y>` line.

use std::path::PathBuf;

use anyhow::Context;
use wgrad::nn::Module;
use wgrad::nn::checkpoint::OptimizerCheckpoint;

use super::checkpoints::Checkpoints;
use super::cli::OutputArgs;
use super::metrics::{Metrics, Panel};
use super::summary;
use super::train::EpochStats;

const COLUMNS: [&str; 6] = [
    "train_loss",
    "train_accuracy",
    "test_loss",
    "test_accuracy",
    "lr",
    "seconds",
];

/// One run: its metrics, outputs and best epoch so far.
pub struct Run {
    name: &'static str,
    epochs: usize,
    metrics: Metrics,
    out: Option<PathBuf>,
    checkpoints: Option<Checkpoints>,
    /// Row index, epoch (1-based), test accuracy and loss of the best epoch.
    best: Option<(usize, usize, f32, f32)>,
}

impl Run {
    /// A run of the example `name` over `epochs` epochs (resumed ones
    /// included); creates the `--out` directory.
    pub fn new(name: &'static str, epochs: usize, output: &OutputArgs) -> anyhow::Result<Run> {
        if let Some(dir) = &output.out {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create --out {}", dir.display()))?;
        }
        Ok(Run {
            name,
            epochs,
            metrics: Metrics::new("epoch", &COLUMNS),
            out: output.out.clone(),
            checkpoints: Checkpoints::new(output.save.as_deref()),
            best: None,
        })
    }

    /// Records epoch `epoch` (0-based): the training numbers, the test
    /// loss and accuracy; prints its line, rewrites the CSV and the plot,
    /// and saves the checkpoints (the optimizer as it will start the next
    /// epoch: call this after the scheduler's step).
    pub fn end_epoch(
        &mut self,
        epoch: usize,
        train: &EpochStats,
        (test_loss, test_accuracy): (f32, f32),
        model: &dyn Module,
        opt: &dyn OptimizerCheckpoint,
    ) -> anyhow::Result<()> {
        let row = self.metrics.rows().len();
        let is_best = self.best.is_none_or(|(_, _, acc, loss)| {
            test_accuracy > acc || (test_accuracy == acc && test_loss < loss)
        });
        if is_best {
            self.best = Some((row, epoch + 1, test_accuracy, test_loss));
        }
        self.metrics.push(
            (epoch + 1) as f64,
            &[
                f64::from(train.loss),
                f64::from(train.accuracy),
                f64::from(test_loss),
                f64::from(test_accuracy),
                train.lr,
                train.seconds,
            ],
        );
        println!(
            "epoch {:>3}/{}: loss={:.4} accuracy={:.4} test_loss={test_loss:.4} test_accuracy={test_accuracy:.4} lr={:.2e} ({:.0} samples/s)",
            epoch + 1,
            self.epochs,
            train.loss,
            train.accuracy,
            train.lr,
            train.samples as f64 / train.seconds.max(1e-9),
        );
        if let Some(dir) = &self.out {
            self.metrics.write_csv(&dir.join("metrics.csv"))?;
            let panels = [
                Panel {
                    title: "loss",
                    y_label: "cross-entropy",
                    columns: &["train_loss", "test_loss"],
                },
                Panel {
                    title: "accuracy",
                    y_label: "accuracy",
                    columns: &["train_accuracy", "test_accuracy"],
                },
            ];
            let title = format!("{}: training (mean over each epoch) and test", self.name);
            self.metrics
                .plot(&dir.join("metrics.png"), &title, &panels)?;
        }
        if let Some(c) = &self.checkpoints {
            c.save(model, opt, (epoch + 1) as u64, is_best)
                .with_context(|| format!("saving epoch {}", epoch + 1))?;
        }
        Ok(())
    }

    /// Whether no epoch was recorded.
    pub fn is_empty(&self) -> bool {
        self.metrics.rows().is_empty()
    }

    /// Prints the summary table, where the outputs are, and the `final:`
    /// line (the last epoch's test loss and accuracy), and returns them.
    pub fn finish(&self) -> (f32, f32) {
        let last = self
            .metrics
            .rows()
            .last()
            .map(|(_, v)| (v[2] as f32, v[3] as f32));
        if last.is_some() {
            println!("\n{}:", self.name);
            print!("{}", summary::table(&self.metrics, self.best.map(|b| b.0)));
        }
        if let Some(dir) = &self.out {
            println!(
                "wrote {} and {}",
                dir.join("metrics.csv").display(),
                dir.join("metrics.png").display()
            );
        }
        if let (Some(c), Some((_, epoch, acc, _))) = (&self.checkpoints, self.best) {
            println!(
                "saved {} (last epoch) and {} (best: epoch {epoch}, test_accuracy={acc:.4})",
                c.path().display(),
                c.best_path().display(),
            );
        }
        let (loss, accuracy) = last.unwrap_or((f32::NAN, f32::NAN));
        println!("final: loss={loss:.4} accuracy={accuracy:.4}");
        (loss, accuracy)
    }
}
