//! The `gpt` example's model and training step against PyTorch: the same
//! nanoGPT-shaped model (tests/fixtures/make_gpt_fixtures.py), from the same
//! initial weights, trained 50 steps on the same token batches with AdamW
//! (decay / no-decay groups, betas 0.9 / 0.95), warm-up + cosine learning
//! rate and gradient clipping at norm 1: every step's loss must match
//! PyTorch's within float noise, on the CPU (and on the GPU when one is
//! available).

#[path = "../gpt/model.rs"]
mod model;

use model::{Gpt, GptConfig, lr_at};
use wgrad::nn::Module;
use wgrad::nn::state_dict::load_file;
use wgrad::optim::{AdamW, AdamWConfig, Optimizer, ParamGroup, clip_grad_norm_};
use wgrad::prelude::*;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/gpt.safetensors"
);

fn losses_on(device: &Device) -> (Vec<f32>, Vec<f32>) {
    let stored = load_file(FIXTURE, device).expect("gpt.safetensors");
    let get = |name: &str| {
        stored
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("fixture has no {name}"))
    };
    let config = GptConfig {
        vocab_size: 24,
        block_size: 16,
        n_layer: 2,
        n_head: 2,
        n_embd: 32,
        dropout: 0.0,
    };
    let model = Gpt::new(config, device).unwrap();
    for (name, p) in model.named_parameters() {
        if name == "lm_head.weight" {
            continue; // tied to transformer.wte.weight
        }
        p.set_storage(get(&name).storage()).unwrap();
    }
    let (decay, no_decay) = model.decay_groups();
    let base = AdamWConfig {
        lr: 1e-2,
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
    ])
    .unwrap();
    let params = model.parameters();
    let (x, y) = (get("x"), get("y"));
    let want = get("losses").to_vec::<f32>().unwrap();
    let mut got = Vec::new();
    for step in 0..want.len() {
        opt.set_lr(lr_at(step, 1e-2, 1e-3, 5, 50));
        let loss = model
            .loss(
                &x.select(0, step as isize).unwrap(),
                &y.select(0, step as isize).unwrap(),
            )
            .unwrap();
        got.push(loss.item().unwrap());
        opt.zero_grad();
        loss.backward().unwrap();
        clip_grad_norm_(&params, 1.0, 2.0).unwrap();
        opt.step().unwrap();
    }
    (got, want)
}

fn check(device: &Device) {
    let (got, want) = losses_on(device);
    assert!(
        want[0] - want[want.len() - 1] > 1.0,
        "the reference run should learn"
    );
    for (step, (g, w)) in got.iter().zip(&want).enumerate() {
        // f32 differences compound over the steps; 2e-3 relative is far
        // below the step-to-step change of the loss.
        assert!(
            (g - w).abs() <= 2e-3 * w.abs().max(1.0),
            "{device} step {step}: loss {g}, PyTorch {w}"
        );
    }
}

#[test]
fn gpt_loss_curve_matches_pytorch_on_cpu() {
    check(&Device::Cpu);
}

#[test]
fn gpt_loss_curve_matches_pytorch_on_gpu() {
    match Device::parse("gpu") {
        Ok(d) => check(&d),
        Err(e) if std::env::var_os("WGRAD_REQUIRE_GPU").is_some() => panic!("no GPU: {e}"),
        Err(_) => {}
    }
}
