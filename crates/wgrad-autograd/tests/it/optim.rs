//! Optimizers, schedulers and clipping against PyTorch's numbers.
//!
//! Reference values are either worked out by hand from `torch.optim`'s
//! algorithms (the literals below; e.g. SGD with momentum 0.9 and weight
//! decay 0.1 on `loss = w^2` from `w = 1`, lr 0.1: `d = 2.1, buf = 2.1,
//! w = 0.79`, then `d = 1.659, buf = 0.9 * 2.1 + 1.659 = 3.549, w = 0.4351`,
//! ...), closed forms (constant gradients), or an f64 transcription of the
//! algorithm pseudo-code in PyTorch's documentation for longer runs. The
//! f32 implementation must match them to 1e-5 relative, and the GPU must
//! match the CPU to 1e-5 relative.

use wgrad_autograd::optim::*;
use wgrad_autograd::{Device, Error, Storage, Tensor};
use wgrad_test_support::{gpu, own_gpu};

fn assert_close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (f64::from(g) - w).abs() / w.abs().max(1.0);
        assert!(
            err <= tol,
            "{what}[{i}]: got {g}, want {w} (rel err {err:e})\n got {got:?}\nwant {want:?}"
        );
    }
}

fn assert_close_f32(got: &[f32], want: &[f32], tol: f64, what: &str) {
    let want: Vec<f64> = want.iter().map(|&x| f64::from(x)).collect();
    assert_close(got, &want, tol, what);
}

fn param(values: &[f32], device: &Device) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()], device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

/// Sets `loss = sum(w^2)` gradients (2w) by running backward.
fn backward_square(w: &Tensor) {
    w.square().unwrap().sum_all().unwrap().backward().unwrap();
}

fn boxed<O: Optimizer + 'static>(opt: O) -> Box<dyn Optimizer> {
    Box::new(opt)
}

fn run_steps(opt: &mut dyn Optimizer, w: &Tensor, steps: usize) -> Vec<f32> {
    let mut trace = Vec::new();
    for _ in 0..steps {
        opt.zero_grad();
        backward_square(w);
        opt.step().unwrap();
        trace.push(values(w)[0]);
    }
    trace
}

// ---------------------------------------------------------------------------
// f64 transcriptions of torch.optim's documented algorithms, for a scripted
// gradient sequence (grad_fn gives the gradient at the current parameter).
// ---------------------------------------------------------------------------

fn sgd_reference(
    w0: &[f64],
    steps: usize,
    c: SgdConfig,
    grad_fn: &dyn Fn(usize, &[f64]) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    let mut w = w0.to_vec();
    let mut buf: Option<Vec<f64>> = None;
    let mut out = Vec::new();
    for t in 0..steps {
        let g = grad_fn(t, &w);
        let mut d: Vec<f64> = g
            .iter()
            .zip(&w)
            .map(|(g, w)| if c.maximize { -g } else { *g } + c.weight_decay * w)
            .collect();
        if c.momentum != 0.0 {
            let b = match buf {
                None => d.clone(),
                Some(b) => b
                    .iter()
                    .zip(&d)
                    .map(|(b, d)| c.momentum * b + (1.0 - c.dampening) * d)
                    .collect(),
            };
            d = if c.nesterov {
                d.iter().zip(&b).map(|(d, b)| d + c.momentum * b).collect()
            } else {
                b.clone()
            };
            buf = Some(b);
        }
        w = w.iter().zip(&d).map(|(w, d)| w - c.lr * d).collect();
        out.push(w.clone());
    }
    out
}

fn adam_reference(
    w0: &[f64],
    steps: usize,
    c: AdamConfig,
    decoupled: bool,
    grad_fn: &dyn Fn(usize, &[f64]) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    let n = w0.len();
    let (mut w, mut m, mut v, mut vmax) = (
        w0.to_vec(),
        vec![0.0f64; n],
        vec![0.0f64; n],
        vec![0.0f64; n],
    );
    let (b1, b2) = c.betas;
    let mut out = Vec::new();
    for t in 1..=steps {
        let g = grad_fn(t - 1, &w);
        for i in 0..n {
            let mut g = if c.maximize { -g[i] } else { g[i] };
            if decoupled {
                w[i] *= 1.0 - c.lr * c.weight_decay;
            } else {
                g += c.weight_decay * w[i];
            }
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            vmax[i] = vmax[i].max(v[i]);
            let m_hat = m[i] / (1.0 - b1.powi(t as i32));
            let second = if c.amsgrad { vmax[i] } else { v[i] };
            let v_hat = second / (1.0 - b2.powi(t as i32));
            w[i] -= c.lr * m_hat / (v_hat.sqrt() + c.eps);
        }
        out.push(w.clone());
    }
    out
}

// ---------------------------------------------------------------------------
// SGD
// ---------------------------------------------------------------------------

#[test]
fn sgd_plain_is_geometric_on_a_quadratic() {
    // loss = w^2: w_t = (1 - 2 lr)^t w0; with weight decay (1 - lr (2 + wd))^t.
    for (wd, maximize) in [(0.0, false), (0.1, false), (0.0, true)] {
        let w = param(&[1.0, -2.0], &Device::Cpu);
        let config = SgdConfig {
            lr: 0.1,
            weight_decay: wd,
            maximize,
            ..Default::default()
        };
        let mut opt = Sgd::new(vec![w.clone()], config).unwrap();
        for _ in 0..8 {
            opt.zero_grad();
            backward_square(&w);
            opt.step().unwrap();
        }
        let sign = if maximize { -1.0 } else { 1.0 };
        let factor: f64 = 1.0 - 0.1 * (sign * 2.0 + wd);
        let want = [factor.powi(8), -2.0 * factor.powi(8)];
        assert_close(
            &values(&w),
            &want,
            1e-5,
            &format!("sgd wd={wd} maximize={maximize}"),
        );
    }
}

#[test]
fn sgd_momentum_and_nesterov_match_hand_computed_torch_values() {
    let cases: [(SgdConfig, [f64; 3]); 3] = [
        (
            SgdConfig {
                lr: 0.1,
                momentum: 0.9,
                weight_decay: 0.1,
                ..Default::default()
            },
            [0.79, 0.4351, 0.024319],
        ),
        (
            SgdConfig {
                lr: 0.1,
                momentum: 0.9,
                weight_decay: 0.1,
                nesterov: true,
                ..Default::default()
            },
            [0.601, 0.191101, -0.140468399],
        ),
        // Dampening does not apply to the first step (the buffer is the gradient).
        (
            SgdConfig {
                lr: 0.1,
                momentum: 0.9,
                dampening: 0.5,
                ..Default::default()
            },
            [0.8, 0.54, 0.252],
        ),
    ];
    for (config, want) in cases {
        let w = param(&[1.0], &Device::Cpu);
        let mut opt = Sgd::new(vec![w.clone()], config).unwrap();
        let trace = run_steps(&mut opt, &w, 3);
        assert_close(&trace, &want, 1e-5, &format!("{config:?}"));
    }
}

