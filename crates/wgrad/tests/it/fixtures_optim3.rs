//! NAdam, RAdam, Adamax and Adadelta against PyTorch, from
//! `tests/fixtures/optim3.safetensors` (`make_optim3_fixtures.py`):
//!
//! * 20 steps of linear regression per optimizer configuration (defaults,
//!   L2 and decoupled weight decay, maximize, NAdam's momentum decay,
//!   RAdam's unrectified and rectified steps, two parameter groups with
//!   different rates): the loss before every step and the parameters after
//!   it within 1e-5 (CPU) or 1e-4 (GPU) of PyTorch's, and the final state (PyTorch's buffers and
//!   NAdam's `mu_product`), on the CPU and on the GPU (where a step reads
//!   nothing back);
//! * bad hyper-parameters are errors naming the optimizer and the value;
//! * a step that fails leaves the parameter and its state as they were;
//!   16-bit parameters step through F32 with F32 state; schedulers drive
//!   the groups (OneCycleLR cycles beta1, refuses Adadelta).

use crate::common::{Fixture, array, check_close, report};
use serde_json::Value;
use wgrad::nn::Reduction;
use wgrad::nn::loss::mse_loss;
use wgrad::optim::{
    Adadelta, AdadeltaConfig, Adamax, AdamaxConfig, LrScheduler, NAdam, NAdamConfig, OneCycleLR,
    Optimizer, ParamGroup, RAdam, RAdamConfig, StepLR,
};
use wgrad::{DType, Device, Tensor};

/// Relative tolerance for parameter trajectories, losses and final state on
/// the CPU (the same f32 arithmetic in the same order: about 1e-6 apart
/// after 20 steps, from rounding such as PyTorch's fused multiply-adds)...
const CPU_TOL: f32 = 1e-5;
/// ... and on the GPU (its own `sqrt` and division rounding).
const GPU_TOL: f32 = 1e-4;

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

fn nadam_config(c: &Value) -> NAdamConfig {
    let d = NAdamConfig::default();
    NAdamConfig {
        lr: num(c, "lr", d.lr),
        betas: betas(c),
        eps: num(c, "eps", d.eps),
        weight_decay: num(c, "weight_decay", d.weight_decay),
        momentum_decay: num(c, "momentum_decay", d.momentum_decay),
        decoupled_weight_decay: flag(c, "decoupled_weight_decay"),
        maximize: flag(c, "maximize"),
    }
}

fn radam_config(c: &Value) -> RAdamConfig {
    let d = RAdamConfig::default();
    RAdamConfig {
        lr: num(c, "lr", d.lr),
        betas: betas(c),
        eps: num(c, "eps", d.eps),
        weight_decay: num(c, "weight_decay", d.weight_decay),
        decoupled_weight_decay: flag(c, "decoupled_weight_decay"),
        maximize: flag(c, "maximize"),
    }
}

fn adamax_config(c: &Value) -> AdamaxConfig {
    let d = AdamaxConfig::default();
    AdamaxConfig {
        lr: num(c, "lr", d.lr),
        betas: betas(c),
        eps: num(c, "eps", d.eps),
        weight_decay: num(c, "weight_decay", d.weight_decay),
        maximize: flag(c, "maximize"),
    }
}

