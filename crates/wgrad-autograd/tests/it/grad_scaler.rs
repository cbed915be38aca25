//! `GradScaler` against `torch.amp.GradScaler`'s semantics: scaled-then-
//! unscaled gradients and steps equal an unscaled run (the default scales
//! are powers of two, so unscaling is exact), overflowing gradients skip
//! the step and back the scale off, clean steps grow it, and the misuse
//! errors and state dict behave as PyTorch's.

use std::collections::BTreeMap;

use wgrad_autograd::optim::*;
use wgrad_autograd::{Device, Tensor};
use wgrad_test_support::{gpu, own_gpu};

fn param(values: &[f32], device: &Device) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()], device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

fn grad_values(t: &Tensor) -> Vec<f32> {
    values(&t.grad().expect("parameter has a gradient"))
}

/// A tiny model: `w` [3, 2], `b` [2]; loss = mean((x w + b - t)^2).
struct Tiny {
    w: Tensor,
    b: Tensor,
    x: Tensor,
    t: Tensor,
}

impl Tiny {
    fn new(device: &Device) -> Tiny {
        let w = Tensor::from_vec(vec![0.3f32, -0.7, 1.1, 0.05, -0.4, 0.9], &[3, 2], device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let b = param(&[0.1, -0.2], device);
        let x = Tensor::from_vec(
            vec![
                1.0f32, 2.0, -1.0, 0.5, -0.3, 2.5, -1.5, 0.7, 0.2, 3.0, 1.0, -2.0,
            ],
            &[4, 3],
            device,
        )
        .unwrap();
        let t = Tensor::from_vec(
            vec![1.0f32, 0.0, -1.0, 2.0, 0.5, 0.5, 3.0, -1.0],
            &[4, 2],
            device,
        )
        .unwrap();
        Tiny { w, b, x, t }
    }
    fn params(&self) -> Vec<Tensor> {
        vec![self.w.clone(), self.b.clone()]
    }
    fn loss(&self) -> Tensor {
        let y = self.x.matmul(&self.w).unwrap().add(&self.b).unwrap();
        y.sub(&self.t)
            .unwrap()
            .square()
            .unwrap()
            .mean_all()
            .unwrap()
    }
}

/// Every optimizer kind, built over `params`, as the trait object the
/// scaler must accept.
fn optimizers(params: Vec<Tensor>) -> Vec<(&'static str, Box<dyn Optimizer>)> {
    vec![
        (
            "SGD",
            Box::new(
                Sgd::new(
                    params.clone(),
                    SgdConfig {
                        lr: 0.1,
                        momentum: 0.9,
                        ..Default::default()
                    },
                )
                .unwrap(),
            ),
        ),
        (
            "Adam",
            Box::new(Adam::new(params.clone(), AdamConfig::default()).unwrap()),
        ),
        (
            "AdamW",
            Box::new(AdamW::new(params.clone(), AdamWConfig::default()).unwrap()),
        ),
        (
            "RMSprop",
            Box::new(RmsProp::new(params.clone(), RmsPropConfig::default()).unwrap()),
        ),
        (
            "Adagrad",
            Box::new(Adagrad::new(params, AdagradConfig::default()).unwrap()),
        ),
    ]
}

/// Runs 3 steps of each optimizer with and without the scaler (plus an
/// explicit `unscale_` on the scaled run, to compare the gradients) and
/// checks gradients and parameters after every step.
fn scaled_run_matches_unscaled(device: &Device) {
    let plain = Tiny::new(device);
    let scaled = Tiny::new(device);
    let runs = optimizers(plain.params())
        .into_iter()
        .zip(optimizers(scaled.params()));
    for ((name, mut opt_a), (_, mut opt_b)) in runs {
        let mut scaler = GradScaler::new();
        for step in 0..3 {
            opt_a.zero_grad();
            plain.loss().backward().unwrap();
            opt_b.zero_grad();
            scaler.scale(&scaled.loss()).unwrap().backward().unwrap();
            // Scaled by 65536 before unscaling.
            let g = grad_values(&scaled.b);
            let want = grad_values(&plain.b);
            for (got, want) in g.iter().zip(&want) {
                assert_eq!(*got, want * 65536.0, "{name} step {step}: scaled grad");
            }
            scaler.unscale_(opt_b.as_mut()).unwrap();
            for (p, q) in plain.params().iter().zip(scaled.params()) {
                assert_eq!(grad_values(&q), grad_values(p), "{name} step {step}: grad");
            }
            opt_a.step().unwrap();
            assert!(scaler.step(opt_b.as_mut()).unwrap(), "{name}: stepped");
            assert!(!scaler.last_step_skipped());
            scaler.update().unwrap();
            for (p, q) in plain.params().iter().zip(scaled.params()) {
                assert_eq!(values(&q), values(p), "{name} step {step}: parameter");
            }
        }
        assert_eq!(scaler.get_scale(), 65536.0);
        assert_eq!(scaler.get_growth_tracker(), 3);
    }
}

#[test]
fn finite_loss_steps_like_an_unscaled_run_with_every_optimizer() {
    scaled_run_matches_unscaled(&Device::Cpu);
}

#[test]
fn gpu_finite_loss_steps_like_an_unscaled_run() {
    let Some(dev) = gpu() else { return };
    scaled_run_matches_unscaled(&dev);
}

/// A step whose scaled gradient overflows f32 is skipped, leaves the
/// parameters and the optimizer's state alone and halves the scale.
fn overflow_skips_the_step(device: &Device) {
    let w = param(&[1.0, -2.0], device);
    let mut opt = Adam::new(vec![w.clone()], AdamConfig::default()).unwrap();
    let mut scaler = GradScaler::new();
    // d/dw of 1e38 * w, times 65536: past f32's range.
    let loss = w.mul_scalar(1e38).unwrap().sum_all().unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    assert!(grad_values(&w).iter().all(|g| g.is_infinite()));
    assert!(!scaler.step(&mut opt).unwrap(), "the step is skipped");
    assert!(scaler.last_step_skipped());
    assert_eq!(values(&w), [1.0, -2.0]);
    assert!(opt.state()[0].is_none(), "Adam never stepped");
    scaler.update().unwrap();
    assert_eq!(scaler.get_scale(), 32768.0);
    assert_eq!(scaler.get_growth_tracker(), 0);

    // A NaN in one gradient of several skips the step too.
    let v = param(&[0.5, 0.25, 4.0], device);
    let mut sgd = Sgd::new(vec![w.clone(), v.clone()], SgdConfig::new(0.1)).unwrap();
    sgd.zero_grad();
    scaler
        .scale(&w.square().unwrap().sum_all().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    let nan = Tensor::from_vec(vec![0.0f32, f32::NAN, 1.0], &[3], device).unwrap();
    v.set_grad(Some(nan)).unwrap();
    assert!(!scaler.step(&mut sgd).unwrap());
    assert!(scaler.last_step_skipped());
    assert_eq!(values(&w), [1.0, -2.0]);
    assert_eq!(values(&v), [0.5, 0.25, 4.0]);
    scaler.update().unwrap();
    assert_eq!(scaler.get_scale(), 16384.0);

    // The next clean step goes through and says so.
    sgd.zero_grad();
    scaler
        .scale(&w.square().unwrap().sum_all().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert!(scaler.step(&mut sgd).unwrap());
    assert!(!scaler.last_step_skipped());
    scaler.update().unwrap();
    let got = values(&w);
    assert!(
        (got[0] - 0.8).abs() < 1e-6 && (got[1] + 1.6).abs() < 1e-6,
        "{got:?}"
    );
    assert_eq!(scaler.get_growth_tracker(), 1);
}

#[test]
fn overflow_skips_the_step_and_backs_off() {
    overflow_skips_the_step(&Device::Cpu);
}

#[test]
fn gpu_overflow_skips_the_step_and_backs_off() {
    let Some(dev) = gpu() else { return };
    overflow_skips_the_step(&dev);
}

/// One clean step with `scaler` over `w` (loss = sum(w^2)), or one that
/// overflows.
fn one_step(scaler: &mut GradScaler, opt: &mut Sgd, w: &Tensor, overflow: bool) {
    opt.zero_grad();
    let factor = if overflow { 1e38 } else { 1.0 };
    let loss = w.mul_scalar(factor).unwrap().sum_all().unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    assert_eq!(scaler.step(opt).unwrap(), !overflow);
    scaler.update().unwrap();
}

#[test]
fn scale_grows_after_growth_interval_clean_steps() {
    let w = param(&[1.0, 2.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(1e-3)).unwrap();
    let mut scaler = GradScaler::with_config(GradScalerConfig {
        init_scale: 8.0,
        growth_interval: 3,
        ..Default::default()
    })
    .unwrap();
    for (i, tracker) in [1, 2].into_iter().enumerate() {
        one_step(&mut scaler, &mut opt, &w, false);
        assert_eq!(scaler.get_scale(), 8.0, "step {i}");
        assert_eq!(scaler.get_growth_tracker(), tracker);
    }
    one_step(&mut scaler, &mut opt, &w, false);
    assert_eq!(scaler.get_scale(), 16.0);
    assert_eq!(scaler.get_growth_tracker(), 0);
    // An overflow in the middle restarts the count.
    one_step(&mut scaler, &mut opt, &w, false);
    one_step(&mut scaler, &mut opt, &w, false);
    one_step(&mut scaler, &mut opt, &w, true);
    assert_eq!((scaler.get_scale(), scaler.get_growth_tracker()), (8.0, 0));
    for _ in 0..3 {
        one_step(&mut scaler, &mut opt, &w, false);
    }
    assert_eq!((scaler.get_scale(), scaler.get_growth_tracker()), (16.0, 0));
}

#[test]
fn scale_never_grows_past_f32_range() {
    let w = param(&[1e-30], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.0)).unwrap();
    let mut scaler = GradScaler::with_config(GradScalerConfig {
        init_scale: f64::from(f32::MAX),
        growth_interval: 1,
        ..Default::default()
    })
    .unwrap();
    one_step(&mut scaler, &mut opt, &w, false);
    assert_eq!(scaler.get_scale(), f64::from(f32::MAX));
    assert_eq!(scaler.get_growth_tracker(), 0);
}

#[test]
fn misuse_is_an_error_like_pytorch() {
    let w = param(&[1.0, 2.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1)).unwrap();
    let mut scaler = GradScaler::new();
    // Nothing recorded yet.
    let err = scaler.update().unwrap_err().to_string();
    assert!(
        err.contains("No inf checks were recorded prior to update"),
        "{err}"
    );
    let err = scaler.step(&mut opt).unwrap_err().to_string();
    assert!(err.contains("No inf checks were recorded"), "{err}");
    // The failed step recorded nothing: update still has nothing to go on.
    assert!(scaler.update().is_err());

    scaler
        .scale(&w.square().unwrap().sum_all().unwrap())
        .unwrap()
        .backward()
        .unwrap();
    scaler.unscale_(&mut opt).unwrap();
    let once = grad_values(&w);
    let err = scaler.unscale_(&mut opt).unwrap_err().to_string();
    assert!(
        err.contains(
            "unscale_() has already been called on this optimizer since the last update()"
        ),
        "{err}"
    );
    assert_eq!(grad_values(&w), once, "the failed call changed nothing");
    assert_eq!(once, [2.0, 4.0]);
    assert!(scaler.step(&mut opt).unwrap());
    let err = scaler.step(&mut opt).unwrap_err().to_string();
    assert!(
        err.contains("step() has already been called since the last update()"),
        "{err}"
    );
    let err = scaler.unscale_(&mut opt).unwrap_err().to_string();
    assert!(
        err.contains("unscale_() is being called after step()"),
        "{err}"
    );
    scaler.update().unwrap();
    // After update the cycle starts over.
    scaler.unscale_(&mut opt).unwrap();
}

#[test]
fn unscale_then_clip_then_step() {
    let w = param(&[3.0, 4.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(1.0)).unwrap();
    let mut scaler = GradScaler::new();
    let loss = w
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .mul_scalar(0.5)
        .unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap(); // grad = w, norm 5
    scaler.unscale_(&mut opt).unwrap();
    let norm = clip_grad_norm_(std::slice::from_ref(&w), 1.0, 2.0).unwrap();
    assert_eq!(norm.item().unwrap(), 5.0);
    assert!(scaler.step(&mut opt).unwrap()); // does not unscale again
    scaler.update().unwrap();
    let got = values(&w);
    assert!(
        (got[0] - 2.4).abs() < 1e-5 && (got[1] - 3.2).abs() < 1e-5,
        "{got:?}"
    );
}

#[test]
fn each_optimizer_skips_on_its_own_and_update_backs_off_for_any() {
    let a = param(&[1.0], &Device::Cpu);
    let b = param(&[1.0], &Device::Cpu);
    let mut opt_a = Sgd::new(vec![a.clone()], SgdConfig::new(0.5)).unwrap();
    let mut opt_b = Sgd::new(vec![b.clone()], SgdConfig::new(0.5)).unwrap();
    let mut scaler = GradScaler::new();
    let loss = a
        .square()
        .unwrap()
        .add(&b.mul_scalar(1e38).unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    assert!(scaler.step(&mut opt_a).unwrap());
    assert!(!scaler.step(&mut opt_b).unwrap());
    scaler.update().unwrap();
    assert_eq!(values(&a), [0.0]);
    assert_eq!(values(&b), [1.0]);
    assert_eq!(scaler.get_scale(), 32768.0);
}

#[test]
fn bad_configs_are_errors() {
    // The defaults with one setting changed.
    let with = |change: fn(&mut GradScalerConfig)| {
        let mut config = GradScalerConfig::default();
        change(&mut config);
        config
    };
    let bad = [
        ("init_scale", with(|c| c.init_scale = 0.0)),
        ("init_scale", with(|c| c.init_scale = -1.0)),
        ("init_scale", with(|c| c.init_scale = f64::INFINITY)),
        ("init_scale", with(|c| c.init_scale = f64::NAN)),
        // Finite in f64, infinite once the scale is kept as an f32.
        ("init_scale", with(|c| c.init_scale = 1e39)),
        ("growth factor", with(|c| c.growth_factor = 1.0)),
        ("growth factor", with(|c| c.growth_factor = f64::NAN)),
        ("backoff factor", with(|c| c.backoff_factor = 1.0)),
        ("backoff factor", with(|c| c.backoff_factor = 0.0)),
        ("growth_interval", with(|c| c.growth_interval = 0)),
    ];
    for (what, config) in bad {
        let err = GradScaler::with_config(config).unwrap_err().to_string();
        assert!(err.contains(what), "{config:?}: {err}");
    }
    // A disabled scaler ignores its settings, as PyTorch only checks enabled ones.
    let off = GradScalerConfig {
        growth_factor: 0.5,
        enabled: false,
        ..Default::default()
    };
    assert!(!GradScaler::with_config(off).unwrap().is_enabled());
    let mut scaler = GradScaler::new();
    assert!(scaler.set_growth_factor(0.9).is_err());
    assert!(scaler.set_backoff_factor(1.5).is_err());
    assert!(scaler.set_growth_interval(0).is_err());
    assert!(scaler.update_to(f64::NAN).is_err());
    assert!(scaler.update_to(0.0).is_err());
    assert_eq!(scaler.get_growth_factor(), 2.0);
    assert_eq!(scaler.get_backoff_factor(), 0.5);
    assert_eq!(scaler.get_growth_interval(), 2000);
    assert_eq!(scaler.get_scale(), 65536.0);
}

#[test]
fn state_dict_round_trips_and_bad_state_changes_nothing() {
    let mut scaler = GradScaler::with_config(GradScalerConfig {
        init_scale: 1024.0,
        growth_factor: 4.0,
        backoff_factor: 0.25,
        growth_interval: 5,
        enabled: true,
    })
    .unwrap();
    let w = param(&[1.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1)).unwrap();
    one_step(&mut scaler, &mut opt, &w, false);
    one_step(&mut scaler, &mut opt, &w, false);
    let state = scaler.state_dict();
    let want: BTreeMap<String, f64> = [
        ("scale", 1024.0),
        ("growth_factor", 4.0),
        ("backoff_factor", 0.25),
        ("growth_interval", 5.0),
        ("_growth_tracker", 2.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(state, want);

    let mut fresh = GradScaler::new();
    fresh.load_state_dict(&state).unwrap();
    assert_eq!(fresh.state_dict(), state);
    assert_eq!(fresh.get_growth_interval(), 5);

    let before = GradScaler::new().state_dict();
    let broken = |key: &str, value: Option<f64>, what: &str| {
        let mut bad = state.clone();
        match value {
            Some(v) => bad.insert(key.to_string(), v),
            None => bad.remove(key),
        };
        let mut target = GradScaler::new();
        let err = target.load_state_dict(&bad).unwrap_err().to_string();
        assert!(err.contains(what), "{key}={value:?}: {err}");
        assert_eq!(
            target.state_dict(),
            before,
            "{key}={value:?} changed the scaler"
        );
    };
    broken("scale", None, "missing the key \"scale\"");
    broken(
        "_growth_tracker",
        None,
        "missing the key \"_growth_tracker\"",
    );
    broken("scale", Some(f64::NAN), "scale");
    broken("scale", Some(f64::INFINITY), "scale");
    broken("scale", Some(-2.0), "scale");
    broken("growth_factor", Some(0.5), "growth factor");
    broken("backoff_factor", Some(2.0), "backoff factor");
    broken("growth_interval", Some(0.0), "growth_interval");
    broken("growth_interval", Some(2.5), "growth_interval");
    broken("_growth_tracker", Some(5.0), "_growth_tracker");
    broken("_growth_tracker", Some(-1.0), "_growth_tracker");
    let err = GradScaler::new()
        .load_state_dict(&BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn disabled_scaler_passes_everything_through() {
    let mut scaler = GradScaler::with_config(GradScalerConfig {
        enabled: false,
        ..Default::default()
    })
    .unwrap();
    let w = param(&[1.0, -2.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1)).unwrap();
    let loss = w.square().unwrap().sum_all().unwrap();
    let scaled = scaler.scale(&loss).unwrap();
    assert_eq!(scaled.id(), loss.id(), "the loss itself");
    scaled.backward().unwrap();
    scaler.unscale_(&mut opt).unwrap();
    scaler.unscale_(&mut opt).unwrap(); // nothing recorded, so no error
    assert_eq!(grad_values(&w), [2.0, -4.0]);
    assert!(scaler.step(&mut opt).unwrap());
    scaler.update().unwrap();
    let got = values(&w);
    assert!(
        (got[0] - 0.8).abs() < 1e-6 && (got[1] + 1.6).abs() < 1e-6,
        "{got:?}"
    );
    assert_eq!(scaler.get_scale(), 1.0);
    assert!(scaler.state_dict().is_empty());
    assert!(
        scaler
            .load_state_dict(&GradScaler::new().state_dict())
            .is_err()
    );
}

/// The inf/NaN check stays on the device: `unscale_` reads nothing back,
/// `step` reads one scalar for all parameters, `update` reuses it.
#[test]
fn gpu_check_reads_back_once_per_step() {
    let Some(gpu) = own_gpu() else { return };
    let device = Device::Gpu(gpu.clone());
    let model = Tiny::new(&device);
    let mut opt = Adam::new(model.params(), AdamConfig::default()).unwrap();
    let mut scaler = GradScaler::new();
    for overflow in [false, true] {
        opt.zero_grad();
        let loss = if overflow {
            model.loss().mul_scalar(1e38).unwrap()
        } else {
            model.loss()
        };
        scaler.scale(&loss).unwrap().backward().unwrap();
        let before = gpu.stats();
        scaler.unscale_(&mut opt).unwrap();
        let d = gpu.stats().since(&before);
        assert_eq!(d.readbacks, 0, "unscale_: {d:?}");
        assert!(d.dispatches > 0);
        let before = gpu.stats();
        assert_eq!(scaler.step(&mut opt).unwrap(), !overflow);
        scaler.update().unwrap();
        let d = gpu.stats().since(&before);
        assert_eq!(d.readbacks, 1, "step + update, overflow {overflow}: {d:?}");
    }
    assert_eq!(scaler.get_scale(), 32768.0);
}
