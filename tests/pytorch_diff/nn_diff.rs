//! Round 3: replays the random cases of tests/pytorch_diff/gen_nn.py (nn modules, newer tensor functions, losses, recurrent layers) through wgrad on the CPU and the GPU and prints every disagreement with PyTorch; see tests/pytorch_diff/README.md.
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};
use wgrad::nn::loss::{self, Reduction};
use wgrad::nn::*;
use wgrad::{ConvTranspose2dArgs, DType, Device, Error, InterpolateMode, Result, Tensor};

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
fn pinf(p: &Value, k: &str) -> f32 {
    match &p[k] {
        Value::String(s) if s == "inf" => f32::INFINITY,
        v => v.as_f64().unwrap() as f32,
    }
}
fn pus(p: &Value, k: &str) -> Vec<usize> {
    usizes(&p[k])
}
fn pis(p: &Value, k: &str) -> Vec<isize> {
    isizes(&p[k])
}

/// Loads PyTorch's parameters into a module's by name; the names must be
/// the same set.
fn load(named: &[(String, Tensor)], case: &Value, dev: &Device) -> Result<()> {
    let want = case["params"].as_object();
    let n_want = want.map_or(0, |m| m.len());
    if named.len() != n_want {
        let got: Vec<&String> = named.iter().map(|(n, _)| n).collect();
        return Err(err(format!(
            "PARAM NAMES got {got:?} want {:?}",
            want.map(|m| m.keys().collect::<Vec<_>>())
        )));
    }
    for (name, t) in named {
        let spec = case["params"]
            .get(name)
            .ok_or_else(|| err(format!("PARAM NAME {name} not in PyTorch's")))?;
        let b = build(spec, dev)?;
        t.set_storage(b.leaf.detach().storage())?;
    }
    Ok(())
}

type Out = (Vec<Tensor>, Vec<(String, Tensor)>);

fn module_out(m: &dyn Module, x: &Tensor, case: &Value, dev: &Device) -> Result<Out> {
    let named = m.named_parameters();
    load(&named, case, dev)?;
    Ok((vec![m.forward(x)?], named))
}

fn act_module(p: &Value, dev: &Device) -> Result<Box<dyn Module>> {
    let op = p["op"].as_str().unwrap();
    Ok(match op {
        "gelu_tanh" => Box::new(GELU::with_approximate("tanh")?),
        "elu" => Box::new(ELU::new(pf(p, "alpha"))),
        "selu" => Box::new(SELU::new()),
        "celu" => Box::new(CELU::new(pf(p, "alpha"))?),
        "softplus" => Box::new(Softplus::new(pf(p, "beta"), pf(p, "threshold"))),
        "hardtanh" => Box::new(Hardtanh::new(pf(p, "min"), pf(p, "max"))?),
        "relu6" => Box::new(ReLU6::new()),
        "mish" => Box::new(Mish::new()),
        "hardswish" => Box::new(Hardswish::new()),
        "hardsigmoid" => Box::new(Hardsigmoid::new()),
        "logsigmoid" => Box::new(LogSigmoid::new()),
        "softsign" => Box::new(Softsign::new()),
        "softmax" => Box::new(Softmax::new(pi(p, "dim"))),
        "log_softmax" => Box::new(LogSoftmax::new(pi(p, "dim"))),
        "softmin" => Box::new(Softmin::new(pi(p, "dim"))),
        "glu" => Box::new(GLU::new(pi(p, "dim"))),
        "tanhshrink" => Box::new(Tanhshrink::new()),
        "threshold" => Box::new(Threshold::new(pf(p, "threshold"), pf(p, "value"))),
        "hardshrink" => Box::new(Hardshrink::new(pf(p, "lambd"))),
        "softshrink" => Box::new(Softshrink::new(pf(p, "lambd"))),
        "prelu" => Box::new(PReLU::new(pu(p, "num"), 0.25, dev)?),
        "leaky_relu" => Box::new(LeakyReLU::new(pf(p, "slope"))),
        _ => unreachable!("{op}"),
    })
}