#[test]
fn sgd_momentum_closed_form_with_constant_gradient() {
    // grad = c: buf_t = c (1 - m^t) / (1 - m); w_T = w0 - lr sum_t buf_t.
    let (lr, m, c) = (0.05, 0.8, 0.5f64);
    let w = param(&[3.0], &Device::Cpu);
    let mut opt = Sgd::new(
        vec![w.clone()],
        SgdConfig {
            lr,
            momentum: m,
            ..Default::default()
        },
    )
    .unwrap();
    let mut expect = 3.0;
    for t in 1..=10 {
        opt.zero_grad();
        w.mul_scalar(c as f32)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        opt.step().unwrap();
        expect -= lr * c * (1.0 - m.powi(t)) / (1.0 - m);
        assert_close(&values(&w), &[expect], 1e-5, &format!("step {t}"));
    }
    let buf = opt.state()[0].momentum_buffer.as_ref().unwrap();
    assert_close(
        &values(buf),
        &[c * (1.0 - m.powi(10)) / (1.0 - m)],
        1e-5,
        "buffer",
    );
}

#[test]
fn sgd_ten_step_trajectories_match_the_reference() {
    let w0 = [0.5, -1.5, 2.0];
    let grad_fn =
        |t: usize, w: &[f64]| -> Vec<f64> { w.iter().map(|x| 2.0 * x + 0.1 * t as f64).collect() };
    let configs = [
        SgdConfig {
            lr: 0.05,
            momentum: 0.9,
            ..Default::default()
        },
        SgdConfig {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.01,
            ..Default::default()
        },
        SgdConfig {
            lr: 0.05,
            momentum: 0.5,
            dampening: 0.2,
            weight_decay: 0.05,
            maximize: true,
            ..Default::default()
        },
    ];
    for config in configs {
        let want = sgd_reference(&w0, 10, config, &grad_fn);
        let w = param(&w0.map(|x| x as f32), &Device::Cpu);
        let mut opt = Sgd::new(vec![w.clone()], config).unwrap();
        for (t, want_t) in want.iter().enumerate() {
            let wv: Vec<f64> = values(&w).iter().map(|&x| f64::from(x)).collect();
            let g: Vec<f32> = grad_fn(t, &wv).iter().map(|&x| x as f32).collect();
            w.set_grad(Some(Tensor::from_vec(g, &[3], &Device::Cpu).unwrap()))
                .unwrap();
            opt.step().unwrap();
            assert_close(&values(&w), want_t, 1e-5, &format!("{config:?} step {t}"));
        }
    }
}

// ---------------------------------------------------------------------------
// Adam / AdamW
// ---------------------------------------------------------------------------

#[test]
fn adam_moves_lr_per_step_under_a_constant_gradient() {
    // m_t / bc1 = c and sqrt(v_t) / sqrt(bc2) = |c|, so every step is lr * c / (|c| + eps).
    let (lr, c) = (0.1, [0.5f64, -2.0]);
    let w = param(&[1.0, 1.0], &Device::Cpu);
    let mut opt = Adam::new(
        vec![w.clone()],
        AdamConfig {
            lr,
            ..Default::default()
        },
    )
    .unwrap();
    let coef = Tensor::from_vec(c.map(|x| x as f32).to_vec(), &[2], &Device::Cpu).unwrap();
    for t in 1..=10 {
        opt.zero_grad();
        w.mul(&coef).unwrap().sum_all().unwrap().backward().unwrap();
        opt.step().unwrap();
        let want: Vec<f64> = c
            .iter()
            .map(|c| 1.0 - t as f64 * lr * c / (c.abs() + 1e-8))
            .collect();
        assert_close(&values(&w), &want, 1e-5, &format!("step {t}"));
    }
    let state = opt.state()[0].as_ref().unwrap();
    assert_eq!(state.step, 10);
    let m_want: Vec<f64> = c.iter().map(|c| c * (1.0 - 0.9f64.powi(10))).collect();
    assert_close(&values(&state.exp_avg), &m_want, 1e-5, "exp_avg");
    let v_want: Vec<f64> = c
        .iter()
        .map(|c| c * c * (1.0 - 0.999f64.powi(10)))
        .collect();
    assert_close(&values(&state.exp_avg_sq), &v_want, 1e-5, "exp_avg_sq");
    assert!(state.max_exp_avg_sq.is_none());
}

#[test]
fn adamw_closed_form_with_constant_gradient() {
    // w_t = a w_{t-1} - s with a = 1 - lr wd, s = lr c / (|c| + eps).
    let (lr, wd, c) = (0.05, 0.2, 0.3f64);
    let w = param(&[2.0], &Device::Cpu);
    let mut opt = AdamW::new(
        vec![w.clone()],
        AdamWConfig {
            lr,
            weight_decay: wd,
            ..Default::default()
        },
    )
    .unwrap();
    let (a, s) = (1.0 - lr * wd, lr * c / (c + 1e-8));
    for t in 1..=10 {
        opt.zero_grad();
        w.mul_scalar(c as f32)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        opt.step().unwrap();
        let want = a.powi(t) * 2.0 - s * (1.0 - a.powi(t)) / (1.0 - a);
        assert_close(&values(&w), &[want], 1e-5, &format!("step {t}"));
    }
}

#[test]
fn adam_and_adamw_match_hand_computed_torch_values() {
    // loss = w^2 from w = 1, lr 0.1 (values from torch's algorithm in f64).
    let cases: [(AdamConfig, bool, [f64; 3]); 3] = [
        (
            AdamConfig {
                lr: 0.1,
                ..Default::default()
            },
            false,
            [0.9, 0.800_412_228_7, 0.701_586_273_0],
        ),
        (
            AdamConfig {
                lr: 0.1,
                weight_decay: 0.1,
                ..Default::default()
            },
            false,
            [0.9, 0.800_412_228_6, 0.701_586_272_9],
        ),
        (
            AdamConfig {
                lr: 0.1,
                weight_decay: 0.1,
                ..Default::default()
            },
            true,
            [0.89, 0.781_571_855_9, 0.675_101_221_6],
        ),
    ];
    for (config, decoupled, want) in cases {
        let w = param(&[1.0], &Device::Cpu);
        let mut opt: Box<dyn Optimizer> = if decoupled {
            let AdamConfig {
                lr,
                betas,
                eps,
                weight_decay,
                amsgrad,
                maximize,
            } = config;
            Box::new(
                AdamW::new(
                    vec![w.clone()],
                    AdamWConfig {
                        lr,
                        betas,
                        eps,
                        weight_decay,
                        amsgrad,
                        maximize,
                    },
                )
                .unwrap(),
            )
        } else {
            Box::new(Adam::new(vec![w.clone()], config).unwrap())
        };
        let trace = run_steps(opt.as_mut(), &w, 3);
        assert_close(
            &trace,
            &want,
            1e-5,
            &format!("{config:?} decoupled={decoupled}"),
        );
    }
}

