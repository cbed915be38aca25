//! Parameter groups, RMSprop, Adagrad and the schedulers MultiStepLR,
//! LambdaLR, OneCycleLR, CosineAnnealingWarmRestarts, ReduceLROnPlateau,
//! ConstantLR and PolynomialLR (alone, in SequentialLR after a warm-up, in
//! ChainedScheduler) against PyTorch, from `tests/fixtures/optim2.safetensors`
//! (`make_optim2_fixtures.py`):
//!
//! * 20 steps of linear regression per optimizer configuration (one group,
//!   or several groups with their own hyper-parameters): the loss before
//!   every step and the parameters after it within 1e-4 of PyTorch's, on
//!   the CPU and on the GPU (where a step reads nothing back);
//! * every group's learning rate (and OneCycleLR's momentum) after
//!   construction and after each of 50 scheduler steps, within 1e-9
//!   relative, on a two-group SGD;
//! * bad hyper-parameters are errors naming the optimizer and the value.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::Reduction;
use wgrad::nn::loss::mse_loss;
use wgrad::optim::{
    Adagrad, AdagradConfig, AdamW, AdamWConfig, AnnealStrategy, ChainedScheduler, ConstantLR,
    CosineAnnealingWarmRestarts, LambdaLR, LinearLR, LrLambda, LrScheduler, MultiStepLR,
    OneCycleConfig, OneCycleLR, Optimizer, ParamGroup, PlateauMode, PolynomialLR,
    ReduceLROnPlateau, ReduceLROnPlateauConfig, RmsProp, RmsPropConfig, SequentialLR, Sgd,
    SgdConfig, ThresholdMode,
};
use wgrad::{Device, Tensor};

/// Tolerance for parameter trajectories and losses.
const TRAJECTORY_TOL: f32 = 1e-4;
/// Relative tolerance for learning rates and momenta.
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

fn rmsprop_config(c: &Value) -> RmsPropConfig {
    RmsPropConfig {
        lr: num(c, "lr", 1e-2),
        alpha: num(c, "alpha", 0.99),
        eps: num(c, "eps", 1e-8),
        weight_decay: num(c, "weight_decay", 0.0),
        momentum: num(c, "momentum", 0.0),
        centered: flag(c, "centered"),
        maximize: flag(c, "maximize"),
    }
}

fn adagrad_config(c: &Value) -> AdagradConfig {
    AdagradConfig {
        lr: num(c, "lr", 1e-2),
        lr_decay: num(c, "lr_decay", 0.0),
        weight_decay: num(c, "weight_decay", 0.0),
        initial_accumulator_value: num(c, "initial_accumulator_value", 0.0),
        eps: num(c, "eps", 1e-10),
        maximize: flag(c, "maximize"),
    }
}

fn adamw_config(c: &Value) -> AdamWConfig {
    AdamWConfig {
        lr: num(c, "lr", 1e-3),
        betas: betas(c),
        eps: num(c, "eps", 1e-8),
        weight_decay: num(c, "weight_decay", 1e-2),
        amsgrad: flag(c, "amsgrad"),
        maximize: flag(c, "maximize"),
    }
}

fn sgd_config(c: &Value) -> SgdConfig {
    SgdConfig {
        lr: num(c, "lr", 1e-3),
        momentum: num(c, "momentum", 0.0),
        dampening: num(c, "dampening", 0.0),
        nesterov: flag(c, "nesterov"),
        weight_decay: num(c, "weight_decay", 0.0),
        maximize: flag(c, "maximize"),
    }
}

/// The groups of a fixture description (`config` for both parameters, or
/// `groups` naming theirs), with hyper-parameters made by `make`.
fn groups<C>(desc: &Value, w: &Tensor, b: &Tensor, make: fn(&Value) -> C) -> Vec<ParamGroup<C>> {
    match desc.get("groups").and_then(Value::as_array) {
        None => vec![ParamGroup::new(
            vec![w.clone(), b.clone()],
            make(&desc["config"]),
        )],
        Some(gs) => gs
            .iter()
            .map(|g| {
                let params = g["params"]
                    .as_array()
                    .expect("params")
                    .iter()
                    .map(|n| match n.as_str() {
                        Some("weight") => w.clone(),
                        Some("bias") => b.clone(),
                        other => panic!("unknown parameter {other:?}"),
                    })
                    .collect();
                ParamGroup::new(params, make(g))
            })
            .collect(),
    }
}

