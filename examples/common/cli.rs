//! Command-line flags shared by the examples (clap derive). Each example's
//! own `Cli` struct flattens the groups it needs and adds its own flags;
//! [`parse`] sets that example's defaults, which `--help` then shows.

use std::path::PathBuf;

use clap::{Args, Parser};
use wgrad::prelude::*;

/// `--device` and `--seed`.
#[derive(Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Where to run: auto (a hardware GPU if there is one, else the CPU),
    /// cpu, gpu (the default adapter, software ones included) or gpu:N
    #[arg(long, env = "WGRAD_DEVICE", default_value = "auto")]
    pub device: String,

    /// Seed of the initial weights, the shuffling and the synthetic data
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl DeviceArgs {
    /// Opens the device, seeds the generator and prints which device is
    /// used and why (the examples' first line).
    pub fn setup(&self) -> Result<Device> {
        // A value taken from WGRAD_DEVICE reports itself as such.
        let from_env = std::env::var("WGRAD_DEVICE").is_ok_and(|v| v == self.device);
        let name = if from_env {
            "auto"
        } else {
            self.device.as_str()
        };
        let (device, reason) = Device::parse_with_reason(name)?;
        manual_seed(self.seed);
        println!("device: {device} ({reason})");
        Ok(device)
    }
}

/// `--epochs`, `--batch-size`, `--lr` (each example sets its defaults
/// through [`parse`]).
#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Number of training epochs
    #[arg(long, default_value_t = 3)]
    pub epochs: usize,

    /// Samples per mini-batch
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,

    /// Learning rate
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,

    /// Mixed precision: run forward passes under autocast in this dtype
    /// (f16 also scales the loss with a GradScaler); f32 is none
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub amp: Precision,
}

/// The `--amp` choices.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// float32 throughout
    F32,
    /// autocast(float16) with a GradScaler
    F16,
    /// autocast(bfloat16)
    Bf16,
}

/// `--out` and `--save`.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Write metrics.csv and metrics.png (the loss and accuracy curves)
    /// into DIR, rewritten after every epoch (gpt: every evaluation)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Save a checkpoint (model, optimizer state, progress) to FILE after
    /// every epoch (gpt: every evaluation), and the best weights so far to
    /// FILE with `.best` before the extension
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
}

/// Parses the command line into `C`, with `defaults` (`(field name,
/// value)`, e.g. `("epochs", "30")`) replacing the defaults of the shared
/// flags. `--help` and bad flags exit here, as clap does.
pub fn parse<C: Parser>(defaults: &[(&'static str, &'static str)]) -> C {
    let mut command = C::command();
    for &(id, value) in defaults {
        command = command.mut_arg(id, |arg| arg.default_value(value));
    }
    let matches = command.get_matches();
    C::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}