#[test]
fn amsgrad_uses_the_running_max() {
    // Shrinking gradients: the running max keeps the denominator large.
    let grads = [1.0, 0.5, 0.01, 0.01, 0.01, 0.01];
    let ams = [
        0.900_000_001,
        0.805_288_589_4,
        0.733_348_636_6,
        0.675_370_494_8,
        0.627_091_773_4,
        0.586_040_188_6,
    ];
    let plain = [
        0.900_000_001,
        0.805_288_589_4,
        0.729_460_884_0,
        0.665_047_295_6,
        0.608_511_720_8,
        0.557_842_298_0,
    ];
    for (amsgrad, want) in [(true, ams), (false, plain)] {
        let w = param(&[1.0], &Device::Cpu);
        let config = AdamConfig {
            lr: 0.1,
            betas: (0.9, 0.9),
            amsgrad,
            ..Default::default()
        };
        let mut opt = Adam::new(vec![w.clone()], config).unwrap();
        let mut trace = Vec::new();
        for g in grads {
            w.set_grad(Some(Tensor::from_vec(vec![g], &[1], &Device::Cpu).unwrap()))
                .unwrap();
            opt.step().unwrap();
            trace.push(values(&w)[0]);
        }
        assert_close(&trace, &want, 1e-5, &format!("amsgrad={amsgrad}"));
        let state = opt.state()[0].as_ref().unwrap();
        assert_eq!(state.max_exp_avg_sq.is_some(), amsgrad);
        if let Some(vmax) = &state.max_exp_avg_sq {
            // v_2 = 0.9 * 0.1 + 0.1 * 0.5^2 = 0.115 is the largest second moment seen.
            let v = values(vmax)[0];
            assert!(
                (v - 0.115).abs() < 1e-6 && v > values(&state.exp_avg_sq)[0],
                "vmax {v}"
            );
        }
    }
}

#[test]
fn adam_ten_step_trajectories_match_the_reference() {
    let w0 = [0.5, -1.5, 2.0];
    let grad_fn = |t: usize, w: &[f64]| -> Vec<f64> {
        w.iter().map(|x| 2.0 * x / (1.0 + t as f64)).collect()
    };
    let configs = [
        (
            AdamConfig {
                lr: 0.05,
                ..Default::default()
            },
            false,
        ),
        (
            AdamConfig {
                lr: 0.05,
                amsgrad: true,
                weight_decay: 0.05,
                ..Default::default()
            },
            false,
        ),
        (
            AdamConfig {
                lr: 0.05,
                betas: (0.8, 0.99),
                eps: 1e-3,
                weight_decay: 0.1,
                ..Default::default()
            },
            true,
        ),
        (
            AdamConfig {
                lr: 0.05,
                amsgrad: true,
                maximize: true,
                weight_decay: 0.01,
                ..Default::default()
            },
            true,
        ),
    ];
    for (config, decoupled) in configs {
        let want = adam_reference(&w0, 10, config, decoupled, &grad_fn);
        let w = param(&w0.map(|x| x as f32), &Device::Cpu);
        let mut opt: Box<dyn Optimizer> = if decoupled {
            let AdamConfig {
                lr,
                betas,
                eps,
                weight_decay,
                amsgrad,
                maximize,
            } = config;
            Box::new(
                AdamW::new(
                    vec![w.clone()],
                    AdamWConfig {
                        lr,
                        betas,
                        eps,
                        weight_decay,
                        amsgrad,
                        maximize,
                    },
                )
                .unwrap(),
            )
        } else {
            Box::new(Adam::new(vec![w.clone()], config).unwrap())
        };
        for (t, want_t) in want.iter().enumerate() {
            let wv: Vec<f64> = values(&w).iter().map(|&x| f64::from(x)).collect();
            let g: Vec<f32> = grad_fn(t, &wv).iter().map(|&x| x as f32).collect();
            w.set_grad(Some(Tensor::from_vec(g, &[3], &Device::Cpu).unwrap()))
                .unwrap();
            opt.step().unwrap();
            assert_close(
                &values(&w),
                want_t,
                1e-5,
                &format!("{config:?} decoupled={decoupled} step {t}"),
            );
        }
    }
}

