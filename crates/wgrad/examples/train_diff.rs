//! Replays tests/pytorch_diff/gen_train.py's cases (optimizers over many
//! steps, LR schedulers, F16/BF16 ops, casts, dtype promotion) through
//! wgrad on the CPU and the GPU and prints every disagreement with PyTorch;
//! see tests/pytorch_diff/README.md.
use serde_json::Value;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use wgrad::nn::checkpoint::OptimizerCheckpoint;
use wgrad::optim::*;
use wgrad::{BinaryOp, DType, Device, Error, Result, Tensor, bf16, f16};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
fn words(s: &str) -> Vec<[u8; 4]> {
    unhex(s)
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}
fn f32s(s: &str) -> Vec<f32> {
    words(s).into_iter().map(f32::from_le_bytes).collect()
}
fn halves(s: &str) -> Vec<u16> {
    unhex(s)
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}
fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}
fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => match s.as_str() {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => f64::NAN,
        },
        Value::Bool(b) => *b as u8 as f64,
        _ => panic!("not a number: {v}"),
    }
}
fn err(msg: String) -> Error {
    Error::invalid("train_diff", msg)
}
fn dtype(name: &str) -> DType {
    match name {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "i32" => DType::I32,
        "bool" => DType::U32,
        _ => unreachable!("{name}"),
    }
}
fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::I32 => "i32",
        DType::U32 => "bool",
    }
}

/// A tensor from gen_train.py's `enc`.
fn tensor(spec: &Value, dev: &Device) -> Result<Tensor> {
    let shape = usizes(&spec["shape"]);
    let data = spec["data"].as_str().unwrap();
    match spec["dtype"].as_str().unwrap() {
        "f32" => Tensor::from_vec(f32s(data), &shape, dev),
        "f16" => Tensor::from_vec(
            halves(data)
                .into_iter()
                .map(f16::from_bits)
                .collect::<Vec<_>>(),
            &shape,
            dev,
        ),
        "bf16" => Tensor::from_vec(
            halves(data)
                .into_iter()
                .map(bf16::from_bits)
                .collect::<Vec<_>>(),
            &shape,
            dev,
        ),
        "i32" => Tensor::from_vec(
            words(data)
                .into_iter()
                .map(i32::from_le_bytes)
                .collect::<Vec<_>>(),
            &shape,
            dev,
        ),
        "bool" => Tensor::from_vec(
            words(data)
                .into_iter()
                .map(u32::from_le_bytes)
                .collect::<Vec<_>>(),
            &shape,
            dev,
        ),
        d => Err(err(format!("dtype {d}"))),
    }
}

/// A spec's values as f64 (bits decoded), plus its dtype.
fn spec_values(spec: &Value) -> (DType, Vec<f64>) {
    let data = spec["data"].as_str().unwrap();
    let dt = dtype(spec["dtype"].as_str().unwrap());
    let v = match dt {
        DType::F32 => f32s(data).into_iter().map(f64::from).collect(),
        DType::F16 => halves(data)
            .into_iter()
            .map(|h| f16::from_bits(h).to_f64())
            .collect(),
        DType::BF16 => halves(data)
            .into_iter()
            .map(|h| bf16::from_bits(h).to_f64())
            .collect(),
        _ => words(data)
            .into_iter()
            .map(|w| i32::from_le_bytes(w) as f64)
            .collect(),
    };
    (dt, v)
}

fn values(t: &Tensor) -> Result<Vec<f64>> {
    Ok(match t.dtype() {
        DType::I32 => t.to_vec::<i32>()?.into_iter().map(f64::from).collect(),
        DType::U32 => t.to_vec::<u32>()?.into_iter().map(f64::from).collect(),
        DType::F16 => t.to_vec::<f16>()?.into_iter().map(|h| h.to_f64()).collect(),
        DType::BF16 => t
            .to_vec::<bf16>()?
            .into_iter()
            .map(|h| h.to_f64())
            .collect(),
        _ => t.to_vec::<f32>()?.into_iter().map(f64::from).collect(),
    })
}

/// One ulp of `x` in `dt`.
fn ulp(x: f64, dt: DType) -> f64 {
    let (mant, min_exp) = match dt {
        DType::F16 => (10, -14),
        DType::BF16 => (7, -126),
        _ => (23, -126),
    };
    let e = if x == 0.0 || !x.is_finite() {
        min_exp
    } else {
        (x.abs().log2().floor() as i32).max(min_exp)
    };
    2f64.powi(e - mant)
}

