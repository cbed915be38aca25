//! What the training examples share, one module per concept:
//!
//! - [`cli`]: the flags every example takes (`--device`, `--seed`,
//!   `--epochs`, `--batch-size`, `--lr`, `--out`, `--save`), parsed by clap;
//! - [`progress`]: an indicatif bar per epoch whose loss is summed on the
//!   device and read back only when the bar refreshes;
//! - [`train`]: one training epoch and an evaluation pass;
//! - [`amp`]: `--amp`, autocast and the GradScaler of mixed-precision runs;
//! - [`metrics`]: the per-epoch numbers as `metrics.csv` and a `metrics.png`
//!   plot of the loss and accuracy curves;
//! - [`summary`]: the table printed at the end of a run;
//! - [`checkpoints`]: a checkpoint every epoch and the best weights;
//! - [`run`]: the bookkeeping of one run, tying the last three together;
//! - [`digits`]: the data and models of the 28x28 digit examples.
#![allow(dead_code, unused_imports)]

pub mod amp;
pub mod checkpoints;
pub mod cli;
pub mod digits;
pub mod metrics;
pub mod progress;
pub mod run;
pub mod summary;
pub mod train;

pub use amp::Amp;
pub use cli::{DeviceArgs, OutputArgs, Precision, TrainArgs};
pub use run::Run;
pub use train::{evaluate, train_epoch};