#[test]
fn params_without_grad_are_skipped_and_state_is_lazy() {
    let a = param(&[1.0], &Device::Cpu);
    let b = param(&[5.0], &Device::Cpu);
    let mut opt = Adam::new(
        vec![a.clone(), b.clone()],
        AdamConfig {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    backward_square(&a);
    opt.step().unwrap();
    assert_eq!(values(&b), vec![5.0]);
    assert!(opt.state()[0].is_some() && opt.state()[1].is_none());
    opt.zero_grad();
    assert!(a.grad().is_none());
    opt.step().unwrap();
    assert_eq!(
        opt.state()[0].as_ref().unwrap().step,
        1,
        "a step without a grad does not count"
    );

    let mut sgd = Sgd::new(
        vec![a.clone(), b.clone()],
        SgdConfig {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )
    .unwrap();
    b.set_grad(Some(
        Tensor::from_vec(vec![1.0f32], &[1], &Device::Cpu).unwrap(),
    ))
    .unwrap();
    sgd.step().unwrap();
    assert!(sgd.state()[0].momentum_buffer.is_none() && sgd.state()[1].momentum_buffer.is_some());
    assert_close(&values(&b), &[4.9], 1e-6, "b");
}

#[test]
fn defaults_are_torchs() {
    let s = SgdConfig::default();
    assert_eq!(
        (
            s.lr,
            s.momentum,
            s.dampening,
            s.nesterov,
            s.weight_decay,
            s.maximize
        ),
        (1e-3, 0.0, 0.0, false, 0.0, false)
    );
    assert_eq!(SgdConfig::new(0.5).lr, 0.5);
    let a = AdamConfig::default();
    assert_eq!(
        (a.lr, a.betas, a.eps, a.weight_decay, a.amsgrad, a.maximize),
        (1e-3, (0.9, 0.999), 1e-8, 0.0, false, false)
    );
    let w = AdamWConfig::default();
    assert_eq!(
        (w.lr, w.betas, w.eps, w.weight_decay, w.amsgrad, w.maximize),
        (1e-3, (0.9, 0.999), 1e-8, 1e-2, false, false)
    );
}

// ---------------------------------------------------------------------------
// GPU == CPU
// ---------------------------------------------------------------------------

/// Linear regression `mean((x w + b - y)^2)` with fixed data on `device`:
/// runs `steps` optimizer steps and returns the final (w, b).
fn regression(
    device: &Device,
    make: &dyn Fn(Vec<Tensor>) -> Box<dyn Optimizer>,
    steps: usize,
) -> (Vec<f32>, Vec<f32>) {
    let x = Tensor::from_vec(
        vec![
            0.5f32, -1.0, 2.0, 1.5, 0.0, -0.5, -2.0, 1.0, 0.25, 1.0, 1.0, -1.0,
        ],
        &[4, 3],
        device,
    )
    .unwrap();
    let y = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0], &[4, 1], device).unwrap();
    let w = Tensor::from_vec(vec![0.1f32, -0.2, 0.3], &[3, 1], device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let b = Tensor::from_vec(vec![0.05f32], &[1], device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let mut opt = make(vec![w.clone(), b.clone()]);
    for _ in 0..steps {
        opt.zero_grad();
        let loss = x
            .matmul(&w)
            .unwrap()
            .add(&b)
            .unwrap()
            .sub(&y)
            .unwrap()
            .square()
            .unwrap()
            .mean_all()
            .unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
    }
    (values(&w), values(&b))
}

#[test]
fn gpu_trajectories_match_cpu() {
    let Some(dev) = gpu() else { return };
    type Make = Box<dyn Fn(Vec<Tensor>) -> Box<dyn Optimizer>>;
    let makers: Vec<(&str, Make)> = vec![
        (
            "sgd",
            Box::new(|p: Vec<Tensor>| boxed(Sgd::new(p, SgdConfig::new(0.1)).unwrap())),
        ),
        (
            "sgd momentum wd",
            Box::new(|p: Vec<Tensor>| {
                boxed(
                    Sgd::new(
                        p,
                        SgdConfig {
                            lr: 0.05,
                            momentum: 0.9,
                            weight_decay: 0.01,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                )
            }),
        ),
        (
            "sgd nesterov maximize",
            Box::new(|p: Vec<Tensor>| {
                let c = SgdConfig {
                    lr: 0.01,
                    momentum: 0.8,
                    nesterov: true,
                    maximize: true,
                    ..Default::default()
                };
                boxed(Sgd::new(p, c).unwrap())
            }),
        ),
        (
            "sgd dampening",
            Box::new(|p: Vec<Tensor>| {
                boxed(
                    Sgd::new(
                        p,
                        SgdConfig {
                            lr: 0.05,
                            momentum: 0.5,
                            dampening: 0.3,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                )
            }),
        ),
        (
            "adam",
            Box::new(|p: Vec<Tensor>| {
                boxed(
                    Adam::new(
                        p,
                        AdamConfig {
                            lr: 0.05,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                )
            }),
        ),
        (
            "adam amsgrad wd",
            Box::new(|p: Vec<Tensor>| {
                boxed(
                    Adam::new(
                        p,
                        AdamConfig {
                            lr: 0.05,
                            amsgrad: true,
                            weight_decay: 0.1,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                )
            }),
        ),
        (
            "adamw",
            Box::new(|p: Vec<Tensor>| {
                boxed(
                    AdamW::new(
                        p,
                        AdamWConfig {
                            lr: 0.05,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                )
            }),
        ),
        (
            "adamw amsgrad maximize",
            Box::new(|p: Vec<Tensor>| {
                let c = AdamWConfig {
                    lr: 0.01,
                    amsgrad: true,
                    maximize: true,
                    weight_decay: 0.1,
                    ..Default::default()
                };
                boxed(AdamW::new(p, c).unwrap())
            }),
        ),
    ];
    for (name, make) in &makers {
        let (cw, cb) = regression(&Device::Cpu, make.as_ref(), 8);
        let (gw, gb) = regression(&dev, make.as_ref(), 8);
        assert_close_f32(&gw, &cw, 1e-5, &format!("{name}: w"));
        assert_close_f32(&gb, &cb, 1e-5, &format!("{name}: b"));
    }
}

#[test]
fn gpu_state_matches_cpu_state() {
    let Some(dev) = gpu() else { return };
    let mut states = Vec::new();
    for device in [Device::Cpu, dev] {
        let w = param(&[1.0, -0.5, 0.25], &device);
        let config = AdamConfig {
            lr: 0.1,
            amsgrad: true,
            ..Default::default()
        };
        let mut opt = Adam::new(vec![w.clone()], config).unwrap();
        run_steps(&mut opt, &w, 5);
        let s = opt.state()[0].clone().unwrap();
        assert_eq!(s.step, 5);
        states.push((
            values(&s.exp_avg),
            values(&s.exp_avg_sq),
            values(s.max_exp_avg_sq.as_ref().unwrap()),
        ));
    }
    assert_close_f32(&states[1].0, &states[0].0, 1e-5, "exp_avg");
    assert_close_f32(&states[1].1, &states[0].1, 1e-5, "exp_avg_sq");
    assert_close_f32(&states[1].2, &states[0].2, 1e-5, "max_exp_avg_sq");
}

#[test]
fn gpu_steps_and_clipping_never_read_back() {
    let Some(gpu) = own_gpu() else { return };
    let device = Device::Gpu(gpu.clone());
    let w = Tensor::randn_with(&[8, 4], 0.0, 1.0, 1, &device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let b = Tensor::zeros(&[4], &device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let x = Tensor::randn_with(&[5, 8], 0.0, 1.0, 2, &device).unwrap();
    let params = vec![w.clone(), b.clone()];
    let mut opts: Vec<Box<dyn Optimizer>> = vec![
        Box::new(
            Sgd::new(
                params.clone(),
                SgdConfig {
                    lr: 0.1,
                    momentum: 0.9,
                    nesterov: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        ),
        Box::new(
            Adam::new(
                params.clone(),
                AdamConfig {
                    amsgrad: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        ),
        Box::new(AdamW::new(params.clone(), AdamWConfig::default()).unwrap()),
    ];
    for opt in &mut opts {
        for step in 0..3 {
            let loss = x
                .matmul(&w)
                .unwrap()
                .add(&b)
                .unwrap()
                .tanh()
                .unwrap()
                .mean_all()
                .unwrap();
            loss.backward().unwrap();
            let before = gpu.stats();
            let norm = clip_grad_norm_(&params, 0.5, 2.0).unwrap();
            clip_grad_value_(&params, 0.1).unwrap();
            opt.step().unwrap();
            opt.zero_grad();
            let d = gpu.stats().since(&before);
            assert_eq!(d.readbacks, 0, "step {step}: {d:?}");
            assert!(d.dispatches > 0);
            drop(norm);
        }
    }
    // The parameters did change.
    assert!(values(&b).iter().any(|&v| v != 0.0));
}

#[test]
fn gpu_update_is_in_place() {
    let Some(dev) = gpu() else { return };
    let w = param(&[1.0, 2.0], &dev);
    let alias = w.detach();
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.5)).unwrap();
    backward_square(&w);
    opt.step().unwrap();
    // Like torch's in-place param.add_, tensors sharing the data see the update.
    assert_eq!(values(&alias), vec![0.0, 0.0]);
}

// ---------------------------------------------------------------------------
// Schedulers (values worked out from torch.optim.lr_scheduler's get_lr)
// ---------------------------------------------------------------------------

fn sgd_with_lr(lr: f64) -> Sgd {
    Sgd::new(vec![param(&[0.0], &Device::Cpu)], SgdConfig::new(lr)).unwrap()
}

/// The rate after construction and after each of `want.len() - 1` steps.
fn check_schedule(opt: &mut Sgd, sched: &mut dyn LrScheduler, want: &[f64], what: &str) {
    for (epoch, &w) in want.iter().enumerate() {
        if epoch > 0 {
            sched.step(opt);
        }
        assert!(
            (opt.lr() - w).abs() < 1e-12,
            "{what} epoch {epoch}: lr {} want {w}",
            opt.lr()
        );
        assert!(
            (sched.get_last_lr() - w).abs() < 1e-12,
            "{what} epoch {epoch}: last_lr {}",
            sched.get_last_lr()
        );
        assert_eq!(sched.last_epoch(), epoch as i64, "{what}");
    }
}

#[test]
fn step_lr_values() {
    let mut opt = sgd_with_lr(0.1);
    let mut s = StepLR::new(&mut opt, 2, 0.5).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125],
        "StepLR",
    );
}

#[test]
fn exponential_lr_values() {
    let mut opt = sgd_with_lr(0.1);
    let mut s = ExponentialLR::new(&mut opt, 0.9).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.1, 0.09, 0.081, 0.0729, 0.06561],
        "ExponentialLR",
    );
}

#[test]
fn cosine_annealing_values_including_past_t_max() {
    let mut opt = sgd_with_lr(0.1);
    let mut s = CosineAnnealingLR::new(&mut opt, 4, 0.01).unwrap();
    let c = std::f64::consts::FRAC_1_SQRT_2;
    // eta_min + (0.1 - eta_min) (1 + cos(pi e / 4)) / 2, then rising again past T_max.
    let want = [
        0.1,
        0.01 + 0.045 * (1.0 + c),
        0.055,
        0.01 + 0.045 * (1.0 - c),
        0.01,
        0.01 + 0.045 * (1.0 - c),
        0.055,
    ];
    check_schedule(&mut opt, &mut s, &want, "CosineAnnealingLR");
}

#[test]
fn linear_lr_values() {
    let mut opt = sgd_with_lr(0.1);
    let mut s = LinearWarmup::new(&mut opt, 0.25, 1.0, 4).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.025, 0.04375, 0.0625, 0.08125, 0.1, 0.1],
        "LinearLR",
    );
    // Decay direction too.
    let mut opt = sgd_with_lr(1.0);
    let mut s = LinearLR::new(&mut opt, 1.0, 0.5, 2).unwrap();
    check_schedule(&mut opt, &mut s, &[1.0, 0.75, 0.5, 0.5], "LinearLR decay");
    // total_iters = 0, which PyTorch accepts: the start factor for good.
    let mut opt = sgd_with_lr(1.0);
    let mut s = LinearLR::new(&mut opt, 0.5, 0.8, 0).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.5, 0.5, 0.5, 0.5],
        "LinearLR total_iters 0",
    );
}

/// Every group's rate after construction and after each of `want.len() - 1` steps.
fn check_group_schedule(opt: &mut Sgd, sched: &mut dyn LrScheduler, want: &[&[f64]], what: &str) {
    for (epoch, w) in want.iter().enumerate() {
        if epoch > 0 {
            sched.step(opt);
        }
        let got = opt.group_lrs();
        assert_eq!(got.len(), w.len(), "{what} epoch {epoch}: groups");
        for (g, (&a, &b)) in got.iter().zip(w.iter()).enumerate() {
            assert!(
                (a - b).abs() < 1e-12,
                "{what} epoch {epoch} group {g}: lr {a} want {b} ({got:?})"
            );
        }
        assert_eq!(sched.get_last_lrs(), got, "{what} epoch {epoch}");
    }
}

fn sgd_with_groups(lrs: &[f64]) -> Sgd {
    let groups = lrs
        .iter()
        .map(|&lr| ParamGroup::new(vec![param(&[0.0], &Device::Cpu)], SgdConfig::new(lr)))
        .collect();
    Sgd::with_groups(groups).unwrap()
}

// The ConstantLR/PolynomialLR sequences below are PyTorch 2.15's (printed
// by torch.optim.lr_scheduler; tests/fixtures/optim2.safetensors has 50
// epochs of more configurations), except where a comment says PyTorch raises.

#[test]
fn constant_lr_values() {
    // PyTorch's defaults: factor 1/3, total_iters 5.
    let mut opt = sgd_with_lr(0.1);
    let mut s = ConstantLR::new(&mut opt, 1.0 / 3.0, 5).unwrap();
    let third = 0.1 / 3.0;
    check_schedule(
        &mut opt,
        &mut s,
        &[third, third, third, third, third, 0.1, 0.1],
        "ConstantLR",
    );
    // factor 1: the rate never moves.
    let mut opt = sgd_with_lr(0.1);
    let mut s = ConstantLR::new(&mut opt, 1.0, 2).unwrap();
    check_schedule(&mut opt, &mut s, &[0.1; 5], "ConstantLR factor 1");
    // total_iters 0: stepping keeps the factor for good (PyTorch's get_lr
    // tests epoch 0 first) ...
    let mut opt = sgd_with_lr(0.1);
    let mut s = ConstantLR::new(&mut opt, 0.5, 0).unwrap();
    check_schedule(&mut opt, &mut s, &[0.05; 5], "ConstantLR total_iters 0");
    // ... while the closed form (step(epoch), SequentialLR's restarts) gives base_lr.
    s.step_to(&mut opt, 3);
    assert!((opt.lr() - 0.1).abs() < 1e-12, "{}", opt.lr());
    // total_iters 1: one epoch at the lowered rate.
    let mut opt = sgd_with_lr(0.1);
    let mut s = ConstantLR::new(&mut opt, 0.25, 1).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.025, 0.1, 0.1, 0.1],
        "ConstantLR total_iters 1",
    );
}

#[test]
fn constant_lr_acts_on_every_group_and_jumps_by_its_closed_form() {
    let mut opt = sgd_with_groups(&[1.0, 0.2]);
    let mut s = ConstantLR::new(&mut opt, 0.5, 3).unwrap();
    check_group_schedule(
        &mut opt,
        &mut s,
        &[
            &[0.5, 0.1],
            &[0.5, 0.1],
            &[0.5, 0.1],
            &[1.0, 0.2],
            &[1.0, 0.2],
        ],
        "ConstantLR groups",
    );
    s.step_to(&mut opt, 2);
    assert_eq!(opt.group_lrs(), vec![0.5, 0.1]);
    assert_eq!(s.last_epoch(), 2);
    s.step_to(&mut opt, 3);
    assert_eq!(opt.group_lrs(), vec![1.0, 0.2]);
}

#[test]
fn constant_lr_with_factor_zero() {
    // total_iters 0: the rate stays 0 for good, as in PyTorch.
    let mut opt = sgd_with_lr(0.1);
    let mut s = ConstantLR::new(&mut opt, 0.0, 0).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.0; 5],
        "ConstantLR factor 0 total_iters 0",
    );
    // At epoch total_iters PyTorch's step divides by zero (ZeroDivisionError:
    // float division by zero); wgrad's step sets the closed form's rate, base_lr.
    let mut opt = sgd_with_groups(&[0.1, 0.02]);
    let mut s = ConstantLR::new(&mut opt, 0.0, 2).unwrap();
    check_group_schedule(
        &mut opt,
        &mut s,
        &[&[0.0, 0.0], &[0.0, 0.0], &[0.1, 0.02], &[0.1, 0.02]],
        "ConstantLR factor 0",
    );
    // Frozen for two epochs, then a ConstantLR restarted by SequentialLR
    // from its closed form (PyTorch never divides by zero here).
    let mut opt = sgd_with_lr(1.0);
    let freeze = ConstantLR::new(&mut opt, 0.0, 2).unwrap();
    let half = ConstantLR::new(&mut opt, 0.5, 2).unwrap();
    let mut s =
        SequentialLR::new(&mut opt, vec![Box::new(freeze), Box::new(half)], vec![2]).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 1.0],
        "SequentialLR(ConstantLR 0, ConstantLR)",
    );
}

#[test]
fn polynomial_lr_values() {
    // PyTorch's defaults: total_iters 5, power 1 (a linear decay to 0).
    let mut opt = sgd_with_lr(0.1);
    let mut s = PolynomialLR::new(&mut opt, 5, 1.0).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.1, 0.08, 0.06, 0.04, 0.02, 0.0, 0.0],
        "PolynomialLR",
    );
    // power 0.5: 0.1 * sqrt(1 - e / 4).
    let mut opt = sgd_with_lr(0.1);
    let mut s = PolynomialLR::new(&mut opt, 4, 0.5).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[
            0.1,
            0.086_602_540_378_443_87,
            0.070_710_678_118_654_75,
            0.05,
            0.0,
            0.0,
        ],
        "PolynomialLR power 0.5",
    );
    // total_iters 0: stepping keeps the rate (the closed form, which divides
    // by zero in PyTorch, gives base_lr).
    let mut opt = sgd_with_lr(0.1);
    let mut s = PolynomialLR::new(&mut opt, 0, 2.0).unwrap();
    check_schedule(&mut opt, &mut s, &[0.1; 4], "PolynomialLR total_iters 0");
    s.step_to(&mut opt, 0);
    assert_eq!(opt.lr(), 0.1);
    // total_iters 1: 0 from the first step on.
    let mut opt = sgd_with_lr(0.1);
    let mut s = PolynomialLR::new(&mut opt, 1, 1.0).unwrap();
    check_schedule(
        &mut opt,
        &mut s,
        &[0.1, 0.0, 0.0, 0.0],
        "PolynomialLR total_iters 1",
    );
    // power 0: the rate never moves.
    let mut opt = sgd_with_lr(0.1);
    let mut s = PolynomialLR::new(&mut opt, 3, 0.0).unwrap();
    check_schedule(&mut opt, &mut s, &[0.1; 5], "PolynomialLR power 0");
}