fn adadelta_config(c: &Value) -> AdadeltaConfig {
    let d = AdadeltaConfig::default();
    AdadeltaConfig {
        lr: num(c, "lr", d.lr),
        rho: num(c, "rho", d.rho),
        eps: num(c, "eps", d.eps),
        weight_decay: num(c, "weight_decay", d.weight_decay),
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

/// One of the four optimizers, for reading its state back.
enum AnyOpt {
    NAdam(NAdam),
    RAdam(RAdam),
    Adamax(Adamax),
    Adadelta(Adadelta),
}

impl AnyOpt {
    fn new(desc: &Value, w: &Tensor, b: &Tensor) -> AnyOpt {
        match desc["kind"].as_str().expect("kind") {
            "nadam" => AnyOpt::NAdam(NAdam::with_groups(groups(desc, w, b, nadam_config)).unwrap()),
            "radam" => AnyOpt::RAdam(RAdam::with_groups(groups(desc, w, b, radam_config)).unwrap()),
            "adamax" => {
                AnyOpt::Adamax(Adamax::with_groups(groups(desc, w, b, adamax_config)).unwrap())
            }
            "adadelta" => AnyOpt::Adadelta(
                Adadelta::with_groups(groups(desc, w, b, adadelta_config)).unwrap(),
            ),
            other => panic!("unknown optimizer {other}"),
        }
    }

    fn opt(&mut self) -> &mut dyn Optimizer {
        match self {
            AnyOpt::NAdam(o) => o,
            AnyOpt::RAdam(o) => o,
            AnyOpt::Adamax(o) => o,
            AnyOpt::Adadelta(o) => o,
        }
    }

    /// The step count and PyTorch-named state of parameter `i`.
    fn state(&self, i: usize) -> (u64, Vec<(&'static str, Vec<f32>)>) {
        let v = |t: &Tensor| t.to_vec_f32().expect("state readback");
        match self {
            AnyOpt::NAdam(o) => {
                let s = o.state()[i].as_ref().expect("NAdam state");
                let mu = vec![s.mu_product as f32];
                let bufs = vec![
                    ("exp_avg", v(&s.exp_avg)),
                    ("exp_avg_sq", v(&s.exp_avg_sq)),
                    ("mu_product", mu),
                ];
                (s.step, bufs)
            }
            AnyOpt::RAdam(o) => {
                let s = o.state()[i].as_ref().expect("RAdam state");
                let bufs = vec![("exp_avg", v(&s.exp_avg)), ("exp_avg_sq", v(&s.exp_avg_sq))];
                (s.step, bufs)
            }
            AnyOpt::Adamax(o) => {
                let s = o.state()[i].as_ref().expect("Adamax state");
                let bufs = vec![("exp_avg", v(&s.exp_avg)), ("exp_inf", v(&s.exp_inf))];
                (s.step, bufs)
            }
            AnyOpt::Adadelta(o) => {
                let s = o.state()[i].as_ref().expect("Adadelta state");
                let bufs = vec![
                    ("square_avg", v(&s.square_avg)),
                    ("acc_delta", v(&s.acc_delta)),
                ];
                (s.step, bufs)
            }
        }
    }

    /// The optimizer's parameters, by the fixture's names.
    fn param_names(&mut self, w: &Tensor) -> Vec<&'static str> {
        self.opt()
            .params()
            .iter()
            .map(|p| if p.id() == w.id() { "weight" } else { "bias" })
            .collect()
    }
}

/// Runs one optimizer's 20 steps; `Err` names the first step that drifts
/// from PyTorch's trajectory, or the final state that differs.
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
    let tol = match device {
        Device::Cpu => CPU_TOL,
        Device::Gpu(_) => GPU_TOL,
    };
    let x = fx.tensor_f32("data.x", device);
    let y = fx.tensor_f32("data.y", device);
    let mut any = AnyOpt::new(desc, &w, &b);
    let want_w = fx.f32(&format!("{name}.weight"));
    let want_b = fx.f32(&format!("{name}.bias"));
    let want_loss = fx.f32(&format!("{name}.loss"));
    let (nw, nb) = (w.numel(), b.numel());
    assert_eq!(want_w.data.len(), steps * nw, "{name}: weight trajectory");
    for step in 0..steps {
        let opt = any.opt();
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
            tol,
        )?;
        check_close(
            &at("weight"),
            &w.to_vec_f32().map_err(err)?,
            &want_w.data[step * nw..(step + 1) * nw],
            tol,
        )?;
        check_close(
            &at("bias"),
            &b.to_vec_f32().map_err(err)?,
            &want_b.data[step * nb..(step + 1) * nb],
            tol,
        )?;
    }
    for (i, pname) in any.param_names(&w).into_iter().enumerate() {
        let (step, buffers) = any.state(i);
        if step != steps as u64 {
            return Err(format!(
                "{name}: {pname} state has step {step}, not {steps}"
            ));
        }
        for (buf, got) in buffers {
            let want = fx.f32(&format!("{name}.state.{pname}.{buf}"));
            check_close(
                &format!("{name}: final state {pname}.{buf}"),
                &got,
                &want.data,
                tol,
            )?;
        }
    }
    Ok(())
}

fn run_optimizers(device: &Device, what: &str) {
    let fx = Fixture::load("optim3.safetensors");
    let optimizers = array(&fx.meta, "optimizers");
    let failures: Vec<String> = optimizers
        .iter()
        .filter_map(|d| check_trajectory(&fx, d, device).err())
        .collect();
    report(what, optimizers.len(), &failures);
}

