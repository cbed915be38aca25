//! Replays the random cases of tests/pytorch_diff/gen.py through wgrad (CPU and GPU) and prints every disagreement with PyTorch; see tests/pytorch_diff/README.md.
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};
use wgrad::nn::loss::{self, BceOptions, CrossEntropyOptions, Reduction};
use wgrad::{BinaryOp, Conv2dArgs, DType, Device, Error, Pool2dArgs, Result, Tensor};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
fn f32s(s: &str) -> Vec<f32> {
    unhex(s)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn i32s(s: &str) -> Vec<i32> {
    unhex(s)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}
fn isizes(v: &Value) -> Vec<isize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as isize)
        .collect()
}
fn err(msg: String) -> Error {
    Error::invalid("fuzz", msg)
}

struct Built {
    leaf: Tensor,
    view: Tensor,
}

fn build(spec: &Value, dev: &Device) -> Result<Built> {
    let shape = usizes(&spec["shape"]);
    let dt = spec["dtype"].as_str().unwrap();
    let data = spec["data"].as_str().unwrap();
    let leaf = match dt {
        "f32" => Tensor::from_vec(f32s(data), &shape, dev)?,
        "i32" => Tensor::from_vec(i32s(data), &shape, dev)?,
        "bool" => Tensor::from_vec(
            i32s(data)
                .into_iter()
                .map(|v| v as u32)
                .collect::<Vec<u32>>(),
            &shape,
            dev,
        )?,
        _ => unreachable!(),
    };
    let leaf = if spec["grad"].as_bool().unwrap() {
        leaf.with_requires_grad(true)?
    } else {
        leaf
    };
    let mut t = leaf.clone();
    for v in spec["views"].as_array().unwrap() {
        let a = v.as_array().unwrap();
        match a[0].as_str().unwrap() {
            "transpose" => {
                t = t.transpose(
                    a[1].as_i64().unwrap() as isize,
                    a[2].as_i64().unwrap() as isize,
                )?
            }
            "permute" => t = t.permute(&isizes(&a[1]))?,
            "narrow" => {
                t = t.narrow(
                    a[1].as_i64().unwrap() as isize,
                    a[2].as_u64().unwrap() as usize,
                    a[3].as_u64().unwrap() as usize,
                )?
            }
            "expand" => t = t.expand(&usizes(&a[1]))?,
            _ => unreachable!(),
        }
    }
    Ok(Built { leaf, view: t })
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => Some(match s.as_str() {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => f64::NAN,
        }),
        _ => None,
    }
}
fn pf(p: &Value, k: &str) -> f32 {
    num(&p[k]).unwrap_or(f64::NAN) as f32
}
fn pfo(p: &Value, k: &str) -> Option<f32> {
    num(&p[k]).map(|x| x as f32)
}
fn pi(p: &Value, k: &str) -> isize {
    p[k].as_i64().unwrap() as isize
}
fn pb(p: &Value, k: &str) -> bool {
    p[k].as_bool().unwrap_or(false)
}
fn pu(p: &Value, k: &str) -> usize {
    p[k].as_u64().unwrap() as usize
}
fn red(p: &Value) -> Reduction {
    match p["red"].as_str().unwrap() {
        "mean" => Reduction::Mean,
        "sum" => Reduction::Sum,
        "none" => Reduction::None,
        "batchmean" => Reduction::BatchMean,
        _ => unreachable!(),
    }
}
fn binop(name: &str) -> BinaryOp {
    match name {
        "add" => BinaryOp::Add,
        "sub" => BinaryOp::Sub,
        "mul" => BinaryOp::Mul,
        "div" => BinaryOp::Div,
        "pow" => BinaryOp::Pow,
        "maximum" => BinaryOp::Maximum,
        "minimum" => BinaryOp::Minimum,
        "floor_divide" => BinaryOp::FloorDiv,
        "remainder" => BinaryOp::Remainder,
        _ => unreachable!("{name}"),
    }
}