#[test]
fn polynomial_lr_on_two_groups_after_a_warmup() {
    // power 2 on its own ...
    let mut opt = sgd_with_groups(&[1.0, 0.2]);
    let mut s = PolynomialLR::new(&mut opt, 4, 2.0).unwrap();
    let decay: [&[f64]; 6] = [
        &[1.0, 0.2],
        &[0.5625, 0.1125],
        &[0.25, 0.05],
        &[0.0625, 0.0125],
        &[0.0, 0.0],
        &[0.0, 0.0],
    ];
    check_group_schedule(&mut opt, &mut s, &decay, "PolynomialLR power 2");
    s.step_to(&mut opt, 2);
    assert_eq!(opt.group_lrs(), vec![0.25, 0.05]);
    // ... and after a two-epoch LinearLR warm-up in SequentialLR, which
    // restarts it from its closed form at the milestone.
    let mut opt = sgd_with_groups(&[1.0, 0.2]);
    let warmup = LinearLR::new(&mut opt, 0.25, 1.0, 2).unwrap();
    let poly = PolynomialLR::new(&mut opt, 4, 2.0).unwrap();
    let mut s =
        SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(poly)], vec![2]).unwrap();
    let mut want: Vec<&[f64]> = vec![&[0.25, 0.05], &[0.625, 0.125]];
    want.extend(decay);
    check_group_schedule(
        &mut opt,
        &mut s,
        &want,
        "SequentialLR(LinearLR, PolynomialLR)",
    );
}

