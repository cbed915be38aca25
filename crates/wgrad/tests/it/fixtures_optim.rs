//! Optimizers and learning-rate schedulers against PyTorch, from
//! `tests/fixtures/optim.safetensors`:
//!
//! * 20 steps of linear regression (`y = x W^T + b`, MSE) for each
//!   optimizer configuration: the loss before every step and the parameters
//!   after it must match PyTorch's trajectory within 1e-4 (max of
//!   `|wgrad - torch| / max(1, |torch|)`), on the CPU and on the GPU;
//! * the learning rate after construction and after each of 50 scheduler
//!   steps, within 1e-9 relative (both sides compute in f64).

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::Reduction;
use wgrad::nn::loss::mse_loss;
use wgrad::optim::{
    Adam, AdamConfig, AdamW, AdamWConfig, CosineAnnealingLR, ExponentialLR, LinearLR, LrScheduler,
    Optimizer, SequentialLR, Sgd, SgdConfig, StepLR,
};
use wgrad::{Device, Tensor};

/// Tolerance for parameter trajectories and losses.
const TRAJECTORY_TOL: f32 = 1e-4;
/// Relative tolerance for learning rates.
const LR_TOL: f64 = 1e-9;

fn num(config: &Value, key: &str, default: f64) -> f64 {
    config.get(key).map_or(default, |v| {
        v.as_f64()
            .unwrap_or_else(|| panic!("{key} is not a number"))
    })
}

fn flag(config: &Value, key: &str) -> bool {
    config.get(key).is_some_and(|v| v.as_bool() == Some(true))
}

fn betas(config: &Value) -> (f64, f64) {
    match config.get("betas").and_then(Value::as_array) {
        Some(b) => (b[0].as_f64().expect("beta1"), b[1].as_f64().expect("beta2")),
        None => (0.9, 0.999),
    }
}

/// The wgrad optimizer for a fixture description (PyTorch defaults for
/// anything the description leaves out).
fn optimizer(kind: &str, config: &Value, params: Vec<Tensor>) -> Box<dyn Optimizer> {
    let lr = num(config, "lr", 1e-3);
    match kind {
        "sgd" => Box::new(
            Sgd::new(
                params,
                SgdConfig {
                    lr,
                    momentum: num(config, "momentum", 0.0),
                    dampening: num(config, "dampening", 0.0),
                    nesterov: flag(config, "nesterov"),
                    weight_decay: num(config, "weight_decay", 0.0),
                    maximize: flag(config, "maximize"),
                },
            )
            .expect("Sgd::new"),
        ),
        "adam" => Box::new(
            Adam::new(
                params,
                AdamConfig {
                    lr,
                    betas: betas(config),
                    eps: num(config, "eps", 1e-8),
                    weight_decay: num(config, "weight_decay", 0.0),
                    amsgrad: flag(config, "amsgrad"),
                    maximize: flag(config, "maximize"),
                },
            )
            .expect("Adam::new"),
        ),
        "adamw" => Box::new(
            AdamW::new(
                params,
                AdamWConfig {
                    lr,
                    betas: betas(config),
                    eps: num(config, "eps", 1e-8),
                    weight_decay: num(config, "weight_decay", 1e-2),
                    amsgrad: flag(config, "amsgrad"),
                    maximize: flag(config, "maximize"),
                },
            )
            .expect("AdamW::new"),
        ),
        other => panic!("unknown optimizer {other}"),
    }
}

/// Runs one optimizer's 20 steps; `Err` names the first step that drifts
/// from PyTorch's trajectory.
fn check_trajectory(fx: &Fixture, desc: &Value, device: &Device) -> Result<(), String> {
    let name = desc["name"].as_str().expect("name");
    let steps = desc["steps"].as_u64().expect("steps") as usize;
    let err = |e: wgrad::Error| format!("{name}: wgrad error: {e}");
    let param = |key: &str| {
        fx.tensor_f32(key, device)
            .with_requires_grad(true)
            .expect("requires_grad")
    };
    let (w, b) = (param("init.weight"), param("init.bias"));
    let x = fx.tensor_f32("data.x", device);
    let y = fx.tensor_f32("data.y", device);
    let mut opt = optimizer(
        desc["kind"].as_str().expect("kind"),
        &desc["config"],
        vec![w.clone(), b.clone()],
    );
    let want_w = fx.f32(&format!("{name}.weight"));
    let want_b = fx.f32(&format!("{name}.bias"));
    let want_loss = fx.f32(&format!("{name}.loss"));
    let (nw, nb) = (w.numel(), b.numel());
    assert_eq!(want_w.data.len(), steps * nw, "{name}: weight trajectory");
    assert_eq!(want_b.data.len(), steps * nb, "{name}: bias trajectory");
    for step in 0..steps {
        opt.zero_grad();
        let pred = x.matmul_t(&w, false, true).and_then(|p| p.add(&b));
        let loss = pred
            .and_then(|p| mse_loss(&p, &y, Reduction::Mean))
            .map_err(err)?;
        loss.backward().map_err(err)?;
        opt.step().map_err(err)?;
        let at = |what: &str| format!("{name} step {}: {what}", step + 1);
        check_close(
            &at("loss"),
            &[loss.item().map_err(err)?],
            &want_loss.data[step..step + 1],
            TRAJECTORY_TOL,
        )?;
        check_close(
            &at("weight"),
            &w.to_vec_f32().map_err(err)?,
            &want_w.data[step * nw..(step + 1) * nw],
            TRAJECTORY_TOL,
        )?;
        check_close(
            &at("bias"),
            &b.to_vec_f32().map_err(err)?,
            &want_b.data[step * nb..(step + 1) * nb],
            TRAJECTORY_TOL,
        )?;
    }
    Ok(())
}