/// Compares `got` with the expected spec: dtype, shape, values within `ulps`
/// of the dtype plus `atol`; returns a description of the first difference.
fn compare(what: &str, got: &Tensor, want: &Value, ulps: f64, atol: f64) -> Option<String> {
    let (wdt, w) = spec_values(want);
    if got.dtype() != wdt {
        return Some(format!(
            "{what}: dtype {:?}, PyTorch {:?}",
            got.dtype(),
            wdt
        ));
    }
    if got.shape() != usizes(&want["shape"]).as_slice() {
        return Some(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            got.shape(),
            want["shape"]
        ));
    }
    let g = match values(got) {
        Ok(g) => g,
        Err(e) => return Some(format!("{what}: readback {e}")),
    };
    close(what, &g, &w, wdt, ulps, atol)
}

fn close(what: &str, g: &[f64], w: &[f64], dt: DType, ulps: f64, atol: f64) -> Option<String> {
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
        if a == b || (a.is_nan() && b.is_nan()) {
            continue;
        }
        let tol = ulps * ulp(b, dt).max(ulp(a, dt)) + atol;
        let d = (a - b).abs();
        if !(d <= tol) {
            let r = if d.is_finite() {
                d / tol
            } else {
                f64::INFINITY
            };
            if worst.is_none_or(|(_, wr)| r > wr) {
                worst = Some((i, r));
            }
        }
    }
    worst.map(|(i, r)| {
        format!(
            "{what}: [{i}] {} vs PyTorch {} ({r:.1}x tol; n={})",
            g[i],
            w[i],
            g.len()
        )
    })
}

// ------------------------------------------------------------ optimizers

fn f(c: &Value, k: &str) -> f64 {
    num(&c[k])
}
fn b(c: &Value, k: &str) -> bool {
    c[k].as_bool().unwrap()
}

fn make_opt(
    name: &str,
    params: &[Tensor],
    groups: &[Value],
) -> Result<Box<dyn OptimizerCheckpoint>> {
    let ps = |g: &Value| -> Vec<Tensor> {
        usizes(&g["params"])
            .into_iter()
            .map(|i| params[i].clone())
            .collect()
    };
    macro_rules! groups {
        ($cfg:expr) => {
            groups
                .iter()
                .map(|g| ParamGroup::new(ps(g), $cfg(&g["cfg"])))
                .collect()
        };
    }
    let adam = |c: &Value| AdamConfig {
        lr: f(c, "lr"),
        betas: (num(&c["betas"][0]), num(&c["betas"][1])),
        eps: f(c, "eps"),
        weight_decay: f(c, "weight_decay"),
        amsgrad: b(c, "amsgrad"),
        maximize: b(c, "maximize"),
    };
    Ok(match name {
        "sgd" => Box::new(Sgd::with_groups(groups!(|c: &Value| SgdConfig {
            lr: f(c, "lr"),
            momentum: f(c, "momentum"),
            dampening: f(c, "dampening"),
            nesterov: b(c, "nesterov"),
            weight_decay: f(c, "weight_decay"),
            maximize: b(c, "maximize"),
        }))?),
        "adam" => Box::new(Adam::with_groups(groups!(adam))?),
        "adamw" => Box::new(AdamW::with_groups(groups!(|c: &Value| {
            let a = adam(c);
            AdamWConfig {
                lr: a.lr,
                betas: a.betas,
                eps: a.eps,
                weight_decay: a.weight_decay,
                amsgrad: a.amsgrad,
                maximize: a.maximize,
            }
        }))?),
        "rmsprop" => Box::new(RmsProp::with_groups(groups!(|c: &Value| RmsPropConfig {
            lr: f(c, "lr"),
            alpha: f(c, "alpha"),
            eps: f(c, "eps"),
            weight_decay: f(c, "weight_decay"),
            momentum: f(c, "momentum"),
            centered: b(c, "centered"),
            maximize: b(c, "maximize"),
        }))?),
        "adagrad" => Box::new(Adagrad::with_groups(groups!(|c: &Value| AdagradConfig {
            lr: f(c, "lr"),
            lr_decay: f(c, "lr_decay"),
            weight_decay: f(c, "weight_decay"),
            initial_accumulator_value: f(c, "initial_accumulator_value"),
            eps: f(c, "eps"),
            maximize: b(c, "maximize"),
        }))?),
        _ => unreachable!(),
    })
}