fn run_op(kind: &str, p: &Value, t: &[Tensor]) -> Result<Vec<Tensor>> {
    let op = p["op"].as_str().unwrap_or("");
    let one = |x: Tensor| Ok(vec![x]);
    match kind {
        "binary" | "binary_int" => match op {
            "floor_divide" => one(t[0].floor_divide(&t[1])?),
            "remainder" => one((&t[0] % &t[1])?),
            "div" => one(t[0].div(&t[1])?),
            _ => one(t[0].binary(&t[1], binop(op))?),
        },
        "binary_scalar" | "binary_scalar_int" => {
            one(t[0].binary_scalar(binop(op), pf(p, "scalar"), pb(p, "left"))?)
        }
        "compare" => one(match op {
            "eq" => t[0].eq(&t[1])?,
            "ne" => t[0].ne(&t[1])?,
            "lt" => t[0].lt(&t[1])?,
            "le" => t[0].le(&t[1])?,
            "gt" => t[0].gt(&t[1])?,
            "ge" => t[0].ge(&t[1])?,
            _ => unreachable!(),
        }),
        "where" => one(Tensor::where_cond(&t[0], &t[1], &t[2])?),
        "unary" | "unary_int" => {
            let x = &t[0];
            one(match op {
                "neg" => x.neg()?,
                "abs" => x.abs()?,
                "exp" => x.exp()?,
                "log" => x.log()?,
                "sqrt" => x.sqrt()?,
                "rsqrt" => x.rsqrt()?,
                "sin" => x.sin()?,
                "cos" => x.cos()?,
                "tanh" => x.tanh()?,
                "sigmoid" => x.sigmoid()?,
                "relu" => x.relu()?,
                "gelu" => x.gelu()?,
                "silu" => x.silu()?,
                "square" => x.square()?,
                "recip" => x.recip()?,
                "erf" => x.erf()?,
                "log1p" => x.log1p()?,
                "expm1" => x.expm1()?,
                "sign" => x.sign()?,
                "floor" => x.floor()?,
                "ceil" => x.ceil()?,
                "round" => x.round()?,
                "mish" => x.mish()?,
                "gelu_tanh" => x.gelu_with("tanh")?,
                "leaky_relu" => x.leaky_relu(pf(p, "slope"))?,
                "clamp" => x.clamp(pfo(p, "min"), pfo(p, "max"))?,
                "softplus" => x.softplus(pf(p, "beta"), pf(p, "threshold"))?,
                "elu" => x.elu(pf(p, "alpha"))?,
                "hardtanh" => x.hardtanh(pf(p, "min"), pf(p, "max"))?,
                _ => unreachable!("{op}"),
            })
        }
        "reduce" | "reduce_int" => {
            let x = &t[0];
            let k = pb(p, "keepdim");
            if matches!(op, "argmax" | "argmin" | "cumsum" | "max_dim") {
                let d = pi(p, "dim");
                return match op {
                    "argmax" => one(x.argmax(d, k)?),
                    "argmin" => one(x.argmin(d, k)?),
                    "cumsum" => one(x.cumsum(d)?),
                    _ => {
                        let (a, b) = x.max_dim(d, k)?;
                        Ok(vec![a, b])
                    }
                };
            }
            let d = isizes(&p["dims"]);
            one(match op {
                "sum" => x.sum(&d, k)?,
                "mean" => x.mean(&d, k)?,
                "prod" => x.prod(&d, k)?,
                "amax" => x.max(&d, k)?,
                "amin" => x.min(&d, k)?,
                "var" => x.var(&d, pu(p, "correction"), k)?,
                "std" => x.std(&d, pu(p, "correction"), k)?,
                "logsumexp" => x.logsumexp(&d, k)?,
                "norm" => {
                    let pp = pf(p, "p");
                    x.norm(pp, &d, k)?
                }
                _ => unreachable!("{op}"),
            })
        }
        "dimred" => {
            let x = &t[0];
            let d = pi(p, "dim");
            let k = pb(p, "keepdim");
            match op {
                "max_dim" => {
                    let (a, b) = x.max_dim(d, k)?;
                    Ok(vec![a, b])
                }
                "min_dim" => {
                    let (a, b) = x.min_dim(d, k)?;
                    Ok(vec![a, b])
                }
                "argmax" => one(x.argmax(d, k)?),
                "argmin" => one(x.argmin(d, k)?),
                "argmax_all" => one(x.argmax_all()?),
                "argmin_all" => one(x.argmin_all()?),
                "cumsum" => one(x.cumsum(d)?),
                "cumprod" => one(x.cumprod(d)?),
                "softmax" => one(x.softmax(d)?),
                "log_softmax" => one(x.log_softmax(d)?),
                "any" => one(x.any(&isizes(&p["dims"]), k)?),
                "all" => one(x.all(&isizes(&p["dims"]), k)?),
                _ => unreachable!(),
            }
        }
        "matmul" => {
            if op == "matmul_t" {
                one(t[0].matmul_t(&t[1], pb(p, "ta"), pb(p, "tb"))?)
            } else {
                one(t[0].matmul(&t[1])?)
            }
        }
        "linear" => one(wgrad::nn::linear(&t[0], &t[1], t.get(2))?),
        "structure" => {
            let x = &t[0];
            match op {
                "cat" => one(Tensor::cat(&t.iter().collect::<Vec<_>>(), pi(p, "dim"))?),
                "stack" => one(Tensor::stack(&t.iter().collect::<Vec<_>>(), pi(p, "dim"))?),
                "tril" => one(x.tril(p["diag"].as_i64().unwrap())?),
                "triu" => one(x.triu(p["diag"].as_i64().unwrap())?),
                "split" => x.split(pu(p, "size"), pi(p, "dim")),
                "chunk" => x.chunk(pu(p, "chunks"), pi(p, "dim")),
                "unbind" => x.unbind(pi(p, "dim")),
                "narrow" => one(x.narrow(pi(p, "dim"), pu(p, "start"), pu(p, "len"))?),
                "select" => one(x.select(pi(p, "dim"), pi(p, "index"))?),
                "slice" => one(x.slice(
                    pi(p, "dim"),
                    p["start"].as_i64().map(|v| v as isize),
                    p["end"].as_i64().map(|v| v as isize),
                    pu(p, "step"),
                )?),
                "flip" => one(x.flip(&isizes(&p["dims"]))?),
                "roll" => one(x.roll(&isizes(&p["shifts"]), &isizes(&p["dims"]))?),
                "repeat" => one(x.repeat(&usizes(&p["reps"]))?),
                "transpose" => one(x.transpose(pi(p, "a"), pi(p, "b"))?),
                "permute" => one(x.permute(&isizes(&p["perm"]))?),
                "reshape" => one(x.reshape(&isizes(&p["shape"]))?),
                "flatten" => one(x.flatten(pu(p, "start"))?),
                "squeeze" => one(x.squeeze(pi(p, "dim"))?),
                "unsqueeze" => one(x.unsqueeze(pi(p, "dim"))?),
                "expand" => one(x.expand(&usizes(&p["shape"]))?),
                _ => unreachable!("{op}"),
            }
        }
        "index" => {
            let d = pi(p, "dim");
            match op {
                "index_select" => one(t[0].index_select(d, &t[1])?),
                "gather" => one(t[0].gather(d, &t[1])?),
                "scatter_add" => one(t[0].scatter_add(d, &t[1], &t[2])?),
                "scatter" => one(t[0].scatter(d, &t[1], &t[2])?),
                "index_add" => one(t[0].index_add(d, &t[1], &t[2])?),
                "masked_fill" => one(t[0].masked_fill(&t[1], num(&p["value"]).unwrap())?),
                "masked_select" => one(t[0].masked_select(&t[1])?),
                "index_put" => one(t[0].index_put(&t[1], &t[2], pb(p, "acc"))?),
                "one_hot" => one(t[0].one_hot(pu(p, "classes"), DType::F32)?),
                "embedding" => one(wgrad::nn::embedding(
                    &t[0],
                    &t[1],
                    p["pad"].as_i64().map(|v| v as isize),
                )?),
                _ => unreachable!(),
            }
        }
        "sort" => {
            let d = pi(p, "dim");
            let desc = pb(p, "desc");
            match op {
                "sort" => {
                    let (a, b) = t[0].sort(d, desc)?;
                    Ok(vec![a, b])
                }
                "argsort" => one(t[0].argsort(d, desc)?),
                _ => {
                    let (a, b) = t[0].topk(pu(p, "k"), d, desc, true)?;
                    Ok(vec![a, b])
                }
            }
        }
        "layer_norm" => {
            one(t[0].layer_norm(&usizes(&p["ns"]), t.get(1), t.get(2), pf(p, "eps"))?)
        }
        "loss" => {
            let r = red(p);
            match op {
                "cross_entropy" | "cross_entropy_prob" => one(loss::cross_entropy(
                    &t[0],
                    &t[1],
                    CrossEntropyOptions {
                        reduction: r,
                        label_smoothing: pf(p, "ls"),
                        ignore_index: p["ii"].as_i64().unwrap_or(-100) as i32,
                    },
                )?),
                "nll_loss" => one(loss::nll_loss_with(&t[0], &t[1], r, pi(p, "ii") as i32)?),
                "mse" => one(loss::mse_loss(&t[0], &t[1], r)?),
                "l1" => one(loss::l1_loss(&t[0], &t[1], r)?),
                "smooth_l1" => one(loss::smooth_l1_loss(&t[0], &t[1], pf(p, "beta"), r)?),
                "huber" => one(loss::huber_loss(&t[0], &t[1], pf(p, "delta"), r)?),
                "bce" => one(loss::binary_cross_entropy(
                    &t[0],
                    &t[1],
                    BceOptions {
                        reduction: r,
                        weight: t.get(2),
                        pos_weight: None,
                    },
                )?),
                "bce_logits" => {
                    let mut i = 2;
                    let w = if pb(p, "w") {
                        i += 1;
                        t.get(i - 1)
                    } else {
                        None
                    };
                    let pw = if pb(p, "pw") { t.get(i) } else { None };
                    one(loss::binary_cross_entropy_with_logits_with(
                        &t[0],
                        &t[1],
                        BceOptions {
                            reduction: r,
                            weight: w,
                            pos_weight: pw,
                        },
                    )?)
                }
                "kl_div" => one(loss::kl_div(&t[0], &t[1], r, pb(p, "lt"))?),
                _ => unreachable!(),
            }
        }
        "conv2d" => {
            let st = usizes(&p["stride"]);
            let pad = usizes(&p["pad"]);
            let dil = usizes(&p["dil"]);
            let args = Conv2dArgs {
                stride: [st[0], st[1]],
                padding: [[pad[0], pad[0]], [pad[1], pad[1]]],
                dilation: [dil[0], dil[1]],
                groups: pu(p, "groups"),
            };
            one(t[0].conv2d(&t[1], t.get(2), &args)?)
        }
        "pool" => {
            if op == "adaptive_avg_pool2d" {
                let o = usizes(&p["out"]);
                return one(t[0].adaptive_avg_pool2d([o[0], o[1]])?);
            }
            let k = usizes(&p["k"]);
            let s = usizes(&p["s"]);
            let pad = usizes(&p["pad"]);
            let mut args = Pool2dArgs::new([k[0], k[1]]);
            args.stride = [s[0], s[1]];
            args.padding = [pad[0], pad[1]];
            args.ceil_mode = pb(p, "ceil");
            if op == "max_pool2d" {
                let dl = usizes(&p["dil"]);
                args.dilation = [dl[0], dl[1]];
                one(t[0].max_pool2d(&args)?)
            } else {
                one(t[0].avg_pool2d(&args, pb(p, "cip"), p["div"].as_u64().map(|v| v as usize))?)
            }
        }
        "sdpa" => {
            let causal = p["mask"].as_str() == Some("causal");
            one(t[0].scaled_dot_product_attention(
                &t[1],
                &t[2],
                t.get(3),
                0.0,
                causal,
                p["scale"].as_f64(),
            )?)
        }
        "nn2" => match op {
            "pad" => {
                let mode = match p["mode"].as_str().unwrap() {
                    "constant" => wgrad::PadMode::Constant(pf(p, "value")),
                    "reflect" => wgrad::PadMode::Reflect,
                    "replicate" => wgrad::PadMode::Replicate,
                    _ => wgrad::PadMode::Circular,
                };
                one(t[0].pad(&isizes(&p["pads"]), mode)?)
            }
            "interpolate" => {
                let mode = match p["mode"].as_str().unwrap() {
                    "nearest" => wgrad::InterpolateMode::Nearest,
                    "nearest-exact" => wgrad::InterpolateMode::NearestExact,
                    _ => wgrad::InterpolateMode::Linear,
                };
                let size = p["size"].as_array().map(|_| usizes(&p["size"]));
                let scale: Option<Vec<f64>> = p["scale"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_f64().unwrap()).collect());
                one(t[0].interpolate(size.as_deref(), scale.as_deref(), mode, pb(p, "ac"))?)
            }
            "conv_transpose2d" => {
                let st = usizes(&p["stride"]);
                let pad = usizes(&p["pad"]);
                let dil = usizes(&p["dil"]);
                let opad = usizes(&p["opad"]);
                let args = wgrad::ConvTranspose2dArgs {
                    stride: [st[0], st[1]],
                    padding: [pad[0], pad[1]],
                    output_padding: [opad[0], opad[1]],
                    groups: pu(p, "groups"),
                    dilation: [dil[0], dil[1]],
                };
                one(t[0].conv_transpose2d(&t[1], t.get(2), &args)?)
            }
            "conv1d" => one(t[0].conv1d(
                &t[1],
                t.get(2),
                pu(p, "stride"),
                wgrad::ConvPadding::Explicit(pu(p, "pad")),
                pu(p, "dil"),
                pu(p, "groups"),
            )?),
            "group_norm" => one(wgrad::nn::group_norm::group_norm(
                &t[0],
                pu(p, "groups"),
                t.get(1),
                t.get(2),
                1e-5,
            )?),
            "batch_norm" => {
                let training = pb(p, "training");
                let aff = pb(p, "aff");
                let (w, b) = if aff {
                    (t.get(1), t.get(2))
                } else {
                    (None, None)
                };
                let running = if training {
                    None
                } else {
                    Some(wgrad::nn::batch_norm::RunningStats {
                        mean: &t[t.len() - 2],
                        var: &t[t.len() - 1],
                    })
                };
                one(wgrad::nn::batch_norm::batch_norm(
                    &t[0], running, w, b, training, 0.1, 1e-5,
                )?)
            }
            "ce_weighted" => one(loss::cross_entropy_weighted(
                &t[0],
                &t[1],
                &t[2],
                CrossEntropyOptions {
                    reduction: red(p),
                    label_smoothing: pf(p, "ls"),
                    ignore_index: p["ii"].as_i64().unwrap_or(-100) as i32,
                },
            )?),
            "max_pool1d" => one(t[0].max_pool1d(
                pu(p, "k"),
                p["st"].as_u64().map(|v| v as usize),
                pu(p, "pad"),
                1,
                pb(p, "ceil"),
            )?),
            "avg_pool1d" => one(t[0].avg_pool1d(
                pu(p, "k"),
                p["st"].as_u64().map(|v| v as usize),
                pu(p, "pad"),
                pb(p, "ceil"),
                pb(p, "cip"),
            )?),
            "sdpa_masked" => one(t[0].scaled_dot_product_attention(
                &t[1],
                &t[2],
                Some(&t[3]),
                0.0,
                false,
                None,
            )?),
            _ => Err(err(format!("unknown nn2 op {op}"))),
        },
        "misc" => match op {
            "clamp_tensor" => {
                let (lo, hi) = (pb(p, "lo"), pb(p, "hi"));
                let lo_t = if lo { Some(&t[1]) } else { None };
                let hi_t = if hi {
                    Some(&t[if lo { 2 } else { 1 }])
                } else {
                    None
                };
                one(t[0].clamp_tensor(lo_t, hi_t)?)
            }
            "logical_and" => one(t[0].logical_and(&t[1])?),
            "logical_or" => one(t[0].logical_or(&t[1])?),
            "logical_xor" => one(t[0].logical_xor(&t[1])?),
            "logical_not" => one(t[0].logical_not()?),
            "any_all" => one(t[0].any_all()?),
            "all_all" => one(t[0].all_all()?),
            "cast_f32" => one(t[0].cast(DType::F32)?),
            "cast_i32" => one(t[0].cast(DType::I32)?),
            "split_sizes" => t[0].split_with_sizes(&usizes(&p["sizes"]), pi(p, "dim")),
            "t" => one(t[0].t()?),
            "square" => one(t[0].square()?),
            _ => Err(err(format!("unknown misc op {op}"))),
        },
        _ => Err(err(format!("unknown kind {kind}"))),
    }
}