fn run_optimizers(device: &Device, what: &str) {
    let fx = Fixture::load("optim.safetensors");
    let optimizers = array(&fx.meta, "optimizers");
    let failures: Vec<String> = optimizers
        .iter()
        .filter_map(|d| check_trajectory(&fx, d, device).err())
        .collect();
    report(what, optimizers.len(), &failures);
}

#[test]
fn optimizer_trajectories_match_pytorch_on_cpu() {
    run_optimizers(&Device::Cpu, "optimizer trajectories on the CPU");
}

#[test]
fn optimizer_trajectories_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    run_optimizers(&device, "optimizer trajectories on the GPU");
}

/// The fixture has every optimizer configuration the issue asks for.
#[test]
fn optim_fixture_covers_the_configurations() {
    let fx = Fixture::load("optim.safetensors");
    let names: Vec<String> = array(&fx.meta, "optimizers")
        .iter()
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect();
    for want in [
        "sgd_momentum",
        "sgd_nesterov",
        "sgd_weight_decay",
        "adam",
        "adam_amsgrad",
        "adam_weight_decay",
        "adamw",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} trajectory");
    }
    let schedulers: Vec<&str> = array(&fx.meta, "schedulers")
        .iter()
        .map(|d| d["kind"].as_str().expect("kind"))
        .collect();
    for want in [
        "step_lr",
        "exponential_lr",
        "cosine_annealing_lr",
        "linear_lr",
        "sequential_linear_cosine",
    ] {
        assert!(schedulers.contains(&want), "no {want} schedule");
    }
}

/// The wgrad scheduler for a fixture description, attached to `opt`.
fn scheduler(desc: &Value, opt: &mut Sgd) -> Box<dyn LrScheduler> {
    let f = |k: &str| desc[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    let n = |k: &str| desc[k].as_u64().unwrap_or_else(|| panic!("{k}")) as usize;
    match desc["kind"].as_str().expect("kind") {
        "step_lr" => Box::new(StepLR::new(opt, n("step_size"), f("gamma")).expect("StepLR")),
        "exponential_lr" => Box::new(ExponentialLR::new(opt, f("gamma")).expect("ExponentialLR")),
        "cosine_annealing_lr" => Box::new(
            CosineAnnealingLR::new(opt, n("t_max"), f("eta_min")).expect("CosineAnnealingLR"),
        ),
        "linear_lr" => Box::new(
            LinearLR::new(opt, f("start_factor"), f("end_factor"), n("total_iters"))
                .expect("LinearLR"),
        ),
        "sequential_linear_cosine" => {
            let warmup =
                LinearLR::new(opt, f("start_factor"), 1.0, n("total_iters")).expect("LinearLR");
            let cosine =
                CosineAnnealingLR::new(opt, n("t_max"), f("eta_min")).expect("CosineAnnealingLR");
            Box::new(
                SequentialLR::new(
                    opt,
                    vec![Box::new(warmup), Box::new(cosine)],
                    vec![n("milestone")],
                )
                .expect("SequentialLR"),
            )
        }
        other => panic!("unknown scheduler {other}"),
    }
}

#[test]
fn scheduler_learning_rates_match_pytorch() {
    let fx = Fixture::load("optim.safetensors");
    let descs = array(&fx.meta, "schedulers");
    let mut failures = Vec::new();
    for desc in descs {
        let name = desc["name"].as_str().expect("name");
        let want = fx.f64(&format!("sched.{name}")).data;
        let p = Tensor::zeros(&[1], &Device::Cpu)
            .and_then(|t| t.with_requires_grad(true))
            .expect("param");
        let base_lr = desc["base_lr"].as_f64().expect("base_lr");
        let mut opt = Sgd::new(vec![p], SgdConfig::new(base_lr)).expect("Sgd::new");
        let mut sched = scheduler(desc, &mut opt);
        let mut got = vec![opt.lr()];
        for _ in 1..want.len() {
            sched.step(&mut opt);
            got.push(opt.lr());
            if sched.get_last_lr() != opt.lr() {
                failures.push(format!(
                    "{name}: get_last_lr {} but the optimizer's rate is {}",
                    sched.get_last_lr(),
                    opt.lr()
                ));
            }
        }
        if let Some((epoch, (g, w))) = got
            .iter()
            .zip(&want)
            .enumerate()
            .find(|(_, (g, w))| (*g - *w).abs() > LR_TOL * w.abs().max(1e-12))
        {
            failures.push(format!(
                "{name}: epoch {epoch}: wgrad lr {g}, PyTorch {w}\n  wgrad:   {got:?}\n  PyTorch: {want:?}"
            ));
        }
    }
    report("learning-rate schedules", descs.len(), &failures);
}