#[test]
fn constant_and_polynomial_lr_chain() {
    // Their recursive forms multiply: epoch 2 undoes ConstantLR's 0.5.
    let mut opt = sgd_with_lr(1.0);
    let constant = ConstantLR::new(&mut opt, 0.5, 2).unwrap();
    let poly = PolynomialLR::new(&mut opt, 4, 1.0).unwrap();
    let mut s = ChainedScheduler::new(&opt, vec![Box::new(constant), Box::new(poly)]).unwrap();
    for (epoch, want) in [0.5, 0.375, 0.5, 0.25, 0.0, 0.0].into_iter().enumerate() {
        if epoch > 0 {
            s.step(&mut opt);
        }
        assert!(
            (opt.lr() - want).abs() < 1e-12,
            "epoch {epoch}: {} want {want}",
            opt.lr()
        );
    }
}

#[test]
fn warmup_then_cosine_with_sequential_lr() {
    let mut opt = sgd_with_lr(1.0);
    let warmup = LinearLR::new(&mut opt, 0.1, 1.0, 3).unwrap();
    assert!(
        (opt.lr() - 0.1).abs() < 1e-12,
        "LinearLR's constructor applies the start factor"
    );
    let cosine = CosineAnnealingLR::new(&mut opt, 4, 0.0).unwrap();
    let mut s =
        SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(cosine)], vec![3]).unwrap();
    let c = std::f64::consts::FRAC_1_SQRT_2;
    // 0.1 -> 0.4 -> 0.7 (warm-up), then the cosine restarts at its epoch 0 with base_lr = initial_lr = 1.
    let want = [
        0.1,
        0.4,
        0.7,
        1.0,
        0.5 * (1.0 + c),
        0.5,
        0.5 * (1.0 - c),
        0.0,
    ];
    check_schedule(&mut opt, &mut s, &want, "SequentialLR");
}