fn act_functional(op: &str, p: &Value, x: &Tensor) -> Result<Tensor> {
    match op {
        "gelu_tanh" => x.gelu_with("tanh"),
        "elu" => x.elu(pf(p, "alpha")),
        "softplus" => x.softplus(pf(p, "beta"), pf(p, "threshold")),
        "hardtanh" => x.hardtanh(pf(p, "min"), pf(p, "max")),
        "mish" => x.mish(),
        "leaky_relu" => x.leaky_relu(pf(p, "slope")),
        "softmax" => x.softmax(pi(p, "dim")),
        "log_softmax" => x.log_softmax(pi(p, "dim")),
        _ => unreachable!("{op}"),
    }
}

fn pad_module(p: &Value) -> Box<dyn Module> {
    let pads = pis(p, "pads");
    let v = pf(p, "value");
    let two = || [pads[0], pads[1]];
    let four = || [pads[0], pads[1], pads[2], pads[3]];
    match (p["mode"].as_str().unwrap(), pu(p, "sd")) {
        ("zero", 1) => Box::new(ZeroPad1d::with_sides(two())),
        ("zero", _) => Box::new(ZeroPad2d::with_sides(four())),
        ("constant", 1) => Box::new(ConstantPad1d::new(two(), v)),
        ("constant", _) => Box::new(ConstantPad2d::new(four(), v)),
        ("reflection", 1) => Box::new(ReflectionPad1d::with_sides(two())),
        ("reflection", _) => Box::new(ReflectionPad2d::with_sides(four())),
        ("replication", 1) => Box::new(ReplicationPad1d::with_sides(two())),
        ("replication", _) => Box::new(ReplicationPad2d::with_sides(four())),
        ("circular", 1) => Box::new(CircularPad1d::with_sides(two())),
        ("circular", _) => Box::new(CircularPad2d::with_sides(four())),
        m => unreachable!("{m:?}"),
    }
}

fn rnn_options(p: &Value) -> RnnOptions {
    let mut o = RnnOptions::new(pu(p, "input_size"), pu(p, "hidden_size"));
    o.num_layers = p["num_layers"].as_u64().unwrap_or(1) as usize;
    o.bias = pb(p, "bias");
    o.batch_first = pb(p, "batch_first");
    o.bidirectional = pb(p, "bidirectional");
    o.nonlinearity = if p["nonlinearity"].as_str() == Some("relu") {
        RnnNonlinearity::Relu
    } else {
        RnnNonlinearity::Tanh
    };
    o
}

