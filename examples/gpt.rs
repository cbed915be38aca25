//! A nanoGPT-shaped character-level language model: token + position
//! embeddings, pre-norm transformer blocks with the fused causal
//! `scaled_dot_product_attention`, a GELU MLP, a head tied to the token
//! embedding; AdamW with decay and no-decay parameter groups, linear
//! warm-up then cosine learning rate, `clip_grad_norm_`. Trains on a text
//! file (`--data FILE`) or on a generated corpus (no download), reports
//! train and validation loss, and prints text sampled with temperature and
//! top-k at the end.
//!
//! `cargo run --release --example gpt -- --device gpu` (`--help` lists the
//! flags and their defaults). `--out DIR` writes `metrics.csv` and
//! `metrics.png` (train and validation loss at every evaluation); `--save
//! FILE` a checkpoint at every evaluation and the weights with the best
//! validation loss to `FILE` with `.best` before the extension.

#[path = "gpt/model.rs"]
mod model;

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use common::checkpoints::Checkpoints;
use common::metrics::{Metrics, Panel};
use common::progress::Progress;
use model::{Gpt, GptConfig, lr_at};
use wgrad::nn::Module;
use wgrad::optim::{AdamW, AdamWConfig, Optimizer, ParamGroup, clip_grad_norm_};
use wgrad::prelude::*;

/// A nanoGPT-shaped character-level language model.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    output: common::OutputArgs,

    /// Training steps (one batch each)
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    steps: u32,

    /// Sequences per batch
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    batch_size: u32,

    /// Peak learning rate (linear warm-up, then cosine decay to a tenth)
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,

    /// Mixed precision: the forward pass under autocast in this dtype (f16
    /// also scales the loss with a GradScaler); f32 is none
    #[arg(long, value_enum, default_value_t = common::Precision::F32)]
    amp: common::Precision,

    /// A text file to train on; without it, a generated corpus
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,

    /// Context length in characters
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    block_size: u32,

    /// Transformer blocks
    #[arg(long, default_value_t = 4)]
    n_layer: usize,

    /// Attention heads per block
    #[arg(long, default_value_t = 4)]
    n_head: usize,

    /// Embedding width
    #[arg(long, default_value_t = 128)]
    n_embd: usize,

    /// Dropout probability
    #[arg(long, default_value_t = 0.0)]
    dropout: f32,

    /// Steps between evaluations of the validation loss
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    eval_interval: u32,

    /// Characters sampled at the end
    #[arg(long, default_value_t = 400)]
    sample_len: usize,

    /// Sampling temperature
    #[arg(long, default_value_t = 0.8)]
    temperature: f32,

    /// Sample from the K most likely characters only (0: all)
    #[arg(long, value_name = "K", default_value_t = 10)]
    top_k: usize,
}

/// A deterministic corpus with structure at several scales (words,
/// phrases, sentences), so that a small model has something to learn.
fn generated_corpus(seed: u64) -> String {
    const SUBJECTS: [&str; 8] = [
        "the cat",
        "a dog",
        "my friend",
        "the old man",
        "a small bird",
        "the river",
        "our teacher",
        "the wind",
    ];
    const VERBS: [&str; 8] = [
        "sees",
        "likes",
        "follows",
        "carries",
        "finds",
        "remembers",
        "paints",
        "hears",
    ];
    const OBJECTS: [&str; 8] = [
        "the moon",
        "a red apple",
        "the long road",
        "a quiet song",
        "the garden",
        "an open door",
        "the morning light",
        "a letter",
    ];
    const ENDS: [&str; 4] = [".", "!", ", and then it rains.", " every day."];
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    let mut text = String::new();
    while text.len() < 200_000 {
        let s = SUBJECTS[next(8)];
        let mut sentence = format!(
            "{} {} {}{}",
            s,
            VERBS[next(8)],
            OBJECTS[next(8)],
            ENDS[next(4)]
        );
        if let Some(first) = sentence.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        text.push_str(&sentence);
        text.push(if next(5) == 0 { '\n' } else { ' ' });
    }
    text
}