fn close(got: f32, want: f32, rtol: f32, atol: f32) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    if got.is_nan() || got.is_infinite() {
        return false;
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

fn fmt_vals<T: std::fmt::Debug>(v: &[T]) -> String {
    if v.len() > 24 {
        format!("{:?}..(+{})", &v[..24], v.len() - 24)
    } else {
        format!("{v:?}")
    }
}

/// Compares a wgrad tensor with an expected spec. Err(msg) on mismatch.
fn compare(
    what: &str,
    got: &Tensor,
    want: &Value,
    rtol: f32,
    atol: f32,
) -> std::result::Result<(), String> {
    let wshape = usizes(&want["shape"]);
    let wdt = want["dtype"].as_str().unwrap();
    if got.shape().to_vec() != wshape {
        return Err(format!(
            "{what}: SHAPE got {:?} want {:?}",
            got.shape().to_vec(),
            wshape
        ));
    }
    let data = want["data"].as_str().unwrap();
    compare_data(what, got, wdt, data, rtol, atol)
}

fn compare_data(
    what: &str,
    got: &Tensor,
    wdt: &str,
    data: &str,
    rtol: f32,
    atol: f32,
) -> std::result::Result<(), String> {
    let gdt = got.dtype();
    let exp_dt = match wdt {
        "f32" => DType::F32,
        "i32" => DType::I32,
        "bool" => DType::U32,
        _ => unreachable!(),
    };
    if gdt != exp_dt {
        // compare values anyway
        let gv = got
            .to_vec_f32()
            .map_err(|e| format!("{what}: readback error {e}"))?;
        return Err(format!(
            "{what}: DTYPE got {gdt:?} want {exp_dt:?} (values {})",
            fmt_vals(&gv)
        ));
    }
    match gdt {
        DType::F32 => {
            let g = got
                .to_vec::<f32>()
                .map_err(|e| format!("{what}: readback error: {e}"))?;
            let w = f32s(data);
            let mut bad = vec![];
            for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                if !close(*a, *b, rtol, atol) {
                    bad.push(i);
                }
            }
            if !bad.is_empty() {
                let i = bad[0];
                return Err(format!(
                    "{what}: VALUE {} of {} differ; first at flat {i}: got {} want {}; got {} want {}",
                    bad.len(),
                    w.len(),
                    g[i],
                    w[i],
                    fmt_vals(&g),
                    fmt_vals(&w)
                ));
            }
        }
        DType::I32 | DType::U32 => {
            let g: Vec<i64> = if gdt == DType::I32 {
                got.to_vec::<i32>()
                    .map_err(|e| format!("{what}: readback error: {e}"))?
                    .into_iter()
                    .map(|v| v as i64)
                    .collect()
            } else {
                got.to_vec::<u32>()
                    .map_err(|e| format!("{what}: readback error: {e}"))?
                    .into_iter()
                    .map(|v| v as i64)
                    .collect()
            };
            let w: Vec<i64> = i32s(data).into_iter().map(|v| v as i64).collect();
            if g != w {
                return Err(format!(
                    "{what}: INT VALUE got {} want {}",
                    fmt_vals(&g),
                    fmt_vals(&w)
                ));
            }
        }
        _ => return Err(format!("{what}: unexpected dtype {gdt:?}")),
    }
    Ok(())
}