fn run_optim(c: &Value, dev: &Device) -> Result<Option<String>> {
    let params = c["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| tensor(s, dev)?.with_requires_grad(true))
        .collect::<Result<Vec<_>>>()?;
    let name = c["opt"].as_str().unwrap();
    let groups = c["groups"].as_array().unwrap();
    let mut opt = make_opt(name, &params, groups)?;
    let lr_change = c["lr_change"].as_u64();
    let sd_at = c["sd_at"].as_u64();
    for (s, (grads, expect)) in c["grads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(c["expect"].as_array().unwrap())
        .enumerate()
    {
        if Some(s as u64) == lr_change {
            let lrs: Vec<f64> = opt.group_lrs().iter().map(|l| l * 0.5).collect();
            opt.set_group_lrs(&lrs);
        }
        if Some(s as u64) == sd_at {
            let sd = opt.optimizer_state_dict()?;
            let mut fresh = make_opt(name, &params, groups)?;
            fresh.load_optimizer_state_dict(&sd)?;
            opt = fresh;
        }
        for (p, g) in params.iter().zip(grads.as_array().unwrap()) {
            match g.as_str() {
                None => p.zero_grad(),
                Some(h) => p.set_grad(Some(Tensor::from_vec(f32s(h), &p.shape(), dev)?))?,
            }
        }
        opt.step()?;
        for (i, (p, e)) in params.iter().zip(expect.as_array().unwrap()).enumerate() {
            let got = values(p)?;
            let want: Vec<f64> = f32s(e.as_str().unwrap())
                .into_iter()
                .map(f64::from)
                .collect();
            let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
            if let Some(m) = close(
                &format!("step {s} param {i}"),
                &got,
                &want,
                DType::F32,
                16.0,
                2e-6 * scale,
            ) {
                return Ok(Some(m));
            }
        }
    }
    Ok(None)
}

// ------------------------------------------------------------ schedulers

fn lambda(name: &str) -> impl Fn(i64) -> f64 + Send + Sync + 'static {
    let name = name.to_string();
    move |e| match name.as_str() {
        "pow95" => 0.95f64.powi(e as i32),
        "inv" => 1.0 / (e as f64 + 1.0),
        "warm10" => ((e as f64 + 1.0) / 10.0).min(1.0),
        "step3" => 0.5f64.powi((e / 3) as i32),
        _ => unreachable!(),
    }
}

fn make_sched(kind: &str, a: &Value, opt: &mut dyn Optimizer) -> Result<Box<dyn LrScheduler>> {
    let u = |k: &str| a[k].as_u64().unwrap() as usize;
    Ok(match kind {
        "step" => Box::new(StepLR::new(opt, u("step_size"), f(a, "gamma"))?),
        "multistep" => Box::new(MultiStepLR::new(
            opt,
            &usizes(&a["milestones"]),
            f(a, "gamma"),
        )?),
        "exp" => Box::new(ExponentialLR::new(opt, f(a, "gamma"))?),
        "cosine" => Box::new(CosineAnnealingLR::new(opt, u("t_max"), f(a, "eta_min"))?),
        "warm_restarts" => Box::new(CosineAnnealingWarmRestarts::new(
            opt,
            u("t_0"),
            u("t_mult"),
            f(a, "eta_min"),
        )?),
        "lambda" => Box::new(LambdaLR::new(opt, lambda(a["fn"].as_str().unwrap()))?),
        "linear" => Box::new(LinearLR::new(
            opt,
            f(a, "start_factor"),
            f(a, "end_factor"),
            u("total_iters"),
        )?),
        "onecycle" => Box::new(OneCycleLR::with_config(
            opt,
            OneCycleConfig {
                max_lr: vec![f(a, "max_lr")],
                total_steps: u("total_steps"),
                pct_start: f(a, "pct_start"),
                anneal_strategy: if a["anneal"] == "cos" {
                    AnnealStrategy::Cos
                } else {
                    AnnealStrategy::Linear
                },
                cycle_momentum: b(a, "cycle_momentum"),
                base_momentum: f(a, "base_momentum"),
                max_momentum: f(a, "max_momentum"),
                div_factor: f(a, "div_factor"),
                final_div_factor: f(a, "final_div_factor"),
                three_phase: b(a, "three_phase"),
            },
        )?),
        "sequential" | "chained" => {
            let mut subs = Vec::new();
            for s in a["subs"].as_array().unwrap() {
                subs.push(make_sched(s["kind"].as_str().unwrap(), &s["args"], opt)?);
            }
            if kind == "sequential" {
                Box::new(SequentialLR::new(opt, subs, usizes(&a["milestones"]))?)
            } else {
                Box::new(ChainedScheduler::new(opt, subs)?)
            }
        }
        _ => unreachable!("{kind}"),
    })
}

fn run_sched(c: &Value, dev: &Device) -> Result<Option<String>> {
    let lrs: Vec<f64> = c["lrs"].as_array().unwrap().iter().map(num).collect();
    let params: Vec<Tensor> = lrs
        .iter()
        .map(|_| Tensor::zeros(&[1], dev)?.with_requires_grad(true))
        .collect::<Result<_>>()?;
    let mut opt: Box<dyn Optimizer> = if c["opt"] == "sgd" {
        Box::new(Sgd::with_groups(
            params
                .iter()
                .zip(&lrs)
                .map(|(p, &lr)| {
                    ParamGroup::new(
                        vec![p.clone()],
                        SgdConfig {
                            momentum: 0.9,
                            ..SgdConfig::new(lr)
                        },
                    )
                })
                .collect(),
        )?)
    } else {
        Box::new(Adam::with_groups(
            params
                .iter()
                .zip(&lrs)
                .map(|(p, &lr)| {
                    ParamGroup::new(
                        vec![p.clone()],
                        AdamConfig {
                            lr,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
        )?)
    };
    let kind = c["sched"].as_str().unwrap();
    let a = &c["args"];
    let mut plateau = None;
    let mut sched = None;
    if kind == "plateau" {
        let mode = if a["mode"] == "min" {
            PlateauMode::Min
        } else {
            PlateauMode::Max
        };
        let threshold_mode = if a["threshold_mode"] == "rel" {
            ThresholdMode::Rel
        } else {
            ThresholdMode::Abs
        };
        plateau = Some(ReduceLROnPlateau::new(
            opt.as_ref(),
            ReduceLROnPlateauConfig {
                mode,
                factor: f(a, "factor"),
                patience: a["patience"].as_u64().unwrap() as usize,
                threshold: f(a, "threshold"),
                threshold_mode,
                cooldown: a["cooldown"].as_u64().unwrap() as usize,
                min_lr: vec![f(a, "min_lr")],
                eps: f(a, "eps"),
            },
        )?);
    } else {
        sched = Some(make_sched(kind, a, opt.as_mut())?);
    }
    let el = c["expect_lr"].as_array().unwrap();
    let em = c["expect_mom"].as_array().unwrap();
    for s in 0..el.len() {
        if s > 0 {
            if let Some(p) = plateau.as_mut() {
                p.step(opt.as_mut(), num(&a["metrics"][s - 1]));
            } else if let Some(sc) = sched.as_mut() {
                sc.step(opt.as_mut());
            }
        }
        let want: Vec<f64> = el[s].as_array().unwrap().iter().map(num).collect();
        let got = opt.group_lrs();
        let tol = |w: f64| 1e-6 * w.abs() + 1e-12;
        if got
            .iter()
            .zip(&want)
            .any(|(g, w)| !((g - w).abs() <= tol(*w)))
        {
            return Ok(Some(format!("epoch {s}: lr {got:?} vs PyTorch {want:?}")));
        }
        let want: Vec<f64> = em[s].as_array().unwrap().iter().map(num).collect();
        let got = opt.group_momentums().unwrap_or_default();
        if got
            .iter()
            .zip(&want)
            .any(|(g, w)| !((g - w).abs() <= tol(*w)))
        {
            return Ok(Some(format!(
                "epoch {s}: momentum {got:?} vs PyTorch {want:?}"
            )));
        }
    }
    Ok(None)
}

// ------------------------------------------------------------ 16-bit dtypes

fn binop(name: &str) -> BinaryOp {
    match name {
        "add" => BinaryOp::Add,
        "sub" => BinaryOp::Sub,
        "mul" => BinaryOp::Mul,
        "div" => BinaryOp::Div,
        "pow" => BinaryOp::Pow,
        "maximum" => BinaryOp::Maximum,
        "minimum" => BinaryOp::Minimum,
        _ => unreachable!("{name}"),
    }
}

fn half_forward(fam: &str, p: &Value, t: &[Tensor]) -> Result<Tensor> {
    let op = p["op"].as_str().unwrap();
    let dim = || p["dim"].as_i64().unwrap() as isize;
    let keep = || p["keep"].as_bool().unwrap_or(false);
    match fam {
        "binary" => t[0].binary(&t[1], binop(op)),
        "scalar" => t[0].binary_scalar(
            binop(op),
            f(p, "scalar") as f32,
            p["left"].as_bool().unwrap(),
        ),
        "zerod" => match op {
            "lt" => t[0].lt(&t[1]),
            "eq" => t[0].eq(&t[1]),
            _ => t[0].binary(&t[1], binop(op)),
        },
        "unary" => match op {
            "exp" => t[0].exp(),
            "log" => t[0].log(),
            "sqrt" => t[0].sqrt(),
            "tanh" => t[0].tanh(),
            "sigmoid" => t[0].sigmoid(),
            "relu" => t[0].relu(),
            "gelu" => t[0].gelu(),
            "silu" => t[0].silu(),
            "sin" => t[0].sin(),
            "neg" => t[0].neg(),
            "abs" => t[0].abs(),
            "recip" => t[0].recip(),
            "rsqrt" => t[0].rsqrt(),
            "erf" => t[0].erf(),
            "square" => t[0].square(),
            "expm1" => t[0].expm1(),
            "log1p" => t[0].log1p(),
            _ => unreachable!("{op}"),
        },
        "reduce" => match op {
            "sum" => t[0].sum(&[dim()], keep()),
            "mean" => t[0].mean(&[dim()], keep()),
            "amax" => t[0].max(&[dim()], keep()),
            "amin" => t[0].min(&[dim()], keep()),
            "softmax" => t[0].softmax(dim()),
            "log_softmax" => t[0].log_softmax(dim()),
            "logsumexp" => t[0].logsumexp(&[dim()], keep()),
            "var" => t[0].var(&[dim()], 1, keep()),
            "norm" => t[0].norm(2.0, &[dim()], keep()),
            "cumsum" => t[0].cumsum(dim()),
            "prod" => t[0].prod(&[dim()], keep()),
            _ => unreachable!("{op}"),
        },
        "matmul" => t[0].matmul(&t[1]),
        _ => unreachable!("{fam}"),
    }
}

fn run_half(c: &Value, dev: &Device) -> Result<Option<String>> {
    let fam = c["fam"].as_str().unwrap();
    let ins = c["inputs"].as_array().unwrap();
    let grads = c["grads"].as_array();
    let t = ins
        .iter()
        .map(|s| {
            let t = tensor(s, dev)?;
            if grads.is_some() {
                t.with_requires_grad(true)
            } else {
                Ok(t)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let out = half_forward(fam, &c["p"], &t)?;
    // Reductions and products accumulate in f32 in a different order.
    let accum = matches!(fam, "reduce" | "matmul");
    let (ulps, rel) = if accum { (2.0, 1e-4) } else { (1.0, 0.0) };
    let scale = |s: &Value| {
        spec_values(s).1.iter().fold(
            0.0f64,
            |m, x| if x.is_finite() { m.max(x.abs()) } else { m },
        )
    };
    if let Some(m) = compare("output", &out, &c["out"], ulps, rel * scale(&c["out"])) {
        return Ok(Some(m));
    }
    if let Some(gs) = grads {
        out.backward_with(&tensor(&c["upstream"], dev)?)?;
        for (i, (leaf, want)) in t.iter().zip(gs).enumerate() {
            let Some(g) = leaf.grad() else {
                return Ok(Some(format!("grad {i}: None")));
            };
            if let Some(m) = compare(&format!("grad {i}"), &g, want, 2.0, 1e-3 * scale(want)) {
                return Ok(Some(m));
            }
        }
    }
    Ok(None)
}

fn run_cast(c: &Value, dev: &Device) -> Result<Option<String>> {
    let x = tensor(&c["x"], dev)?;
    let dst = c["dst"].as_str().unwrap();
    let out = x.cast(dtype(dst))?;
    Ok(compare("cast", &out, &c["out"], 0.0, 0.0))
}

fn run_promote(c: &Value, dev: &Device) -> Result<Option<String>> {
    let op = c["op"].as_str().unwrap();
    let t = c["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| tensor(s, dev))
        .collect::<Result<Vec<_>>>()?;
    let scalar = &c["scalar"];
    let got = if op == "where" {
        let other = match scalar {
            Value::Null => t[2].clone(),
            Value::Number(n) if n.is_i64() => {
                Tensor::from_vec(vec![n.as_i64().unwrap() as i32], &[], dev)?
            }
            Value::Bool(v) => Tensor::from_vec(vec![*v as u32], &[], dev)?,
            v => Tensor::scalar(num(v) as f32, dev)?,
        };
        Tensor::where_cond(&t[0], &t[1], &other)
    } else if scalar.is_null() {
        t[0].binary(&t[1], binop(op))
    } else {
        t[0].binary_scalar(binop(op), num(scalar) as f32, false)
    };
    match (got, c.get("error")) {
        (Ok(g), None) => Ok(compare("promote", &g, &c["out"], 1.0, 0.0)),
        (Err(_), Some(_)) => Ok(None),
        (Ok(g), Some(e)) => Ok(Some(format!(
            "wgrad gives {} where PyTorch raises {e}",
            dtype_name(g.dtype())
        ))),
        (Err(e), None) => Err(e),
    }
}

fn run_case(c: &Value, dev: &Device) -> Result<Option<String>> {
    match c["kind"].as_str().unwrap() {
        "optim" => run_optim(c, dev),
        "sched" => run_sched(c, dev),
        "half" => run_half(c, dev),
        "cast" => run_cast(c, dev),
        "promote" => run_promote(c, dev),
        k => Err(err(format!("kind {k}"))),
    }
}

fn describe(c: &Value) -> String {
    let mut c = c.clone();
    let o = c.as_object_mut().unwrap();
    for k in [
        "grads",
        "expect",
        "params",
        "expect_lr",
        "expect_mom",
        "inputs",
        "out",
        "upstream",
        "x",
    ] {
        o.remove(k);
    }
    if let Some(a) = o.get_mut("args").and_then(|a| a.as_object_mut()) {
        a.remove("metrics");
    }
    let s = Value::Object(o.clone()).to_string();
    if s.len() > 400 {
        format!("{}...", &s[..400])
    } else {
        s
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map_or("/tmp/pytorch_diff/train.jsonl", String::as_str);
    let which = args.get(2).map_or("both", String::as_str);
    let only: Option<u64> = args.get(3).map(|s| s.parse().unwrap());
    let mut devs = Vec::new();
    if which != "gpu" {
        devs.push(("cpu", Device::Cpu));
    }
    if which != "cpu" {
        match Device::gpu() {
            Ok(d) => devs.push(("gpu", d)),
            Err(e) => eprintln!("no GPU: {e}"),
        }
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut stats: BTreeMap<(String, &str), (usize, usize)> = BTreeMap::new();
    for line in text.lines() {
        let c: Value = serde_json::from_str(line).unwrap();
        if only.is_some_and(|id| c["id"].as_u64() != Some(id)) {
            continue;
        }
        let kind = c["kind"].as_str().unwrap().to_string();
        for (dn, dev) in &devs {
            let r = catch_unwind(AssertUnwindSafe(|| run_case(&c, dev)));
            let msg = match r {
                Ok(Ok(None)) => None,
                Ok(Ok(Some(m))) => Some(m),
                Ok(Err(e)) => Some(format!("error: {e}")),
                Err(p) => Some(format!(
                    "panic: {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                )),
            };
            let e = stats.entry((kind.clone(), dn)).or_default();
            e.0 += 1;
            if let Some(m) = msg {
                e.1 += 1;
                println!(
                    "MISMATCH id={} {dn} {kind} {} :: {m}",
                    c["id"],
                    describe(&c)
                );
            }
        }
    }
    for ((k, d), (n, bad)) in stats {
        println!("{k:8} {d}: {n} cases, {bad} mismatches");
    }
}
