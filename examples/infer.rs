//! Classifies digits with a model trained by the `mnist` or `cnn` example:
//! loads its weights from a file their `--save` wrote (the checkpoint, or
//! the `.best` state_dict), runs it on test digits (MNIST's test split with
//! `--data DIR`, else the synthetic test digits of the same `--seed`), and
//! prints a few of them as ASCII art with the predicted and true labels,
//! then the accuracy.
//!
//! ```sh
//! cargo run --release --example mnist -- --save mnist.safetensors
//! cargo run --release --example infer -- --checkpoint mnist.safetensors
//! ```

mod common;

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;
use common::digits::{self, Net};
use wgrad::nn::data::{Dataset, ascii_preview, mnist, synthetic};
use wgrad::nn::{Module, state_dict};
use wgrad::prelude::*;

/// Classifies test digits with a model saved by `mnist --save` or `cnn --save`.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,

    /// The weights: a checkpoint or state_dict written by `mnist --save` or
    /// `cnn --save` (mnist's MLP or cnn's Net, whichever the file fits)
    #[arg(long, value_name = "FILE")]
    checkpoint: PathBuf,

    /// Directory with the MNIST IDX files (`.gz` or not): classify its
    /// test split; without it, the synthetic test digits of --seed
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,

    /// How many test digits to classify
    #[arg(long, value_name = "N", default_value_t = 1000)]
    count: usize,

    /// How many digits to draw (and as many misclassified ones, if any)
    #[arg(long, value_name = "N", default_value_t = 4)]
    show: usize,
}

/// The model a file holds, its weights loaded: mnist's MLP, or else the
/// cnn's `Net` (loading is strict, so only the right one accepts the file).
fn load_model(path: &Path, device: &Device) -> anyhow::Result<Box<dyn Module>> {
    std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mlp = digits::mlp(device)?;
    let (kind, mut model): (&str, Box<dyn Module>) = match state_dict::load(&mlp, path) {
        Ok(()) => ("mnist MLP", Box::new(mlp)),
        Err(not_mlp) => {
            let net = Net::new(device)?;
            state_dict::load(&net, path).with_context(|| {
                format!(
                    "{} holds neither the mnist example's MLP ({not_mlp}) nor the cnn example's Net",
                    path.display()
                )
            })?;
            ("cnn", Box::new(net))
        }
    };
    model.eval();
    println!(
        "model: the {kind} from {} ({} parameters)",
        path.display(),
        model.num_parameters()
    );
    Ok(model)
}

/// The digits to classify: the first `count` of MNIST's test split or of
/// the synthetic test stream of `seed` (the test set `mnist`/`cnn` used).
fn test_digits(data: Option<&Path>, count: usize, seed: u64) -> Result<Dataset> {
    let all = match data {
        Some(dir) => {
            println!("data: MNIST test split from {}", dir.display());
            mnist::load(dir, false)?
        }
        None => {
            println!("data: synthetic test digits of seed {seed} (--data DIR for MNIST)");
            synthetic::digits_split(0, count, seed).1
        }
    };
    let n = count.min(all.len());
    all.subset(&(0..n).collect::<Vec<_>>())
}

/// Predicted class and its softmax probability for every sample.
fn classify(model: &dyn Module, data: &Dataset, device: &Device) -> Result<Vec<(i32, f32)>> {
    let _no_grad = no_grad();
    let mut out = Vec::with_capacity(data.len());
    let loader = wgrad::nn::data::DataLoader::new(data, 500)?;
    for batch in loader.epoch(0, device) {
        let (x, _) = batch?;
        let probs = model.forward(&x)?.softmax(-1)?;
        let (best, class) = probs.max_dim(1, false)?;
        let classes = class.to_vec::<i32>()?;
        out.extend(classes.into_iter().zip(best.to_vec_f32()?));
    }
    Ok(out)
}

/// Draws `picks` (sample indices) side by side, two pixel rows per text
/// line so that the digits keep their proportions, labelled below.
fn draw(data: &Dataset, predictions: &[(i32, f32)], picks: &[usize]) {
    const SIDE: usize = 28;
    let pictures: Vec<Vec<String>> = picks
        .iter()
        .filter_map(|&i| data.get(i))
        .map(|(pixels, _)| {
            let halved: Vec<f32> = (0..SIDE / 2)
                .flat_map(|r| {
                    (0..SIDE).map(move |c| {
                        (pixels[2 * r * SIDE + c] + pixels[(2 * r + 1) * SIDE + c]) / 2.0
                    })
                })
                .collect();
            ascii_preview(&halved, SIDE / 2, SIDE)
                .lines()
                .map(str::to_string)
                .collect()
        })
        .collect();
    for line in 0..SIDE / 2 {
        let row: Vec<&str> = pictures.iter().map(|p| p[line].as_str()).collect();
        println!("|{}|", row.join("| |"));
    }
    let labels: Vec<String> = picks
        .iter()
        .map(|&i| {
            let (pred, p) = predictions[i];
            let truth = data.labels()[i];
            let mark = if pred == truth { "ok" } else { "WRONG" };
            let text = format!(" pred {pred} ({:.0}%) true {truth} {mark}", 100.0 * p);
            format!("{text:<30}")
        })
        .collect();
    println!("{}", labels.join(" ").trim_end());
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[]);
    let device = &args.device.setup()?;
    let model = load_model(&args.checkpoint, device)?;
    let data = test_digits(args.data.as_deref(), args.count, args.device.seed)?;
    let predictions = classify(model.as_ref(), &data, device)?;

    let shown: Vec<usize> = (0..args.show.min(data.len())).collect();
    if !shown.is_empty() {
        println!("\nthe first {} digits:", shown.len());
        draw(&data, &predictions, &shown);
    }
    let wrong: Vec<usize> = (0..data.len())
        .filter(|&i| predictions[i].0 != data.labels()[i])
        .collect();
    let wrong_shown: Vec<usize> = wrong.iter().copied().take(args.show).collect();
    if !wrong_shown.is_empty() {
        println!("\nmisclassified ({} of {}):", wrong.len(), data.len());
        draw(&data, &predictions, &wrong_shown);
    }
    let accuracy = (data.len() - wrong.len()) as f32 / data.len().max(1) as f32;
    println!(
        "\n{} of {} digits right",
        data.len() - wrong.len(),
        data.len()
    );
    println!("final: accuracy={accuracy:.4}");
    Ok(())
}