/// Runs one case on one device; returns list of problems (empty = pass).
fn run_case(case: &Value, dev: &Device) -> Vec<String> {
    let kind = case["kind"].as_str().unwrap();
    let p = &case["p"];
    let mut probs = vec![];
    let reducing = !matches!(
        kind,
        "binary"
            | "binary_int"
            | "binary_scalar"
            | "binary_scalar_int"
            | "compare"
            | "where"
            | "unary"
            | "unary_int"
            | "structure"
    );
    let (rtol, atol) = if reducing { (1e-4, 1e-5) } else { (1e-5, 1e-6) };
    let (rtol, atol) = if std::env::var("FUZZ_EXACT").is_ok() {
        (0.0, 0.0)
    } else {
        (rtol, atol)
    };
    let built: Result<Vec<Built>> = case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| build(s, dev))
        .collect();
    let built = match built {
        Ok(b) => b,
        Err(e) => return vec![format!("BUILD ERROR {e}")],
    };
    let views: Vec<Tensor> = built.iter().map(|b| b.view.clone()).collect();
    let torch_err = case.get("error").and_then(|e| e.as_str());
    let res = run_op(kind, p, &views);
    let outs = match (res, torch_err) {
        (Err(e), Some(te)) => {
            let _ = te;
            let _ = e;
            return vec![];
        }
        (Err(e), None) => return vec![format!("ERROR where torch succeeds: {e}")],
        (Ok(outs), Some(te)) => {
            // GPU errors may show only at readback
            let mut rb_err = None;
            for o in &outs {
                if let Err(e) = o.to_vec_f32() {
                    rb_err = Some(e);
                }
            }
            if rb_err.is_some() {
                return vec![];
            }
            let shapes: Vec<Vec<usize>> = outs.iter().map(|o| o.shape().to_vec()).collect();
            let vals: Vec<String> = outs
                .iter()
                .map(|o| fmt_vals(&o.to_vec_f32().unwrap_or_default()))
                .collect();
            return vec![format!(
                "SUCCESS where torch errors ({te}); wgrad shapes {shapes:?} values {vals:?}"
            )];
        }
        (Ok(outs), None) => outs,
    };
    let wouts = case["outputs"].as_array().unwrap();
    if outs.len() != wouts.len() {
        return vec![format!(
            "OUTPUT COUNT got {} want {}",
            outs.len(),
            wouts.len()
        )];
    }
    for (j, (o, w)) in outs.iter().zip(wouts).enumerate() {
        if let Err(m) = compare(&format!("out{j}"), o, w, rtol, atol) {
            probs.push(m);
        }
    }
    if !probs.is_empty() {
        return probs;
    }
    // backward
    if let (Some(ups), Some(grads)) = (case.get("upstream"), case.get("grads")) {
        let diff: Vec<usize> = usizes(&case["diff_outputs"]);
        let ups: Vec<Tensor> = ups
            .as_array()
            .unwrap()
            .iter()
            .zip(&diff)
            .map(|(u, &j)| {
                Tensor::from_vec(f32s(u.as_str().unwrap()), &outs[j].shape(), dev).unwrap()
            })
            .collect();
        let bw = (|| -> Result<()> {
            if diff.len() == 1 {
                outs[diff[0]].backward_with(&ups[0])?;
            } else {
                let mut total: Option<Tensor> = None;
                for (u, &j) in ups.iter().zip(&diff) {
                    let s = outs[j].mul(u)?.sum_all()?;
                    total = Some(match total {
                        None => s,
                        Some(t) => t.add(&s)?,
                    });
                }
                total.unwrap().backward()?;
            }
            Ok(())
        })();
        if let Err(e) = bw {
            return vec![format!("BACKWARD ERROR: {e}")];
        }
        let leaves: Vec<&Built> = built.iter().filter(|b| b.leaf.requires_grad()).collect();
        for (i, (b, g)) in leaves.iter().zip(grads.as_array().unwrap()).enumerate() {
            let got = match b.leaf.grad() {
                Some(g) => g,
                None => b.leaf.zeros_like().unwrap(),
            };
            if got.shape().to_vec() != b.leaf.shape().to_vec() {
                probs.push(format!(
                    "grad{i}: SHAPE {:?} vs leaf {:?}",
                    got.shape().to_vec(),
                    b.leaf.shape().to_vec()
                ));
                continue;
            }
            let wmax = f32s(g.as_str().unwrap())
                .iter()
                .filter(|v| v.is_finite())
                .fold(1.0f32, |m, v| m.max(v.abs()));
            let (grt, gat) = if rtol == 0.0 {
                (0.0, 0.0)
            } else {
                (1e-4, 1e-5 * wmax)
            };
            if let Err(m) = compare_data(
                &format!("grad{i}"),
                &got,
                "f32",
                g.as_str().unwrap(),
                grt,
                gat,
            ) {
                probs.push(m);
            }
        }
    } else if case.get("grad_error").is_some() {
        // torch has no gradient
    }
    probs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .cloned()
        .unwrap_or("/tmp/pytorch_diff/cases.jsonl".into());
    let which = args.get(2).cloned().unwrap_or("both".into());
    let only: Option<i64> = args.get(3).and_then(|s| s.parse().ok());
    let text = std::fs::read_to_string(&path).unwrap();
    let mut devices = vec![];
    if which == "both" || which == "cpu" {
        devices.push(("cpu", Device::Cpu));
    }
    if which == "both" || which == "gpu" {
        match Device::gpu() {
            Ok(d) => devices.push(("gpu", d)),
            Err(e) => eprintln!("no gpu: {e}"),
        }
    }
    std::panic::set_hook(Box::new(|_| {}));
    let (mut n, mut nbad) = (0, 0);
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let id = case["id"].as_i64().unwrap();
        if let Some(o) = only {
            if o != id {
                continue;
            }
        }
        n += 1;
        let mut any = false;
        for (dn, dev) in &devices {
            let r = catch_unwind(AssertUnwindSafe(|| run_case(&case, dev)));
            let probs = match r {
                Ok(p) => p,
                Err(e) => {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    vec![format!("PANIC: {msg}")]
                }
            };
            for pr in &probs {
                any = true;
                let mut ins = String::new();
                for i in case["inputs"].as_array().unwrap() {
                    ins += &format!(
                        "[{} {:?} views={}] ",
                        i["dtype"],
                        usizes(&i["shape"]),
                        i["views"]
                    );
                }
                println!(
                    "MISMATCH case={id} dev={dn} kind={} p={} inputs={ins}\n    {pr}",
                    case["kind"], case["p"]
                );
            }
        }
        if any {
            nbad += 1;
        }
    }
    println!("SUMMARY cases={n} with_mismatch={nbad}");
}