/// Characters <-> token ids.
struct Vocab {
    chars: Vec<char>,
}

impl Vocab {
    fn new(text: &str) -> Vocab {
        Vocab {
            chars: text.chars().collect::<BTreeSet<_>>().into_iter().collect(),
        }
    }

    fn encode(&self, text: &str) -> Vec<i32> {
        text.chars()
            .filter_map(|c| self.chars.binary_search(&c).ok().map(|i| i as i32))
            .collect()
    }

    fn decode(&self, ids: &[i32]) -> String {
        ids.iter()
            .filter_map(|&i| self.chars.get(i as usize))
            .collect()
    }
}

/// Random windows of `block + 1` tokens: inputs and next-token targets
/// `[batch, block]` (I32), drawn from `data` with a seeded generator.
struct Batches {
    state: u64,
}

impl Batches {
    fn next(
        &mut self,
        data: &[i32],
        batch: usize,
        block: usize,
        device: &Device,
    ) -> Result<(Tensor, Tensor)> {
        let mut x = Vec::with_capacity(batch * block);
        let mut y = Vec::with_capacity(batch * block);
        for _ in 0..batch {
            self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let start = ((self.state >> 33) as usize) % (data.len() - block - 1);
            x.extend_from_slice(&data[start..start + block]);
            y.extend_from_slice(&data[start + 1..start + block + 1]);
        }
        Ok((
            Tensor::from_vec(x, &[batch, block], device)?,
            Tensor::from_vec(y, &[batch, block], device)?,
        ))
    }
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[]);
    let (steps, batch, block) = (
        args.steps as usize,
        args.batch_size as usize,
        args.block_size as usize,
    );
    let eval_interval = args.eval_interval as usize;
    let device = args.device.setup()?;
    let seed = args.device.seed;
    let text = match &args.data {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --data {}", path.display()))?,
        None => generated_corpus(seed),
    };
    let vocab = Vocab::new(&text);
    let data = vocab.encode(&text);
    if data.len() < 10 * (block + 2) {
        bail!(
            "the text has only {} characters; --block-size {block} needs at least {}",
            data.len(),
            10 * (block + 2)
        );
    }
    let split = data.len() * 9 / 10;
    let (train, val) = data.split_at(split);
    let config = GptConfig {
        vocab_size: vocab.chars.len(),
        block_size: block,
        n_layer: args.n_layer,
        n_head: args.n_head,
        n_embd: args.n_embd,
        dropout: args.dropout,
    };
    let mut model = Gpt::new(config, &device)?;
    println!(
        "gpt on {device}: {} characters, vocab {}, {} parameters",
        data.len(),
        config.vocab_size,
        model.num_parameters()
    );
    let (decay, no_decay) = model.decay_groups();
    let base = AdamWConfig {
        lr: args.lr,
        betas: (0.9, 0.95),
        ..AdamWConfig::default()
    };
    let mut opt = AdamW::with_groups(vec![
        ParamGroup::new(
            decay,
            AdamWConfig {
                weight_decay: 0.1,
                ..base
            },
        ),
        ParamGroup::new(
            no_decay,
            AdamWConfig {
                weight_decay: 0.0,
                ..base
            },
        ),
    ])?;
    let params = model.parameters();
    let warmup = (steps / 20).max(1);
    let min_lr = args.lr / 10.0;
    let mut batches = Batches {
        state: seed ^ 0x5eed,
    };
    let mut val_batches = Batches {
        state: seed ^ 0xfeed,
    };

    let columns = ["train_loss", "val_loss", "lr", "seconds"];
    let mut metrics = Metrics::new("step", &columns);
    let checkpoints = Checkpoints::new(args.output.save.as_deref());
    if let Some(dir) = &args.output.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create --out {}", dir.display()))?;
    }
    let mut best: Option<(usize, f32)> = None;
    let start = Instant::now();
    let (mut train_loss, mut val_loss) = (f32::NAN, f32::NAN);
    // The training loss summed on the device since the last evaluation.
    let mut interval_loss = Tensor::zeros(&[], &device)?;
    let mut interval_steps = 0;
    let mut progress = Progress::new("gpt".to_string(), steps, &device)?;
    let mut amp = common::Amp::new(args.amp);
    for step in 0..steps {
        opt.set_lr(lr_at(step, args.lr, min_lr, warmup, steps));
        let (x, y) = batches.next(train, batch, block, &device)?;
        let region = amp.autocast()?;
        let loss = model.loss(&x, &y)?;
        drop(region);
        opt.zero_grad();
        amp.backward(&loss)?;
        amp.unscale(&mut opt)?;
        clip_grad_norm_(&params, 1.0, 2.0)?;
        amp.step(&mut opt)?;
        progress.step(&loss, batch * block)?;
        interval_loss = interval_loss.add(&loss.detach())?;
        interval_steps += 1;
        if step % eval_interval == 0 || step + 1 == steps {
            train_loss = interval_loss.item()? / interval_steps as f32;
            (interval_loss, interval_steps) = (Tensor::zeros(&[], &device)?, 0);
            val_loss = evaluate(&mut model, &mut val_batches, val, batch, block, &device)?;
            let seconds = start.elapsed().as_secs_f64();
            progress.println(format!(
                "step {step:5}: train loss {train_loss:.4}, val loss {val_loss:.4}, lr {:.2e} ({seconds:.1} s)",
                opt.lr(),
            ));
            let is_best = best.is_none_or(|(_, b)| val_loss < b);
            if is_best {
                best = Some((metrics.rows().len(), val_loss));
            }
            let row = [train_loss, val_loss].map(f64::from);
            metrics.push(step as f64, &[row[0], row[1], opt.lr(), seconds]);
            if let Some(dir) = &args.output.out {
                metrics.write_csv(&dir.join("metrics.csv"))?;
                let panel = Panel {
                    title: "loss",
                    y_label: "cross-entropy per character",
                    columns: &["train_loss", "val_loss"],
                };
                let title = "gpt: training (mean since the last evaluation) and validation loss";
                metrics.plot(&dir.join("metrics.png"), title, &[panel])?;
            }
            if let Some(c) = &checkpoints {
                c.save(&model, &opt, step as u64 + 1, is_best)
                    .with_context(|| format!("saving at step {step}"))?;
            }
        }
    }
    progress.finish()?;
    println!();
    print!("{}", common::summary::table(&metrics, best.map(|b| b.0)));
    if let Some(dir) = &args.output.out {
        println!(
            "wrote {} and {}",
            dir.join("metrics.csv").display(),
            dir.join("metrics.png").display()
        );
    }
    if let Some(c) = &checkpoints {
        println!(
            "saved {} (last evaluation) and {} (best validation loss)",
            c.path().display(),
            c.best_path().display()
        );
    }

    model.eval();
    let prompt = Tensor::from_vec(vocab.encode(&text[..1]), &[1, 1], &device)?;
    let top_k = (args.top_k > 0).then_some(args.top_k);
    let sample = model.generate(&prompt, args.sample_len, args.temperature, top_k)?;
    println!(
        "--- sample (temperature {}, top-k {}) ---",
        args.temperature, args.top_k
    );
    println!("{}", vocab.decode(&sample.to_vec::<i32>()?));
    println!("---");
    println!("final: loss={train_loss:.4} val_loss={val_loss:.4}");
    Ok(())
}

/// Mean validation loss over 4 batches, summed on the device (one readback).
fn evaluate(
    model: &mut Gpt,
    batches: &mut Batches,
    val: &[i32],
    batch: usize,
    block: usize,
    device: &Device,
) -> Result<f32> {
    model.eval();
    let total = {
        let _guard = no_grad();
        let mut total = Tensor::zeros(&[], device)?;
        for _ in 0..4 {
            let (x, y) = batches.next(val, batch, block, device)?;
            total = total.add(&model.loss(&x, &y)?)?;
        }
        total
    };
    model.train(true);
    Ok(total.item()? / 4.0)
}