#[test]
fn nadam_radam_adamax_adadelta_trajectories_match_pytorch_on_cpu() {
    run_optimizers(&Device::Cpu, "optim3 trajectories on the CPU");
}

#[test]
fn nadam_radam_adamax_adadelta_trajectories_match_pytorch_on_gpu() {
    // A device of its own, so that the readback count is this test's alone.
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    run_optimizers(&Device::Gpu(g), "optim3 trajectories on the GPU");
}

/// The fixture has every configuration the issue asks for.
#[test]
fn optim3_fixture_covers_the_configurations() {
    let fx = Fixture::load("optim3.safetensors");
    let descs = array(&fx.meta, "optimizers");
    let has = |kind: &str, key: &str| {
        descs.iter().any(|d| {
            d["kind"] == kind
                && (d["config"].get(key).is_some()
                    || d["groups"]
                        .as_array()
                        .is_some_and(|gs| gs.iter().any(|g| g.get(key).is_some())))
        })
    };
    for kind in ["nadam", "radam", "adamax", "adadelta"] {
        assert!(
            descs
                .iter()
                .any(|d| d["kind"] == kind && d["config"].as_object().is_some_and(|c| c.is_empty())),
            "no {kind} trajectory with the defaults"
        );
        assert!(
            descs
                .iter()
                .any(|d| d["kind"] == kind && d["groups"].is_array()),
            "no {kind} trajectory with two groups"
        );
        for key in ["weight_decay", "maximize"] {
            assert!(has(kind, key), "no {kind} trajectory with {key}");
        }
    }
    for kind in ["nadam", "radam"] {
        assert!(has(kind, "decoupled_weight_decay"), "no decoupled {kind}");
    }
    assert!(has("nadam", "momentum_decay"));
    assert!(has("adadelta", "rho"));
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

fn leaf(values: &[f32], device: &Device) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()], device)
        .and_then(|t| t.with_requires_grad(true))
        .unwrap()
}

fn p() -> Vec<Tensor> {
    vec![leaf(&[0.0, 0.0], &Device::Cpu)]
}