fn run_op(kind: &str, p: &Value, t: &[Tensor], case: &Value, dev: &Device) -> Result<Out> {
    let op = p["op"].as_str().unwrap_or("");
    let one = |x: Tensor| -> Result<Out> { Ok((vec![x], vec![])) };
    let two = |(a, b): (Tensor, Tensor)| -> Result<Out> { Ok((vec![a, b], vec![])) };
    match kind {
        "act" => {
            if pb(p, "functional") {
                return one(act_functional(op, p, &t[0])?);
            }
            let m = act_module(p, dev)?;
            module_out(m.as_ref(), &t[0], case, dev)
        }
        "norm" => {
            let m: Box<dyn Module> = match op {
                "rms_norm" => Box::new(RMSNorm::new(&pus(p, "ns"), pfo(p, "eps"), pb(p, "affine"), dev)?),
                "instance_norm" => {
                    let (c, eps, aff) = (pu(p, "C"), pf(p, "eps"), pb(p, "affine"));
                    let mut m: Box<dyn Module> = if pu(p, "sp") == 1 {
                        Box::new(InstanceNorm1d::new(c, eps, aff, dev)?)
                    } else {
                        Box::new(InstanceNorm2d::new(c, eps, aff, dev)?)
                    };
                    if pb(p, "eval") {
                        m.train(false);
                    }
                    m
                }
                "group_norm" => Box::new(GroupNorm::new(pu(p, "groups"), pu(p, "C"), pf(p, "eps"), pb(p, "affine"), dev)?),
                "layer_norm" => Box::new(LayerNorm::new(&pus(p, "ns"), pf(p, "eps"), pb(p, "affine"), dev)?.with_bias(pb(p, "bias"))),
                _ => unreachable!("{op}"),
            };
            module_out(m.as_ref(), &t[0], case, dev)
        }
        "shape" => {
            let m: Box<dyn Module> = match op {
                "pixel_shuffle" => Box::new(PixelShuffle::new(pu(p, "r"))),
                "pixel_unshuffle" => Box::new(PixelUnshuffle::new(pu(p, "r"))),
                "unflatten" => Box::new(Unflatten::new(pi(p, "dim"), &pis(p, "sizes"))),
                "flatten" => Box::new(Flatten::from_dim(pu(p, "start"))),
                "pad" => pad_module(p),
                _ => unreachable!("{op}"),
            };
            module_out(m.as_ref(), &t[0], case, dev)
        }
        "pool" => {
            let x = &t[0];
            let module = pb(p, "module");
            let o = || pus(p, "out");
            let st = p["st"].as_u64().map(|v| v as usize);
            match op {
                "adaptive_max1d" if module => module_out(&AdaptiveMaxPool1d::new(o()[0]), x, case, dev),
                "adaptive_max1d" => one(x.adaptive_max_pool1d(o()[0])?),
                "adaptive_max2d" if module => module_out(&AdaptiveMaxPool2d::new([o()[0], o()[1]]), x, case, dev),
                "adaptive_max2d" => one(x.adaptive_max_pool2d([o()[0], o()[1]])?),
                "adaptive_avg1d" if module => module_out(&AdaptiveAvgPool1d::new(o()[0]), x, case, dev),
                "adaptive_avg1d" => one(x.adaptive_avg_pool1d(o()[0])?),
                "adaptive_avg2d" if module => module_out(&AdaptiveAvgPool2d::new([o()[0], o()[1]]), x, case, dev),
                "adaptive_avg2d" => one(x.adaptive_avg_pool2d([o()[0], o()[1]])?),
                "max_pool1d" if module => {
                    let mut m = MaxPool1d::new(pu(p, "k"));
                    m.stride = st;
                    m.padding = pu(p, "pad");
                    m.dilation = pu(p, "dil");
                    m.ceil_mode = pb(p, "ceil");
                    module_out(&m, x, case, dev)
                }
                "max_pool1d" => one(x.max_pool1d(pu(p, "k"), st, pu(p, "pad"), pu(p, "dil"), pb(p, "ceil"))?),
                "avg_pool1d" if module => {
                    let mut m = AvgPool1d::new(pu(p, "k"));
                    m.stride = st;
                    m.padding = pu(p, "pad");
                    m.ceil_mode = pb(p, "ceil");
                    m.count_include_pad = pb(p, "cip");
                    module_out(&m, x, case, dev)
                }
                "avg_pool1d" => one(x.avg_pool1d(pu(p, "k"), st, pu(p, "pad"), pb(p, "ceil"), pb(p, "cip"))?),
                _ => unreachable!("{op}"),
            }
        }
        "conv" => match op {
            "conv_transpose1d" => {
                let m = ConvTranspose1d::new(
                    pu(p, "cin"),
                    pu(p, "cout"),
                    pus(p, "k")[0],
                    pus(p, "stride")[0],
                    pus(p, "pad")[0],
                    pus(p, "opad")[0],
                    pu(p, "groups"),
                    pb(p, "bias"),
                    pus(p, "dil")[0],
                    dev,
                )?;
                module_out(&m, &t[0], case, dev)
            }
            "conv_transpose2d" => {
                let v2 = |k: &str| {
                    let v = pus(p, k);
                    [v[0], v[1]]
                };
                let args = ConvTranspose2dArgs {
                    stride: v2("stride"),
                    padding: v2("pad"),
                    output_padding: v2("opad"),
                    groups: pu(p, "groups"),
                    dilation: v2("dil"),
                };
                let m = ConvTranspose2d::new(pu(p, "cin"), pu(p, "cout"), v2("k"), args, pb(p, "bias"), dev)?;
                module_out(&m, &t[0], case, dev)
            }
            "bilinear" => {
                let m = Bilinear::new(pu(p, "i1"), pu(p, "i2"), pu(p, "o"), pb(p, "bias"), dev)?;
                let named = m.named_parameters();
                load(&named, case, dev)?;
                Ok((vec![m.forward(&t[0], &t[1])?], named))
            }
            "interpolate" => {
                let mode = match p["mode"].as_str().unwrap() {
                    "nearest" => InterpolateMode::Nearest,
                    "bilinear" | "linear" => InterpolateMode::Linear,
                    "bicubic" => InterpolateMode::Bicubic,
                    "area" => InterpolateMode::Area,
                    m => unreachable!("{m}"),
                };
                let size = p["size"].as_array().map(|_| pus(p, "size"));
                let scale: Option<Vec<f64>> = p["scale"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_f64().unwrap()).collect());
                one(t[0].interpolate(size.as_deref(), scale.as_deref(), mode, pb(p, "ac"))?)
            }
            _ => unreachable!("{op}"),
        },
        "einsum" => {
            let refs: Vec<&Tensor> = t.iter().collect();
            one(Tensor::einsum(p["eq"].as_str().unwrap(), &refs)?)
        }
        "tensor" => {
            let k = || pb(p, "keepdim");
            match op {
                "linspace" => one(Tensor::linspace(pf(p, "start") as f64, pf(p, "end") as f64, pu(p, "steps"), DType::F32, dev)?),
                "logspace" => one(Tensor::logspace(
                    p["start"].as_f64().unwrap() / 3.0,
                    p["end"].as_f64().unwrap() / 3.0,
                    pu(p, "steps"),
                    p["base"].as_f64().unwrap(),
                    DType::F32,
                    dev,
                )?),
                "eye" => one(Tensor::eye(pu(p, "n"), p["m"].as_u64().map(|v| v as usize), DType::F32, dev)?),
                "diag" => one(t[0].diag(pi(p, "off") as i64)?),
                "diagonal" => one(t[0].diagonal(pi(p, "off") as i64, pi(p, "d1"), pi(p, "d2"))?),
                "trace" => one(t[0].trace()?),
                "lerp" => one(t[0].lerp(&t[1], &t[2])?),
                "lerp_scalar" => one(t[0].lerp_scalar(&t[1], pf(p, "w"))?),
                "logaddexp" => one(t[0].logaddexp(&t[1])?),
                "hypot" => one(t[0].hypot(&t[1])?),
                "amax" => one(t[0].amax(&pis(p, "dims"), k())?),
                "amin" => one(t[0].amin(&pis(p, "dims"), k())?),
                "aminmax" => two(t[0].aminmax(p["dim"].as_i64().map(|d| d as isize), k())?),
                "var_mean" => two(t[0].var_mean(&pis(p, "dims"), pu(p, "correction"), k())?),
                "std_mean" => two(t[0].std_mean(&pis(p, "dims"), pu(p, "correction"), k())?),
                "median" => one(t[0].median()?),
                "median_dim" => two(t[0].median_dim(pi(p, "dim"), k())?),
                "count_nonzero" => one(t[0].count_nonzero(&pis(p, "dims"))?),
                "movedim" => one(t[0].movedim(&pis(p, "src"), &pis(p, "dst"))?),
                "swapaxes" => one(t[0].swapaxes(pi(p, "a"), pi(p, "b"))?),
                "tile" => one(t[0].tile(&pus(p, "reps"))?),
                "meshgrid" => {
                    let refs: Vec<&Tensor> = t.iter().collect();
                    Ok((Tensor::meshgrid(&refs, p["indexing"].as_str().unwrap())?, vec![]))
                }
                "outer" => one(t[0].outer(&t[1])?),
                "dot" => one(t[0].dot(&t[1])?),
                "mv" => one(t[0].mv(&t[1])?),
                "bmm" => one(t[0].bmm(&t[1])?),
                "addmm" => one(t[0].addmm(&t[1], &t[2], pf(p, "beta") as f64, pf(p, "alpha") as f64)?),
                "baddbmm" => one(t[0].baddbmm(&t[1], &t[2], pf(p, "beta") as f64, pf(p, "alpha") as f64)?),
                "cdist" => one(cdist(&t[0], &t[1], pinf(p, "p"))?),
                "cosine_similarity" => one(cosine_similarity(&t[0], &t[1], pi(p, "dim"), pf(p, "eps"))?),
                "pairwise_distance" => one(pairwise_distance(&t[0], &t[1], pinf(p, "p"), pf(p, "eps"), k())?),
                "normalize" => one(normalize(&t[0], pinf(p, "p"), pi(p, "dim"), pf(p, "eps"))?),
                _ => unreachable!("{op}"),
            }
        }
        "loss" => {
            let r = red(p);
            one(match op {
                "margin_ranking" => loss::margin_ranking_loss(&t[0], &t[1], &t[2], pf(p, "margin"), r)?,
                "hinge_embedding" => loss::hinge_embedding_loss(&t[0], &t[1], pf(p, "margin"), r)?,
                "soft_margin" => loss::soft_margin_loss(&t[0], &t[1], r)?,
                "multilabel_soft_margin" => loss::multilabel_soft_margin_loss(&t[0], &t[1], t.get(2), r)?,
                "cosine_embedding" => loss::cosine_embedding_loss(&t[0], &t[1], &t[2], pf(p, "margin"), r)?,
                "triplet_margin" => loss::triplet_margin_loss(&t[0], &t[1], &t[2], pf(p, "margin"), pf(p, "p"), pf(p, "eps"), pb(p, "swap"), r)?,
                "poisson_nll" => loss::poisson_nll_loss(&t[0], &t[1], pb(p, "log_input"), pb(p, "full"), pf(p, "eps"), r)?,
                "gaussian_nll" => loss::gaussian_nll_loss(&t[0], &t[1], &t[2], pb(p, "full"), pf(p, "eps"), r)?,
                "kl_div" => loss::kl_div(&t[0], &t[1], r, pb(p, "log_target"))?,
                "smooth_l1" => loss::smooth_l1_loss(&t[0], &t[1], pf(p, "beta"), r)?,
                "huber" => loss::huber_loss(&t[0], &t[1], pf(p, "delta"), r)?,
                _ => unreachable!("{op}"),
            })
        }
        "rnn" => {
            let (i, h, bias) = (pu(p, "input_size"), pu(p, "hidden_size"), pb(p, "bias"));
            let h0 = t.get(1);
            let state = t.get(1).zip(t.get(2));
            match op {
                "rnn" => {
                    let m = RNN::new(rnn_options(p), dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    let (o, hn) = m.forward_hidden(&t[0], h0)?;
                    Ok((vec![o, hn], named))
                }
                "gru" => {
                    let m = GRU::new(rnn_options(p), dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    let (o, hn) = m.forward_hidden(&t[0], h0)?;
                    Ok((vec![o, hn], named))
                }
                "lstm" => {
                    let m = LSTM::new(rnn_options(p), dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    let (o, (hn, cn)) = m.forward_state(&t[0], state)?;
                    Ok((vec![o, hn, cn], named))
                }
                "rnn_cell" => {
                    let m = RNNCell::new(i, h, bias, rnn_options(p).nonlinearity, dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    Ok((vec![m.forward_hidden(&t[0], h0)?], named))
                }
                "gru_cell" => {
                    let m = GRUCell::new(i, h, bias, dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    Ok((vec![m.forward_hidden(&t[0], h0)?], named))
                }
                "lstm_cell" => {
                    let m = LSTMCell::new(i, h, bias, dev)?;
                    let named = m.named_parameters();
                    load(&named, case, dev)?;
                    let (hn, cn) = m.forward_state(&t[0], state)?;
                    Ok((vec![hn, cn], named))
                }
                _ => unreachable!("{op}"),
            }
        }
        "mha" => {
            let options = MultiheadAttentionOptions {
                bias: pb(p, "bias"),
                add_bias_kv: pb(p, "add_bias_kv"),
                add_zero_attn: pb(p, "add_zero_attn"),
                kdim: p["kdim"].as_u64().map(|v| v as usize),
                vdim: p["vdim"].as_u64().map(|v| v as usize),
                batch_first: pb(p, "batch_first"),
                ..MultiheadAttentionOptions::default()
            };
            let m = MultiheadAttention::with_options(pu(p, "E"), pu(p, "H"), &options, dev)?;
            let named = m.named_parameters();
            load(&named, case, dev)?;
            let q = &t[0];
            let (k, v) = if pb(p, "self") { (q, q) } else { (&t[1], &t[2]) };
            let (kpm, am) = split_masks(p, t, if pb(p, "self") { 1 } else { 3 });
            let opts = AttentionOptions {
                key_padding_mask: kpm,
                need_weights: pb(p, "nw"),
                attn_mask: am,
                average_attn_weights: pb(p, "avg"),
                is_causal: pb(p, "causal"),
            };
            let (o, w) = m.forward_attention(q, k, v, &opts)?;
            let mut outs = vec![o];
            outs.extend(w);
            Ok((outs, named))
        }
        "tlayer" => {
            let mut o = TransformerOptions::new(pu(p, "E"), pu(p, "H"));
            o.dim_feedforward = pu(p, "F");
            o.dropout = 0.0;
            o.activation = if p["act"].as_str() == Some("gelu") {
                Activation::Gelu
            } else {
                Activation::Relu
            };
            o.layer_norm_eps = pf(p, "eps");
            o.batch_first = pb(p, "batch_first");
            o.norm_first = pb(p, "norm_first");
            o.bias = pb(p, "bias");
            let decoder = op == "decoder";
            let (kpm, am) = split_masks(p, t, if decoder { 2 } else { 1 });
            let masks = LayerMasks {
                mask: am,
                key_padding_mask: kpm,
                is_causal: pb(p, "causal"),
            };
            if decoder {
                let m = TransformerDecoderLayer::new(&o, dev)?;
                let named = m.named_parameters();
                load(&named, case, dev)?;
                let y = m.forward_masked(&t[0], &t[1], &masks, &LayerMasks::default())?;
                Ok((vec![y], named))
            } else {
                let m = TransformerEncoderLayer::new(&o, dev)?;
                let named = m.named_parameters();
                load(&named, case, dev)?;
                Ok((vec![m.forward_masked(&t[0], &masks)?], named))
            }
        }
        _ => Err(err(format!("unknown kind {kind}"))),
    }
}

/// The key_padding_mask and attn_mask a case carries after its tensors
/// (`p["kpm"]`, `p["am"]`: their kinds, null when absent), from `first`.
fn split_masks<'a>(p: &Value, t: &'a [Tensor], first: usize) -> (Option<&'a Tensor>, Option<&'a Tensor>) {
    let has_kpm = p["kpm"].is_string();
    let kpm = has_kpm.then(|| &t[first]);
    let am = p["am"].is_string().then(|| &t[first + usize::from(has_kpm)]);
    (kpm, am)
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

/// Runs one case on one device; returns the problems (empty = pass).
fn run_case(case: &Value, dev: &Device) -> Vec<String> {
    let kind = case["kind"].as_str().unwrap();
    let p = &case["p"];
    let op = p["op"].as_str().unwrap_or("");
    let elementwise = matches!(kind, "act" | "shape")
        && !matches!(op, "softmax" | "log_softmax" | "softmin");
    let (rtol, atol) = if elementwise { (1e-5, 1e-6) } else { (1e-4, 1e-5) };
    let (rtol, atol) = if std::env::var("FUZZ_EXACT").is_ok() { (0.0, 0.0) } else { (rtol, atol) };
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
    let res = run_op(kind, p, &views, case, dev);
    let (outs, named) = match (res, torch_err) {
        (Err(e), Some(_)) => {
            let msg = e.to_string();
            if msg.contains("PARAM NAME") {
                return vec![msg];
            }
            return vec![];
        }
        (Err(e), None) => return vec![format!("ERROR where torch succeeds: {e}")],
        (Ok((outs, _)), Some(te)) => {
            // GPU errors may show only at readback
            if outs.iter().any(|o| o.to_vec_f32().is_err()) {
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
        (Ok(o), None) => o,
    };
    let wouts = case["outputs"].as_array().unwrap();
    if outs.len() != wouts.len() {
        return vec![format!("OUTPUT COUNT got {} want {}", outs.len(), wouts.len())];
    }
    for (j, (o, w)) in outs.iter().zip(wouts).enumerate() {
        // Scale-aware: a reduction's atol grows with its largest output.
        let wmax = f32s(w["data"].as_str().unwrap_or(""))
            .iter()
            .filter(|v| v.is_finite())
            .fold(0.0f32, |m, v| m.max(v.abs()));
        let at = if elementwise || w["dtype"] != "f32" { atol } else { atol * wmax.max(1.0) };
        if let Err(m) = compare(&format!("out{j}"), o, w, rtol, at) {
            return vec![m];
        }
    }
    let mut probs = vec![];
    let (Some(ups), Some(grads)) = (case.get("upstream"), case.get("grads")) else {
        return probs;
    };
    let diff: Vec<usize> = usizes(&case["diff_outputs"]);
    let bw = (|| -> Result<()> {
        let mut total: Option<Tensor> = None;
        for (u, &j) in ups.as_array().unwrap().iter().zip(&diff) {
            let u = Tensor::from_vec(f32s(u.as_str().unwrap()), &outs[j].shape(), dev)?;
            let s = outs[j].mul(&u)?.sum_all()?;
            total = Some(match total {
                None => s,
                Some(t) => t.add(&s)?,
            });
        }
        match total {
            Some(t) => t.backward(),
            None => Ok(()),
        }
    })();
    if let Err(e) = bw {
        return vec![format!("BACKWARD ERROR: {e}")];
    }
    let leaves: Vec<(String, Tensor)> = built
        .iter()
        .enumerate()
        .filter(|(_, b)| b.leaf.requires_grad())
        .map(|(i, b)| (format!("grad{i}"), b.leaf.clone()))
        .collect();
    let mut pairs: Vec<(String, Tensor, String)> = leaves
        .into_iter()
        .zip(grads.as_array().unwrap())
        .map(|((n, t), g)| (n, t, g.as_str().unwrap().to_string()))
        .collect();
    if let Some(pg) = case.get("pgrads").and_then(|v| v.as_object()) {
        for (n, t) in &named {
            match pg.get(n) {
                Some(g) => pairs.push((format!("param {n}"), t.clone(), g.as_str().unwrap().to_string())),
                None => probs.push(format!("param {n}: no PyTorch gradient")),
            }
        }
    }
    for (what, leaf, g) in pairs {
        let got = match leaf.grad() {
            Some(g) => g,
            None => leaf.zeros_like().unwrap(),
        };
        if got.shape().to_vec() != leaf.shape().to_vec() {
            probs.push(format!("{what}: SHAPE {:?} vs leaf {:?}", got.shape().to_vec(), leaf.shape().to_vec()));
            continue;
        }
        let wmax = f32s(&g).iter().filter(|v| v.is_finite()).fold(1.0f32, |m, v| m.max(v.abs()));
        let (grt, gat) = if rtol == 0.0 { (0.0, 0.0) } else { (1e-4, 1e-5 * wmax) };
        if let Err(m) = compare_data(&what, &got, "f32", &g, grt, gat) {
            probs.push(m);
        }
    }
    probs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).cloned().unwrap_or("/tmp/pytorch_diff/nn.jsonl".into());
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
    let mut counts: std::collections::BTreeMap<(String, &str), (usize, usize, usize)> = Default::default();
    let (mut n, mut nbad) = (0, 0);
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let id = case["id"].as_i64().unwrap();
        if only.is_some_and(|o| o != id) {
            continue;
        }
        n += 1;
        let mut any = false;
        let kind = case["kind"].as_str().unwrap().to_string();
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
            let c = counts.entry((kind.clone(), dn)).or_default();
            c.0 += 1;
            if case.get("error").is_some() {
                c.2 += 1;
            }
            if !probs.is_empty() {
                c.1 += 1;
            }
            for pr in &probs {
                any = true;
                let mut ins = String::new();
                for i in case["inputs"].as_array().unwrap() {
                    ins += &format!("[{} {:?} views={}] ", i["dtype"], usizes(&i["shape"]), i["views"]);
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
    for ((k, d), (c, b, e)) in &counts {
        println!("KIND {k:8} {d}: cases {c:5} (torch errors {e:4}) mismatches {b}");
    }
    println!("SUMMARY cases={n} with_mismatch={nbad}");
}