/// The wgrad optimizer for a fixture description.
fn optimizer(desc: &Value, w: &Tensor, b: &Tensor) -> Box<dyn Optimizer> {
    match desc["kind"].as_str().expect("kind") {
        "rmsprop" => Box::new(RmsProp::with_groups(groups(desc, w, b, rmsprop_config)).unwrap()),
        "adagrad" => Box::new(Adagrad::with_groups(groups(desc, w, b, adagrad_config)).unwrap()),
        "adamw" => Box::new(AdamW::with_groups(groups(desc, w, b, adamw_config)).unwrap()),
        "sgd" => Box::new(Sgd::with_groups(groups(desc, w, b, sgd_config)).unwrap()),
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
    let mut opt = optimizer(desc, &w, &b);
    let want_w = fx.f32(&format!("{name}.weight"));
    let want_b = fx.f32(&format!("{name}.bias"));
    let want_loss = fx.f32(&format!("{name}.loss"));
    let (nw, nb) = (w.numel(), b.numel());
    assert_eq!(want_w.data.len(), steps * nw, "{name}: weight trajectory");
    for step in 0..steps {
        opt.zero_grad();
        let pred = x.matmul_t(&w, false, true).and_then(|p| p.add(&b));
        let loss = pred
            .and_then(|p| mse_loss(&p, &y, Reduction::Mean))
            .map_err(err)?;
        loss.backward().map_err(err)?;
        let before = match device {
            Device::Gpu(g) => Some((g.clone(), g.stats())),
            Device::Cpu => None,
        };
        opt.step().map_err(err)?;
        if let Some((g, before)) = before {
            let readbacks = g.stats().since(&before).readbacks;
            if readbacks != 0 {
                return Err(format!(
                    "{name} step {}: the GPU step read back {readbacks} time(s)",
                    step + 1
                ));
            }
        }
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
    let fx = Fixture::load("optim2.safetensors");
    let optimizers = array(&fx.meta, "optimizers");
    let failures: Vec<String> = optimizers
        .iter()
        .filter_map(|d| check_trajectory(&fx, d, device).err())
        .collect();
    report(what, optimizers.len(), &failures);
}

#[test]
fn rmsprop_adagrad_and_group_trajectories_match_pytorch_on_cpu() {
    run_optimizers(&Device::Cpu, "optim2 trajectories on the CPU");
}

#[test]
fn rmsprop_adagrad_and_group_trajectories_match_pytorch_on_gpu() {
    // A device of its own, so that the readback count is this test's alone.
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    run_optimizers(&Device::Gpu(g), "optim2 trajectories on the GPU");
}

/// The fixture has every configuration the issue asks for.
#[test]
fn optim2_fixture_covers_the_configurations() {
    let fx = Fixture::load("optim2.safetensors");
    let names: Vec<&str> = array(&fx.meta, "optimizers")
        .iter()
        .map(|d| d["name"].as_str().expect("name"))
        .collect();
    for want in [
        "rmsprop",
        "rmsprop_centered_momentum",
        "rmsprop_weight_decay",
        "adagrad",
        "adagrad_decay",
        "adamw_groups",
    ] {
        assert!(names.contains(&want), "no {want} trajectory");
    }
    let kinds: Vec<&str> = array(&fx.meta, "schedulers")
        .iter()
        .map(|d| d["kind"].as_str().expect("kind"))
        .collect();
    for want in [
        "multistep",
        "lambda",
        "one_cycle",
        "warm_restarts",
        "plateau",
        "constant",
        "polynomial",
        "sequential",
        "chained",
    ] {
        assert!(kinds.contains(&want), "no {want} schedule");
    }
}

/// A LambdaLR function the fixture names.
fn lambda(name: &str) -> LrLambda {
    match name {
        "pow95" => std::sync::Arc::new(|e: i64| 0.95f64.powf(e as f64)),
        "warmup10" => std::sync::Arc::new(|e: i64| f64::min(1.0, (e + 1) as f64 / 10.0)),
        other => panic!("unknown lambda {other}"),
    }
}

fn floats(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().map(|x| x.as_f64().expect("number")).collect(),
        other => vec![other.as_f64().expect("number")],
    }
}

/// The wgrad scheduler for a fixture description, attached to `opt`.
fn scheduler(desc: &Value, opt: &mut Sgd) -> Box<dyn LrScheduler> {
    let f = |k: &str| desc[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    let fo = |k: &str, d: f64| desc.get(k).and_then(Value::as_f64).unwrap_or(d);
    let n = |k: &str| desc[k].as_u64().unwrap_or_else(|| panic!("{k}")) as usize;
    // An argument PyTorch was not given: its default.
    let no = |k: &str, d: usize| {
        desc.get(k)
            .and_then(Value::as_u64)
            .map_or(d, |v| v as usize)
    };
    // The schedulers a SequentialLR or ChainedScheduler drives, in order.
    let inner = |opt: &mut Sgd| -> Vec<Box<dyn LrScheduler>> {
        desc["schedulers"]
            .as_array()
            .expect("schedulers")
            .iter()
            .map(|d| scheduler(d, opt))
            .collect()
    };
    match desc["kind"].as_str().expect("kind") {
        "multistep" => {
            let milestones: Vec<usize> = desc["milestones"]
                .as_array()
                .expect("milestones")
                .iter()
                .map(|m| m.as_u64().expect("milestone") as usize)
                .collect();
            Box::new(MultiStepLR::new(opt, &milestones, f("gamma")).unwrap())
        }
        "lambda" => {
            let names = desc["lambdas"].as_array().expect("lambdas");
            if names.len() == 1 {
                let l = lambda(names[0].as_str().expect("name"));
                Box::new(LambdaLR::new(opt, move |e| l(e)).unwrap())
            } else {
                let ls = names.iter().map(|n| lambda(n.as_str().unwrap())).collect();
                Box::new(LambdaLR::with_lambdas(opt, ls).unwrap())
            }
        }
        "one_cycle" => {
            let config = OneCycleConfig {
                max_lr: floats(&desc["max_lr"]),
                total_steps: n("total_steps"),
                pct_start: fo("pct_start", 0.3),
                anneal_strategy: match desc.get("anneal_strategy").and_then(Value::as_str) {
                    Some("linear") => AnnealStrategy::Linear,
                    _ => AnnealStrategy::Cos,
                },
                cycle_momentum: desc
                    .get("cycle_momentum")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
                div_factor: fo("div_factor", 25.0),
                final_div_factor: fo("final_div_factor", 1e4),
                three_phase: flag(desc, "three_phase"),
                ..OneCycleConfig::new(1.0, 1)
            };
            Box::new(OneCycleLR::with_config(opt, config).unwrap())
        }
        "warm_restarts" => Box::new(
            CosineAnnealingWarmRestarts::new(opt, n("t_0"), n("t_mult"), f("eta_min")).unwrap(),
        ),
        "sequential_linear_restarts" => {
            let warmup = LinearLR::new(opt, f("start_factor"), 1.0, n("total_iters")).unwrap();
            let restarts =
                CosineAnnealingWarmRestarts::new(opt, n("t_0"), n("t_mult"), f("eta_min")).unwrap();
            Box::new(
                SequentialLR::new(
                    opt,
                    vec![Box::new(warmup), Box::new(restarts)],
                    vec![n("milestone")],
                )
                .unwrap(),
            )
        }
        "constant" => {
            Box::new(ConstantLR::new(opt, fo("factor", 1.0 / 3.0), no("total_iters", 5)).unwrap())
        }
        "polynomial" => {
            Box::new(PolynomialLR::new(opt, no("total_iters", 5), fo("power", 1.0)).unwrap())
        }
        "linear" => Box::new(
            LinearLR::new(
                opt,
                fo("start_factor", 1.0 / 3.0),
                fo("end_factor", 1.0),
                no("total_iters", 5),
            )
            .unwrap(),
        ),
        "sequential" => {
            let schedulers = inner(opt);
            let milestones = desc["milestones"]
                .as_array()
                .expect("milestones")
                .iter()
                .map(|m| m.as_u64().expect("milestone") as usize)
                .collect();
            Box::new(SequentialLR::new(opt, schedulers, milestones).unwrap())
        }
        "chained" => {
            let schedulers = inner(opt);
            Box::new(ChainedScheduler::new(opt, schedulers).unwrap())
        }
        other => panic!("unknown scheduler {other}"),
    }
}

fn plateau(desc: &Value, opt: &Sgd) -> ReduceLROnPlateau {
    let d = ReduceLROnPlateauConfig::default();
    let config = ReduceLROnPlateauConfig {
        mode: match desc["mode"].as_str() {
            Some("max") => PlateauMode::Max,
            _ => PlateauMode::Min,
        },
        factor: num(desc, "factor", d.factor),
        patience: desc
            .get("patience")
            .and_then(Value::as_u64)
            .map_or(d.patience, |p| p as usize),
        threshold: num(desc, "threshold", d.threshold),
        threshold_mode: match desc.get("threshold_mode").and_then(Value::as_str) {
            Some("abs") => ThresholdMode::Abs,
            _ => ThresholdMode::Rel,
        },
        cooldown: desc
            .get("cooldown")
            .and_then(Value::as_u64)
            .map_or(d.cooldown, |c| c as usize),
        min_lr: desc.get("min_lr").map_or(d.min_lr.clone(), floats),
        eps: num(desc, "eps", d.eps),
    };
    ReduceLROnPlateau::new(opt, config).unwrap()
}

/// `Err` naming the first epoch where `got` (epochs x groups) leaves `want`.
fn compare(name: &str, what: &str, got: &[Vec<f64>], want: &[f64]) -> Result<(), String> {
    let flat: Vec<f64> = got.iter().flatten().copied().collect();
    if flat.len() != want.len() {
        return Err(format!(
            "{name}: {} {what} values, PyTorch has {}",
            flat.len(),
            want.len()
        ));
    }
    let groups = got.first().map_or(1, Vec::len);
    match flat
        .iter()
        .zip(want)
        .position(|(g, w)| (g - w).abs() > LR_TOL * w.abs().max(1e-12))
    {
        None => Ok(()),
        Some(i) => Err(format!(
            "{name}: epoch {} group {}: wgrad {what} {}, PyTorch {}\n  wgrad:   {flat:?}\n  PyTorch: {want:?}",
            i / groups,
            i % groups,
            flat[i],
            want[i]
        )),
    }
}

fn check_schedule(fx: &Fixture, desc: &Value) -> Result<(), String> {
    let name = desc["name"].as_str().expect("name");
    let want = fx.f64(&format!("sched.{name}")).data;
    let base_lrs = floats(&desc["base_lrs"]);
    let param = || {
        Tensor::zeros(&[1], &Device::Cpu)
            .and_then(|t| t.with_requires_grad(true))
            .expect("param")
    };
    let groups = base_lrs
        .iter()
        .map(|&lr| ParamGroup::new(vec![param()], SgdConfig::new(lr)))
        .collect();
    let mut opt = Sgd::with_groups(groups).expect("Sgd::with_groups");
    let epochs = want.len() / base_lrs.len() - 1;
    let mut lrs = Vec::with_capacity(epochs + 1);
    let mut momenta = Vec::with_capacity(epochs + 1);
    let moments = |o: &Sgd| o.param_groups().iter().map(|g| g.config.momentum).collect();
    if desc["kind"] == "plateau" {
        let metrics = fx.f64(&format!("sched.{name}.metrics")).data;
        let mut sched = plateau(desc, &opt);
        lrs.push(opt.group_lrs());
        for &m in metrics.iter().take(epochs) {
            sched.step(&mut opt, m);
            if sched.get_last_lrs() != opt.group_lrs() {
                return Err(format!("{name}: get_last_lrs differs from the rates"));
            }
            lrs.push(opt.group_lrs());
        }
    } else {
        let mut sched = scheduler(desc, &mut opt);
        lrs.push(opt.group_lrs());
        momenta.push(moments(&opt));
        for _ in 0..epochs {
            sched.step(&mut opt);
            if sched.get_last_lrs() != opt.group_lrs() || sched.get_last_lr() != opt.lr() {
                return Err(format!("{name}: get_last_lr(s) differs from the rates"));
            }
            lrs.push(opt.group_lrs());
            momenta.push(moments(&opt));
        }
    }
    compare(name, "lr", &lrs, &want)?;
    if desc["momentum"] == true {
        let want = fx.f64(&format!("sched.{name}.momentum")).data;
        compare(name, "momentum", &momenta, &want)?;
    }
    Ok(())
}

#[test]
fn scheduler_learning_rates_of_every_group_match_pytorch() {
    let fx = Fixture::load("optim2.safetensors");
    let descs = array(&fx.meta, "schedulers");
    let failures: Vec<String> = descs
        .iter()
        .filter_map(|d| check_schedule(&fx, d).err())
        .collect();
    report("optim2 learning-rate schedules", descs.len(), &failures);
}

/// `Err(InvalidArgument)` whose message names the optimizer and `needle`.
fn assert_invalid<T>(result: wgrad::Result<T>, op: &str, needle: &str) {
    match result {
        Err(wgrad::Error::InvalidArgument { op: got, message }) => {
            assert_eq!(got, op, "{message}");
            assert!(
                message.contains(needle),
                "{op}: {message:?} lacks {needle:?}"
            );
        }
        Err(other) => panic!("{op}: expected InvalidArgument naming {needle}, got {other}"),
        Ok(_) => panic!("{op}: expected an error naming {needle}"),
    }
}

#[test]
fn bad_hyper_parameters_are_errors_naming_the_optimizer_and_value() {
    let p = || {
        vec![
            Tensor::zeros(&[2], &Device::Cpu)
                .and_then(|t| t.with_requires_grad(true))
                .unwrap(),
        ]
    };
    let rms = |c: RmsPropConfig| RmsProp::new(p(), c);
    let d = RmsPropConfig::default();
    assert_invalid(
        rms(RmsPropConfig { lr: -0.1, ..d }),
        "RMSprop",
        "learning rate: -0.1",
    );
    assert_invalid(
        rms(RmsPropConfig { eps: -1.0, ..d }),
        "RMSprop",
        "epsilon value: -1",
    );
    // torch accepts alpha = 1 (the square average stays 0).
    assert!(rms(RmsPropConfig { alpha: 1.0, ..d }).is_ok());
    assert_invalid(
        rms(RmsPropConfig { alpha: -0.5, ..d }),
        "RMSprop",
        "alpha value: -0.5",
    );
    assert_invalid(
        rms(RmsPropConfig {
            momentum: -0.9,
            ..d
        }),
        "RMSprop",
        "momentum value: -0.9",
    );
    assert_invalid(
        rms(RmsPropConfig {
            weight_decay: f64::NAN,
            ..d
        }),
        "RMSprop",
        "weight_decay value: NaN",
    );
    let ada = |c: AdagradConfig| Adagrad::new(p(), c);
    let d = AdagradConfig::default();
    assert_invalid(
        ada(AdagradConfig { lr: -1.0, ..d }),
        "Adagrad",
        "learning rate: -1",
    );
    assert_invalid(
        ada(AdagradConfig {
            lr_decay: -0.1,
            ..d
        }),
        "Adagrad",
        "lr_decay value: -0.1",
    );
    assert_invalid(
        ada(AdagradConfig {
            initial_accumulator_value: -2.0,
            ..d
        }),
        "Adagrad",
        "initial_accumulator_value value: -2",
    );
    assert_invalid(
        ada(AdagradConfig { eps: -1e-3, ..d }),
        "Adagrad",
        "epsilon value",
    );
    assert_invalid(Adagrad::new(vec![], d), "Adagrad", "empty parameter list");

    // Groups: the bad group is named; a tensor in two groups is refused.
    let w = p().remove(0);
    let base = AdamWConfig::default();
    assert_invalid(
        AdamW::with_groups(vec![
            ParamGroup::new(p(), base),
            ParamGroup::new(
                p(),
                AdamWConfig {
                    betas: (0.9, 1.5),
                    ..base
                },
            ),
        ]),
        "AdamW",
        "param group 1: Invalid beta parameter at index 1: 1.5",
    );
    assert_invalid(
        AdamW::with_groups(vec![
            ParamGroup::new(vec![w.clone()], base),
            ParamGroup::new(vec![w.clone()], base),
        ]),
        "AdamW",
        "same tensor",
    );
    // A value changed through param_groups_mut is checked by the next step.
    let mut opt = RmsProp::new(vec![w.clone()], RmsPropConfig::default()).unwrap();
    opt.param_groups_mut()[0].config.lr = -1.0;
    assert_invalid(opt.step(), "RMSprop", "learning rate: -1");

    // Schedulers.
    let mut sgd = Sgd::new(p(), SgdConfig::new(0.1)).unwrap();
    assert_invalid(
        CosineAnnealingWarmRestarts::new(&mut sgd, 0, 1, 0.0),
        "CosineAnnealingWarmRestarts",
        "T_0",
    );
    assert_invalid(
        CosineAnnealingWarmRestarts::new(&mut sgd, 3, 0, 0.0),
        "CosineAnnealingWarmRestarts",
        "T_mult",
    );
    let plateau = |c| ReduceLROnPlateau::new(&sgd, c);
    let d = ReduceLROnPlateauConfig::default();
    assert_invalid(
        plateau(ReduceLROnPlateauConfig {
            factor: 1.0,
            ..d.clone()
        }),
        "ReduceLROnPlateau",
        "Factor should be < 1.0",
    );
    assert_invalid(
        plateau(ReduceLROnPlateauConfig {
            min_lr: vec![0.0; 3],
            ..d
        }),
        "ReduceLROnPlateau",
        "expected 1 min_lrs, got 3",
    );
    assert_invalid(
        OneCycleLR::with_config(
            &mut sgd,
            OneCycleConfig {
                pct_start: 1.5,
                ..OneCycleConfig::new(0.1, 10)
            },
        ),
        "OneCycleLR",
        "pct_start, but got 1.5",
    );
    assert_invalid(
        OneCycleLR::new(&mut sgd, 0.1, 0),
        "OneCycleLR",
        "total_steps",
    );
    let mut adagrad = Adagrad::new(p(), AdagradConfig::default()).unwrap();
    assert_invalid(
        OneCycleLR::new(&mut adagrad, 0.1, 10),
        "OneCycleLR",
        "momentum or beta1",
    );
    assert_invalid(
        LambdaLR::with_lambdas(&mut sgd, vec![lambda("pow95"), lambda("pow95")]),
        "LambdaLR",
        "Expected 1 lr_lambdas, but got 2",
    );
    // PyTorch: "Constant multiplicative factor expected to be between 0 and 1."
    for bad in [1.5, -0.1, f64::NAN] {
        assert_invalid(
            ConstantLR::new(&mut sgd, bad, 5),
            "ConstantLR",
            &format!(
                "Constant multiplicative factor expected to be between 0 and 1, but got {bad}"
            ),
        );
    }
    assert!(ConstantLR::new(&mut sgd, 0.0, 5).is_ok() && ConstantLR::new(&mut sgd, 1.0, 0).is_ok());
    // PyTorch checks no PolynomialLR argument, but a negative power raises
    // at total_iters (0.0 to a negative power): refused up front.
    for bad in [-1.0, f64::NAN] {
        assert_invalid(
            PolynomialLR::new(&mut sgd, 5, bad),
            "PolynomialLR",
            &format!("power must be non-negative, but got {bad}"),
        );
    }
    assert!(PolynomialLR::new(&mut sgd, 0, 0.0).is_ok());
    // Stepping OneCycleLR past total_steps: PyTorch's error from try_step,
    // the rate held by the trait's step.
    let mut sched = OneCycleLR::new(&mut sgd, 0.1, 2).unwrap();
    sched.try_step(&mut sgd).unwrap();
    sched.try_step(&mut sgd).unwrap();
    let last = sgd.lr();
    assert_invalid(
        sched.try_step(&mut sgd),
        "OneCycleLR",
        "Tried to step 3 times",
    );
    sched.step(&mut sgd);
    assert_eq!(sgd.lr(), last);
}

/// Builds an optimizer over the given parameters.
type MakeOptimizer = fn(Vec<Tensor>) -> Box<dyn Optimizer>;

/// RMSprop and Adagrad on the GPU give the CPU's numbers with strided
/// parameters and gradients (views made dense on the first step).
#[test]
fn rmsprop_and_adagrad_gpu_steps_match_cpu_on_views() {
    let Some(device) = gpu() else { return };
    let run = |device: &Device, make: MakeOptimizer| {
        let values: Vec<f32> = (0..24).map(|i| (i as f32 - 11.5) * 0.13).collect();
        let base = Tensor::from_vec(values, &[4, 6], device).unwrap();
        // A transposed (strided) leaf parameter.
        let w = base
            .transpose(0, 1)
            .unwrap()
            .detach()
            .with_requires_grad(true)
            .unwrap();
        let mut opt = make(vec![w.clone()]);
        for _ in 0..3 {
            opt.zero_grad();
            let loss = w
                .square()
                .and_then(|s| s.sin())
                .and_then(|s| s.sum_all())
                .unwrap();
            loss.backward().unwrap();
            opt.step().unwrap();
        }
        w.to_vec_f32().unwrap()
    };
    let makers: Vec<(&str, MakeOptimizer)> = vec![
        ("rmsprop centered momentum wd", |p| {
            Box::new(
                RmsProp::new(
                    p,
                    RmsPropConfig {
                        momentum: 0.9,
                        centered: true,
                        weight_decay: 0.01,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        }),
        ("rmsprop centered", |p| {
            Box::new(
                RmsProp::new(
                    p,
                    RmsPropConfig {
                        centered: true,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        }),
        ("adagrad", |p| {
            Box::new(
                Adagrad::new(
                    p,
                    AdagradConfig {
                        lr_decay: 0.1,
                        initial_accumulator_value: 0.1,
                        maximize: true,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        }),
    ];
    for (name, make) in &makers {
        let cpu = run(&Device::Cpu, *make);
        let gpu = run(&device, *make);
        check_close(name, &gpu, &cpu, 1e-5).unwrap();
    }
}

/// Steps `opt` over parameters `w`, `b` `n` times (a fixed quadratic loss).
fn train(opt: &mut dyn Optimizer, w: &Tensor, b: &Tensor, n: usize) {
    for _ in 0..n {
        opt.zero_grad();
        let loss = w
            .square()
            .and_then(|s| s.sum_all())
            .and_then(|l| l.add(&b.sin().and_then(|s| s.sum_all()).unwrap()))
            .unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
    }
}

/// Saving and restoring an optimizer keeps every group's hyper-parameters,
/// rates and `initial_lr`, and the RMSprop/Adagrad state: training on from
/// the file gives the numbers of training on without it.
#[test]
fn grouped_rmsprop_adagrad_and_adamw_state_roundtrips_through_a_file() {
    use wgrad::nn::OptimizerCheckpoint;
    use wgrad::nn::checkpoint::{load_optimizer, save_optimizer};
    type Build = fn(&Tensor, &Tensor) -> Box<dyn OptimizerCheckpoint>;
    let builds: Vec<(&str, Build)> = vec![
        ("adamw", |w, b| {
            let base = AdamWConfig::default();
            Box::new(
                AdamW::with_groups(vec![
                    ParamGroup::new(vec![w.clone()], AdamWConfig { lr: 0.05, ..base }),
                    ParamGroup::new(
                        vec![b.clone()],
                        AdamWConfig {
                            lr: 0.01,
                            weight_decay: 0.0,
                            ..base
                        },
                    ),
                ])
                .unwrap(),
            )
        }),
        ("rmsprop", |w, b| {
            Box::new(
                RmsProp::with_groups(vec![
                    ParamGroup::new(
                        vec![w.clone()],
                        RmsPropConfig {
                            centered: true,
                            momentum: 0.5,
                            ..Default::default()
                        },
                    ),
                    ParamGroup::new(vec![b.clone()], RmsPropConfig::default()),
                ])
                .unwrap(),
            )
        }),
        ("adagrad", |w, b| {
            Box::new(
                Adagrad::new(
                    vec![w.clone(), b.clone()],
                    AdagradConfig {
                        lr_decay: 0.1,
                        initial_accumulator_value: 0.2,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        }),
    ];
    let dir = std::env::temp_dir().join(format!("wgrad-optim2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = || {
        let w = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[2, 2], &Device::Cpu).unwrap();
        let b = Tensor::from_vec(vec![0.3f32, -0.7], &[2], &Device::Cpu).unwrap();
        (
            w.with_requires_grad(true).unwrap(),
            b.with_requires_grad(true).unwrap(),
        )
    };
    for (name, build) in builds {
        let path = dir.join(format!("{name}.safetensors"));
        let (w, b) = params();
        let mut opt = build(&w, &b);
        // A scheduler records each group's initial_lr and lowers the rates.
        let mut sched = MultiStepLR::new(opt.as_mut(), &[1], 0.5).unwrap();
        train(opt.as_mut(), &w, &b, 2);
        sched.step(opt.as_mut());
        save_optimizer(opt.as_ref(), &path).unwrap();
        let (w2, b2) = params();
        w2.set_storage(w.detach().storage()).unwrap();
        b2.set_storage(b.detach().storage()).unwrap();
        let mut restored = build(&w2, &b2);
        load_optimizer(restored.as_mut(), &path).unwrap();
        assert_eq!(restored.group_lrs(), opt.group_lrs(), "{name}");
        assert_eq!(
            restored.group_initial_lrs(),
            opt.group_initial_lrs(),
            "{name}"
        );
        train(opt.as_mut(), &w, &b, 3);
        train(restored.as_mut(), &w2, &b2, 3);
        assert_eq!(w.to_vec_f32().unwrap(), w2.to_vec_f32().unwrap(), "{name}");
        assert_eq!(b.to_vec_f32().unwrap(), b2.to_vec_f32().unwrap(), "{name}");
    }
    // Another group layout is refused, naming the sizes.
    let (w, b) = params();
    let mut one_group = AdamW::new(vec![w, b], AdamWConfig::default()).unwrap();
    let err = load_optimizer(&mut one_group, dir.join("adamw.safetensors")).unwrap_err();
    assert!(err.to_string().contains("parameter group"), "{err}");
    // In memory, one group each: a count difference is named as such.
    let sd = one_group.optimizer_state_dict().unwrap();
    let (w, _) = params();
    let mut fewer = AdamW::new(vec![w], AdamWConfig::default()).unwrap();
    let err = fewer.load_optimizer_state_dict(&sd).unwrap_err();
    assert!(
        err.to_string()
            .contains("has state for 2 parameter(s), the optimizer has 1"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `add_param_group` appends a group with its own settings and state slots;
/// schedulers then drive it from its own base rate.
#[test]
fn added_groups_get_state_and_their_own_schedule() {
    use wgrad::optim::StepLR;
    let param = |v: f32| {
        Tensor::from_vec(vec![v, -v], &[2], &Device::Cpu)
            .and_then(|t| t.with_requires_grad(true))
            .unwrap()
    };
    let (a, b) = (param(1.0), param(2.0));
    let mut opt = Adagrad::new(vec![a.clone()], AdagradConfig::default()).unwrap();
    let group = |p: &Tensor, lr| {
        ParamGroup::new(
            vec![p.clone()],
            AdagradConfig {
                lr,
                ..Default::default()
            },
        )
    };
    opt.add_param_group(group(&b, 0.5)).unwrap();
    assert_invalid(
        opt.add_param_group(group(&a, 0.1)),
        "Adagrad",
        "same tensor",
    );
    assert_eq!(opt.group_lrs(), vec![0.01, 0.5]);
    assert_eq!(opt.params().len(), 2);
    let mut sched = StepLR::new(&mut opt, 1, 0.5).unwrap();
    for _ in 0..2 {
        opt.zero_grad();
        let loss = a
            .square()
            .and_then(|x| x.sum_all())
            .and_then(|x| x.add(&b.square().and_then(|y| y.sum_all()).unwrap()))
            .unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
        sched.step(&mut opt);
    }
    assert_eq!(opt.group_lrs(), vec![0.0025, 0.125]);
    assert_eq!(opt.group_initial_lrs(), vec![Some(0.01), Some(0.5)]);
    assert!(
        opt.state()
            .iter()
            .all(|s| s.as_ref().is_some_and(|s| s.step == 2))
    );
    // First step of group 1: sum = g^2, so the update is lr * sign(g) = 0.5.
    let b_now = b.to_vec_f32().unwrap();
    assert!(b_now[0] < 2.0 - 0.5 + 1e-6, "{b_now:?}");
}