#[test]
fn bad_hyper_parameters_are_errors_naming_the_optimizer_and_value() {
    // PyTorch's ValueError messages.
    let d = NAdamConfig::default();
    let nadam = |c: NAdamConfig| NAdam::new(p(), c);
    assert_invalid(
        nadam(NAdamConfig { lr: -0.1, ..d }),
        "NAdam",
        "Invalid learning rate: -0.1",
    );
    assert_invalid(
        nadam(NAdamConfig { eps: -1.0, ..d }),
        "NAdam",
        "Invalid epsilon value: -1",
    );
    assert_invalid(
        nadam(NAdamConfig {
            betas: (1.0, 0.999),
            ..d
        }),
        "NAdam",
        "Invalid beta parameter at index 0: 1",
    );
    assert_invalid(
        nadam(NAdamConfig {
            betas: (0.9, -0.1),
            ..d
        }),
        "NAdam",
        "Invalid beta parameter at index 1: -0.1",
    );
    assert_invalid(
        nadam(NAdamConfig {
            weight_decay: -1e-2,
            ..d
        }),
        "NAdam",
        "Invalid weight_decay value: -0.01",
    );
    assert_invalid(
        nadam(NAdamConfig {
            momentum_decay: -4e-3,
            ..d
        }),
        "NAdam",
        "Invalid momentum_decay value: -0.004",
    );
    assert_invalid(
        nadam(NAdamConfig {
            momentum_decay: f64::NAN,
            ..d
        }),
        "NAdam",
        "Invalid momentum_decay value: NaN",
    );

    let d = RAdamConfig::default();
    let radam = |c: RAdamConfig| RAdam::new(p(), c);
    assert_invalid(
        radam(RAdamConfig { lr: -1.0, ..d }),
        "RAdam",
        "Invalid learning rate: -1",
    );
    assert_invalid(
        radam(RAdamConfig { eps: -1e-8, ..d }),
        "RAdam",
        "Invalid epsilon value",
    );
    assert_invalid(
        radam(RAdamConfig {
            betas: (0.9, f64::NAN),
            ..d
        }),
        "RAdam",
        "Invalid beta parameter at index 1: NaN",
    );
    assert_invalid(
        radam(RAdamConfig {
            weight_decay: -0.5,
            ..d
        }),
        "RAdam",
        "Invalid weight_decay value: -0.5",
    );

    let d = AdamaxConfig::default();
    let adamax = |c: AdamaxConfig| Adamax::new(p(), c);
    assert_invalid(
        adamax(AdamaxConfig { lr: -2e-3, ..d }),
        "Adamax",
        "Invalid learning rate: -0.002",
    );
    assert_invalid(
        adamax(AdamaxConfig { eps: -1.0, ..d }),
        "Adamax",
        "Invalid epsilon value: -1",
    );
    assert_invalid(
        adamax(AdamaxConfig {
            betas: (-0.1, 0.999),
            ..d
        }),
        "Adamax",
        "Invalid beta parameter at index 0: -0.1",
    );
    assert_invalid(
        adamax(AdamaxConfig {
            weight_decay: -1.0,
            ..d
        }),
        "Adamax",
        "Invalid weight_decay value: -1",
    );

    let d = AdadeltaConfig::default();
    let adadelta = |c: AdadeltaConfig| Adadelta::new(p(), c);
    assert_invalid(
        adadelta(AdadeltaConfig { lr: -1.0, ..d }),
        "Adadelta",
        "Invalid learning rate: -1",
    );
    assert_invalid(
        adadelta(AdadeltaConfig { rho: 1.5, ..d }),
        "Adadelta",
        "Invalid rho value: 1.5",
    );
    assert_invalid(
        adadelta(AdadeltaConfig { rho: -0.1, ..d }),
        "Adadelta",
        "Invalid rho value: -0.1",
    );
    // torch accepts rho = 0 and rho = 1.
    assert!(adadelta(AdadeltaConfig { rho: 1.0, ..d }).is_ok());
    assert!(adadelta(AdadeltaConfig { rho: 0.0, ..d }).is_ok());
    assert_invalid(
        adadelta(AdadeltaConfig { eps: -1e-6, ..d }),
        "Adadelta",
        "Invalid epsilon value",
    );
    assert_invalid(
        adadelta(AdadeltaConfig {
            weight_decay: -0.1,
            ..d
        }),
        "Adadelta",
        "Invalid weight_decay value: -0.1",
    );
    assert_invalid(Adadelta::new(vec![], d), "Adadelta", "empty parameter list");

    // Groups: the bad group is named; changes through param_groups_mut are
    // checked by the next step.
    let base = NAdamConfig::default();
    assert_invalid(
        NAdam::with_groups(vec![
            ParamGroup::new(p(), base),
            ParamGroup::new(p(), NAdamConfig { lr: -1.0, ..base }),
        ]),
        "NAdam",
        "param group 1: Invalid learning rate: -1",
    );
    let mut opt = Adamax::new(p(), AdamaxConfig::default()).unwrap();
    opt.param_groups_mut()[0].config.betas.1 = 1.0;
    assert_invalid(opt.step(), "Adamax", "Invalid beta parameter at index 1: 1");
}

/// Sets `w`'s gradient to `2 w` (the gradient of `sum(w^2)`).
fn square_grad(w: &Tensor) {
    w.set_grad(Some(w.detach().mul_scalar(2.0).unwrap()))
        .unwrap();
}