#[test]
fn chained_schedulers_multiply() {
    let mut opt = sgd_with_lr(1.0);
    let exp = ExponentialLR::new(&mut opt, 0.9).unwrap();
    let step = StepLR::new(&mut opt, 2, 0.5).unwrap();
    let mut s = ChainedScheduler::new(&opt, vec![Box::new(exp), Box::new(step)]).unwrap();
    for (epoch, want) in [1.0, 0.9, 0.405, 0.3645, 0.164_025].into_iter().enumerate() {
        if epoch > 0 {
            s.step(&mut opt);
        }
        assert!(
            (opt.lr() - want).abs() < 1e-12,
            "epoch {epoch}: {} want {want}",
            opt.lr()
        );
    }
}

#[test]
fn scheduled_lr_reaches_the_update() {
    // StepLR halves the rate after 1 epoch; SGD on a constant gradient 1 moves by lr.
    let w = param(&[0.0], &Device::Cpu);
    let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.4)).unwrap();
    let mut s = StepLR::new(&mut opt, 1, 0.5).unwrap();
    for _ in 0..3 {
        w.set_grad(Some(
            Tensor::from_vec(vec![1.0f32], &[1], &Device::Cpu).unwrap(),
        ))
        .unwrap();
        opt.step().unwrap();
        s.step(&mut opt);
    }
    assert_close(&values(&w), &[-(0.4 + 0.2 + 0.1)], 1e-6, "w");
}

