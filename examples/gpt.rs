//! A nanoGPT-shaped character-level language model: token + position
//! embeddings, pre-norm transformer blocks with the fused causal
//! `scaled_dot_product_attention`, a GELU MLP, a head tied to the token
//! embedding; AdamW with decay and no-decay parameter groups, linear
//! warm-up then cosine learning rate, `clip_grad_norm_`. Trains on a text
//! file (`--data FILE`) or on a generated corpus (no download), reports
//! train and validation loss, and prints text sampled with temperature and
//! top-k at the end.
//!
//! `cargo run --release --example gpt -- --device gpu`
//!
//! Flags (defaults in brackets): `--device auto|cpu|gpu|gpu:N` [auto],
//! `--seed N` [0], `--steps N` [2000], `--batch-size N` [32], `--lr X`
//! [1e-3], `--data FILE`, `--block-size N` [64], `--n-layer N` [4],
//! `--n-head N` [4], `--n-embd N` [128], `--dropout X` [0.0],
//! `--eval-interval N` [200], `--sample-len N` [400], `--temperature X`
//! [0.8], `--top-k N` [10].

#[path = "gpt/model.rs"]
mod model;

use std::collections::BTreeSet;
use std::time::Instant;

use model::{Gpt, GptConfig, lr_at};
use wgrad::nn::Module;
use wgrad::optim::{AdamW, AdamWConfig, Optimizer, ParamGroup, clip_grad_norm_};
use wgrad::prelude::*;

struct Flags {
    device: String,
    seed: u64,
    steps: usize,
    batch: usize,
    lr: f64,
    data: Option<String>,
    block: usize,
    n_layer: usize,
    n_head: usize,
    n_embd: usize,
    dropout: f32,
    eval_interval: usize,
    sample_len: usize,
    temperature: f32,
    top_k: usize,
}

fn usage(problem: &str) -> ! {
    eprintln!("gpt: {problem}");
    eprintln!(
        "usage: gpt [--device auto|cpu|gpu|gpu:N] [--seed N] [--steps N] [--batch-size N] [--lr X] \
         [--data FILE] [--block-size N] [--n-layer N] [--n-head N] [--n-embd N] [--dropout X] \
         [--eval-interval N] [--sample-len N] [--temperature X] [--top-k N]"
    );
    std::process::exit(2)
}

fn parse_flags() -> Flags {
    let mut f = Flags {
        device: "auto".into(),
        seed: 0,
        steps: 2000,
        batch: 32,
        lr: 1e-3,
        data: None,
        block: 64,
        n_layer: 4,
        n_head: 4,
        n_embd: 128,
        dropout: 0.0,
        eval_interval: 200,
        sample_len: 400,
        temperature: 0.8,
        top_k: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        fn num<T: std::str::FromStr>(flag: &str, v: &str) -> T {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{flag}: cannot parse {v:?}")))
        }
        match flag.as_str() {
            "--device" => f.device = value,
            "--seed" => f.seed = num(&flag, &value),
            "--steps" => f.steps = num(&flag, &value),
            "--batch-size" => f.batch = num(&flag, &value),
            "--lr" => f.lr = num(&flag, &value),
            "--data" => f.data = Some(value),
            "--block-size" => f.block = num(&flag, &value),
            "--n-layer" => f.n_layer = num(&flag, &value),
            "--n-head" => f.n_head = num(&flag, &value),
            "--n-embd" => f.n_embd = num(&flag, &value),
            "--dropout" => f.dropout = num(&flag, &value),
            "--eval-interval" => f.eval_interval = num(&flag, &value),
            "--sample-len" => f.sample_len = num(&flag, &value),
            "--temperature" => f.temperature = num(&flag, &value),
            "--top-k" => f.top_k = num(&flag, &value),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if f.steps == 0 || f.batch == 0 || f.block == 0 || f.eval_interval == 0 {
        usage("--steps, --batch-size, --block-size and --eval-interval must be positive");
    }
    f
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

fn run() -> Result<()> {
    let flags = parse_flags();
    let (device, reason) = Device::parse_with_reason(&flags.device)?;
    println!("device: {device} ({reason})");
    manual_seed(flags.seed);
    let text = match &flags.data {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Error::invalid("gpt", format!("cannot read --data {path}: {e}")))?,
        None => generated_corpus(flags.seed),
    };
    let vocab = Vocab::new(&text);
    let data = vocab.encode(&text);
    if data.len() < 10 * (flags.block + 2) {
        return Err(Error::invalid(
            "gpt",
            format!("the text has only {} characters", data.len()),
        ));
    }
    let split = data.len() * 9 / 10;
    let (train, val) = data.split_at(split);
    let config = GptConfig {
        vocab_size: vocab.chars.len(),
        block_size: flags.block,
        n_layer: flags.n_layer,
        n_head: flags.n_head,
        n_embd: flags.n_embd,
        dropout: flags.dropout,
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
        lr: flags.lr,
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
    let warmup = (flags.steps / 20).max(1);
    let min_lr = flags.lr / 10.0;
    let mut batches = Batches {
        state: flags.seed ^ 0x5eed,
    };
    let mut val_batches = Batches {
        state: flags.seed ^ 0xfeed,
    };
    let start = Instant::now();
    let (mut train_loss, mut val_loss) = (f32::NAN, f32::NAN);
    for step in 0..flags.steps {
        opt.set_lr(lr_at(step, flags.lr, min_lr, warmup, flags.steps));
        let (x, y) = batches.next(train, flags.batch, flags.block, &device)?;
        let loss = model.loss(&x, &y)?;
        opt.zero_grad();
        loss.backward()?;
        clip_grad_norm_(&params, 1.0, 2.0)?;
        opt.step()?;
        if step % flags.eval_interval == 0 || step + 1 == flags.steps {
            train_loss = loss.item()?;
            model.eval();
            val_loss = {
                let _guard = no_grad();
                let mut total = 0.0;
                for _ in 0..4 {
                    let (x, y) = val_batches.next(val, flags.batch, flags.block, &device)?;
                    total += model.loss(&x, &y)?.item()?;
                }
                total / 4.0
            };
            model.train(true);
            println!(
                "step {step:5}: train loss {train_loss:.4}, val loss {val_loss:.4}, lr {:.2e} ({:.1} s)",
                opt.lr(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    model.eval();
    let prompt = Tensor::from_vec(vocab.encode(&text[..1]), &[1, 1], &device)?;
    let top_k = (flags.top_k > 0).then_some(flags.top_k);
    let sample = model.generate(&prompt, flags.sample_len, flags.temperature, top_k)?;
    println!(
        "--- sample (temperature {}, top-k {}) ---",
        flags.temperature, flags.top_k
    );
    println!("{}", vocab.decode(&sample.to_vec::<i32>()?));
    println!("---");
    println!("final: loss={train_loss:.4} val_loss={val_loss:.4}");
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("gpt: {e}");
        std::process::exit(1);
    }
}