/// A step that fails (here on a restored state of the wrong shape) changes neither the parameter nor its state; the
/// parameters before it in the same step did take their update.
#[test]
fn a_failed_step_leaves_parameter_and_state_unchanged() {
    let d = &Device::Cpu;
    let (a, b) = (leaf(&[1.0, -2.0], d), leaf(&[3.0, 4.0], d));
    let mut opt = NAdam::new(
        vec![a.clone(), b.clone()],
        NAdamConfig {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    square_grad(&a);
    square_grad(&b);
    opt.step().unwrap();
    let (a1, b1) = (a.to_vec_f32().unwrap(), b.to_vec_f32().unwrap());
    let state = opt.state()[1].clone().unwrap();
    let (m, v) = (
        state.exp_avg.to_vec_f32().unwrap(),
        state.exp_avg_sq.to_vec_f32().unwrap(),
    );
    // A wrong-shaped exp_avg_sq for b.
    let bad = Tensor::zeros(&[1], d).unwrap();
    if let Some(s) = opt.state_mut()[1].as_mut() {
        s.exp_avg_sq = bad;
    }
    square_grad(&a);
    square_grad(&b);
    assert!(opt.step().is_err());
    assert_ne!(a.to_vec_f32().unwrap(), a1, "a's update went through");
    assert_eq!(b.to_vec_f32().unwrap(), b1);
    let after = opt.state()[1].clone().unwrap();
    assert_eq!(after.step, 1);
    assert_eq!(after.mu_product, state.mu_product);
    assert_eq!(after.exp_avg.to_vec_f32().unwrap(), m);
    assert_eq!(state.exp_avg.to_vec_f32().unwrap(), m);
    assert_eq!(v.len(), 2);
}

/// 16-bit parameters step through F32 (rounded once into the parameter);
/// the state is F32, and the result is the F32 step's, rounded.
#[test]
fn half_parameters_step_in_f32_with_f32_state() {
    let d = &Device::Cpu;
    for dtype in [DType::BF16, DType::F16] {
        let w32 = leaf(&[0.5, -1.25, 2.0], d);
        let wh = w32
            .detach()
            .cast(dtype)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let c = RAdamConfig {
            lr: 0.05,
            weight_decay: 0.1,
            ..Default::default()
        };
        let mut o32 = RAdam::new(vec![w32.clone()], c).unwrap();
        let mut oh = RAdam::new(vec![wh.clone()], c).unwrap();
        for _ in 0..8 {
            for (w, o) in [(&w32, &mut o32 as &mut dyn Optimizer), (&wh, &mut oh)] {
                o.zero_grad();
                w.square().unwrap().sum_all().unwrap().backward().unwrap();
                o.step().unwrap();
            }
            // Keep the F32 run on the half run's values, so each step is
            // compared from the same start.
            w32.set_storage(wh.detach().cast(DType::F32).unwrap().storage())
                .unwrap();
        }
        assert_eq!(wh.dtype(), dtype);
        let s = oh.state()[0].as_ref().unwrap();
        assert_eq!(s.exp_avg.dtype(), DType::F32);
        assert_eq!(s.exp_avg_sq.dtype(), DType::F32);
        assert_eq!(s.step, 8);
        // One more step on both from the same value: the half result is
        // the F32 result rounded once.
        for (w, o) in [(&w32, &mut o32 as &mut dyn Optimizer), (&wh, &mut oh)] {
            o.zero_grad();
            w.square().unwrap().sum_all().unwrap().backward().unwrap();
            o.step().unwrap();
        }
        let want = w32
            .detach()
            .cast(dtype)
            .unwrap()
            .cast(DType::F32)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        assert_eq!(wh.to_vec_f32().unwrap(), want, "{dtype:?}");
    }
}

/// Schedulers drive every group; OneCycleLR cycles beta1 of the Adam-like
/// three and refuses Adadelta (no momentum or betas), as PyTorch does.
#[test]
fn schedulers_drive_the_groups() {
    let (w, b) = (p().remove(0), p().remove(0));
    let mut opt = RAdam::with_groups(vec![
        ParamGroup::new(
            vec![w.clone()],
            RAdamConfig {
                lr: 0.1,
                ..Default::default()
            },
        ),
        ParamGroup::new(
            vec![b.clone()],
            RAdamConfig {
                lr: 0.01,
                ..Default::default()
            },
        ),
    ])
    .unwrap();
    let mut sched = StepLR::new(&mut opt, 1, 0.5).unwrap();
    sched.step(&mut opt);
    assert_eq!(opt.group_lrs(), vec![0.05, 0.005]);

    let mut nadam = NAdam::new(p(), NAdamConfig::default()).unwrap();
    let mut cycle = OneCycleLR::new(&mut nadam, 0.1, 10).unwrap();
    let start = nadam.param_groups()[0].config.betas.0;
    cycle.step(&mut nadam);
    assert_ne!(nadam.param_groups()[0].config.betas.0, start);
    let mut adamax = Adamax::new(p(), AdamaxConfig::default()).unwrap();
    assert!(OneCycleLR::new(&mut adamax, 0.1, 10).is_ok());
    let mut adadelta = Adadelta::new(p(), AdadeltaConfig::default()).unwrap();
    assert_invalid(
        OneCycleLR::new(&mut adadelta, 0.1, 10),
        "OneCycleLR",
        "momentum or beta1",
    );
}