#[test]
fn scheduler_arguments_are_validated() {
    let mut opt = sgd_with_lr(0.1);
    assert!(matches!(
        StepLR::new(&mut opt, 0, 0.1),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        CosineAnnealingLR::new(&mut opt, 0, 0.0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        LinearLR::new(&mut opt, 0.0, 1.0, 5),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        LinearLR::new(&mut opt, 0.5, 1.5, 5),
        Err(Error::InvalidArgument { .. })
    ));
    for factor in [-0.1, 1.5, f64::NAN] {
        assert!(matches!(
            ConstantLR::new(&mut opt, factor, 5),
            Err(Error::InvalidArgument {
                op: "ConstantLR",
                ..
            })
        ));
    }
    for power in [-0.5, f64::NAN] {
        assert!(matches!(
            PolynomialLR::new(&mut opt, 5, power),
            Err(Error::InvalidArgument {
                op: "PolynomialLR",
                ..
            })
        ));
    }
    let a = ExponentialLR::new(&mut opt, 0.9).unwrap();
    let b = ExponentialLR::new(&mut opt, 0.9).unwrap();
    assert!(matches!(
        SequentialLR::new(&mut opt, vec![Box::new(a), Box::new(b)], vec![]),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        SequentialLR::new(&mut opt, vec![], vec![]),
        Err(Error::InvalidArgument { .. })
    ));
}

// ---------------------------------------------------------------------------
// Clipping
// ---------------------------------------------------------------------------

fn with_grad(values: &[f32], grad: &[f32], device: &Device) -> Tensor {
    let p = param(values, device);
    p.set_grad(Some(
        Tensor::from_vec(grad.to_vec(), &[grad.len()], device).unwrap(),
    ))
    .unwrap();
    p
}

fn check_clip_norm(device: &Device) {
    let grads = || {
        vec![
            with_grad(&[0.0, 0.0], &[3.0, 4.0], device),
            with_grad(&[0.0], &[-12.0], device),
            param(&[0.0], device), // no grad: skipped
        ]
    };
    // error_if_nonfinite: a finite norm clips as before; an infinite one is
    // an error naming the op, and no gradient changes.
    let ps = grads();
    let norm = clip_grad_norm_with(&ps, 6.5, 2.0, true).unwrap();
    assert_close(&values(&norm), &[13.0], 1e-6, "2-norm, checked");
    let bad = vec![with_grad(&[0.0, 0.0], &[f32::INFINITY, 1.0], device)];
    let e = clip_grad_norm_with(&bad, 1.0, 2.0, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("clip_grad_norm_") && e.contains("non-finite"),
        "{e}"
    );
    assert_eq!(values(&bad[0].grad().unwrap()), [f32::INFINITY, 1.0]);
    // 2-norm: sqrt(9 + 16 + 144) = 13; coef = 6.5 / (13 + 1e-6).
    let ps = grads();
    let norm = clip_grad_norm_(&ps, 6.5, 2.0).unwrap();
    assert_eq!(norm.shape(), Vec::<usize>::new());
    assert_close(&values(&norm), &[13.0], 1e-6, "2-norm");
    let coef = 6.5 / (13.0 + 1e-6);
    assert_close(
        &values(&ps[0].grad().unwrap()),
        &[3.0 * coef, 4.0 * coef],
        1e-6,
        "clipped grad 0",
    );
    assert_close(
        &values(&ps[1].grad().unwrap()),
        &[-12.0 * coef],
        1e-6,
        "clipped grad 1",
    );
    assert!(ps[2].grad().is_none());

    // Below the limit: unchanged (factor clamped to 1).
    let ps = grads();
    clip_grad_norm_(&ps, 100.0, 2.0).unwrap();
    assert_eq!(values(&ps[0].grad().unwrap()), vec![3.0, 4.0]);

    // inf-norm = max |g| = 12; 1-norm = 19; 3-norm = (27 + 64 + 1728)^(1/3).
    let ps = grads();
    let norm = clip_grad_norm_(&ps, 6.0, f64::INFINITY).unwrap();
    assert_close(&values(&norm), &[12.0], 1e-6, "inf-norm");
    assert_close(
        &values(&ps[1].grad().unwrap()),
        &[-12.0 * 6.0 / (12.0 + 1e-6)],
        1e-6,
        "inf clipped",
    );
    let norm = clip_grad_norm_(&grads(), 1.0, 1.0).unwrap();
    assert_close(&values(&norm), &[19.0], 1e-6, "1-norm");
    let norm = clip_grad_norm_(&grads(), 1.0, 3.0).unwrap();
    assert_close(&values(&norm), &[1819f64.cbrt()], 1e-5, "3-norm");

    // Value clipping.
    let ps = grads();
    clip_grad_value_(&ps, 3.5).unwrap();
    assert_eq!(values(&ps[0].grad().unwrap()), vec![3.0, 3.5]);
    assert_eq!(values(&ps[1].grad().unwrap()), vec![-3.5]);
}

#[test]
fn clip_grad_norm_and_value_cpu() {
    check_clip_norm(&Device::Cpu);
}

#[test]
fn clip_grad_norm_and_value_gpu() {
    let Some(dev) = gpu() else { return };
    check_clip_norm(&dev);
    let norm = clip_grad_norm_(&[with_grad(&[0.0], &[1.0], &dev)], 1.0, 2.0).unwrap();
    assert!(norm.device().is_gpu(), "the norm stays on the device");
}

#[test]
fn clip_edge_cases() {
    let none = [param(&[1.0], &Device::Cpu)];
    assert_eq!(
        values(&clip_grad_norm_(&none, 1.0, 2.0).unwrap()),
        vec![0.0]
    );
    assert!(matches!(
        clip_grad_norm_(&none, 1.0, 0.0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        clip_grad_norm_(&none, 1.0, f64::NAN),
        Err(Error::InvalidArgument { .. })
    ));
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn invalid_hyper_parameters_are_invalid_argument() {
    let p = || vec![param(&[1.0], &Device::Cpu)];
    let invalid = |r: Result<(), Error>, what: &str| {
        assert!(
            matches!(r, Err(Error::InvalidArgument { .. })),
            "{what}: {r:?}"
        );
    };
    invalid(Sgd::new(p(), SgdConfig::new(-0.1)).map(drop), "sgd lr");
    invalid(
        Sgd::new(p(), SgdConfig::new(f64::NAN)).map(drop),
        "sgd NaN lr",
    );
    invalid(
        Sgd::new(
            p(),
            SgdConfig {
                momentum: -0.5,
                ..Default::default()
            },
        )
        .map(drop),
        "momentum",
    );
    invalid(
        Sgd::new(
            p(),
            SgdConfig {
                weight_decay: -1.0,
                ..Default::default()
            },
        )
        .map(drop),
        "weight decay",
    );
    invalid(
        Sgd::new(
            p(),
            SgdConfig {
                nesterov: true,
                ..Default::default()
            },
        )
        .map(drop),
        "nesterov without momentum",
    );
    invalid(
        Sgd::new(
            p(),
            SgdConfig {
                nesterov: true,
                momentum: 0.9,
                dampening: 0.1,
                ..Default::default()
            },
        )
        .map(drop),
        "nesterov with dampening",
    );
    invalid(
        Adam::new(
            p(),
            AdamConfig {
                lr: -1e-3,
                ..Default::default()
            },
        )
        .map(drop),
        "adam lr",
    );
    invalid(
        Adam::new(
            p(),
            AdamConfig {
                betas: (1.0, 0.999),
                ..Default::default()
            },
        )
        .map(drop),
        "beta1",
    );
    invalid(
        Adam::new(
            p(),
            AdamConfig {
                betas: (0.9, -0.1),
                ..Default::default()
            },
        )
        .map(drop),
        "beta2",
    );
    invalid(
        Adam::new(
            p(),
            AdamConfig {
                eps: -1.0,
                ..Default::default()
            },
        )
        .map(drop),
        "eps",
    );
    invalid(
        AdamW::new(
            p(),
            AdamWConfig {
                lr: -1.0,
                ..Default::default()
            },
        )
        .map(drop),
        "adamw lr",
    );
    invalid(
        AdamW::new(
            p(),
            AdamWConfig {
                weight_decay: -0.1,
                ..Default::default()
            },
        )
        .map(drop),
        "adamw wd",
    );
    invalid(
        Sgd::new(vec![], SgdConfig::default()).map(drop),
        "empty params",
    );
    let w = param(&[1.0], &Device::Cpu);
    let non_leaf = w.mul_scalar(2.0).unwrap();
    invalid(
        Sgd::new(vec![non_leaf], SgdConfig::default()).map(drop),
        "non-leaf",
    );
    let ints = Tensor::from_vec(vec![1i32], &[1], &Device::Cpu).unwrap();
    assert!(matches!(
        Adam::new(vec![ints], AdamConfig::default()),
        Err(Error::DTypeMismatch { .. })
    ));
}

#[test]
fn grad_on_another_device_is_device_mismatch() {
    let Some(dev) = gpu() else { return };
    for (param_dev, grad_dev) in [(dev.clone(), Device::Cpu), (Device::Cpu, dev.clone())] {
        let w = param(&[1.0, 2.0], &param_dev);
        // `w.grad = g` on another device is PyTorch's error at assignment.
        let err = w
            .set_grad(Some(Tensor::ones(&[2], &grad_dev).unwrap()))
            .unwrap_err();
        assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
        assert!(w.grad().is_none(), "a refused grad is not stored");
        // Nothing was stored, so a step skips the parameter.
        let mut sgd = Sgd::new(
            vec![w.clone()],
            SgdConfig {
                lr: 0.1,
                momentum: 0.9,
                ..Default::default()
            },
        )
        .unwrap();
        sgd.step().unwrap();
        assert!(sgd.state()[0].momentum_buffer.is_none());
        assert_eq!(values(&w), vec![1.0, 2.0]);
    }
}

#[test]
fn restored_state_on_the_wrong_device_is_device_mismatch() {
    let Some(dev) = gpu() else { return };
    let w = param(&[1.0], &Device::Cpu);
    let mut opt = Adam::new(vec![w.clone()], AdamConfig::default()).unwrap();
    backward_square(&w);
    opt.step().unwrap();
    let state = opt.state_mut()[0].as_mut().unwrap();
    state.exp_avg = Tensor::zeros(&[1], &dev).unwrap();
    let err = opt.step().unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
}

#[test]
fn cpu_state_survives_as_the_same_tensors() {
    // The state tensors are updated in place (set_storage), so handles taken
    // earlier (e.g. by a checkpoint writer) follow the optimizer like torch's.
    let w = param(&[1.0], &Device::Cpu);
    let mut opt = Adam::new(vec![w.clone()], AdamConfig::default()).unwrap();
    backward_square(&w);
    opt.step().unwrap();
    let m = opt.state()[0].as_ref().unwrap().exp_avg.clone();
    let before = values(&m);
    opt.step().unwrap();
    assert_ne!(values(&m), before);
    assert!(matches!(m.storage(), Storage::Cpu(_)));
}
