//! Every op of docs/OPS.md (and the nn losses) against PyTorch: replays
//! each case of `tests/fixtures/ops.safetensors` (written by
//! `tests/fixtures/make_fixtures.py`) on the CPU and on the GPU, checking
//! the forward output and, for differentiable cases, the gradient of every
//! input under the stored upstream gradient.
//!
//! Tolerances (max of `|wgrad - torch| / max(1, |torch|)`): 1e-5 for
//! elementwise ops, views, indexing and creation; 1e-4 for reductions
//! (logsumexp, prod, std, norm, max/min_dim and tensor-bound clamp, whose
//! bound gradients are sums, included), softmax, matmul, linear and losses
//! (their sums run in another order than PyTorch's). Integer outputs (masks, arg*, casts) must match exactly.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::loss::{
    CrossEntropyOptions, Reduction, binary_cross_entropy_with_logits, cross_entropy, l1_loss,
    mse_loss, nll_loss_with, smooth_l1_loss,
};
use wgrad::{BinaryOp, DType, Device, Result, Tensor, UnaryOp};

/// Tolerance for elementwise ops, views, indexing and creation.
const ELEMENTWISE_TOL: f32 = 1e-5;
/// Tolerance for reductions, softmax, matmul and losses.
const REDUCTION_TOL: f32 = 1e-4;
/// Cases with 16-bit float inputs: a few units in the last place of the
/// dtype (PyTorch's CPU kernels and ours both compute in f32 and round each
/// op's result once, but composites round at different points).
const F16_TOL: f32 = 8.0 * 9.77e-4;
const BF16_TOL: f32 = 8.0 * 7.82e-3;

/// Ops whose outputs and gradients involve sums over several elements.
const REDUCING_OPS: &[&str] = &[
    "scaled_dot_product_attention",
    "conv2d",
    "conv2d_same",
    "conv1d",
    "conv_transpose2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "batch_norm",
    "batch_norm_eval",
    "group_norm",
    "interpolate",
    "sum",
    "mean",
    "max",
    "min",
    "var",
    "softmax",
    "log_softmax",
    "matmul",
    "matmul_t",
    "linear",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "bce_with_logits",
    // The gradient to a broadcast bound is a sum.
    "clamp_tensor",
    "logsumexp",
    "prod",
    "std",
    "norm",
    "max_dim",
    "min_dim",
];

/// The unary op called `name` (every `UnaryOp`, by its `name()`).
fn unary_op(name: &str) -> Option<UnaryOp> {
    UnaryOp::ALL.into_iter().find(|op| op.name() == name)
}

/// The op set of docs/OPS.md (as the fixture names them) plus the losses,
/// besides the unary ops (every `UnaryOp` by name): every one must have at
/// least one case.
const OP_SET: &[&str] = &[
    "zeros",
    "ones",
    "full",
    "arange",
    "reshape",
    "transpose",
    "permute",
    "narrow",
    "expand",
    "unsqueeze",
    "squeeze",
    "contiguous",
    "flatten",
    "cat",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "binary_scalar",
    "compare",
    "compare_scalar",
    "where",
    "cast",
    "sum",
    "mean",
    "max",
    "min",
    "var",
    "argmax",
    "argmin",
    "softmax",
    "log_softmax",
    "matmul",
    "matmul_t",
    "linear",
    "index_select",
    "gather",
    "one_hot",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "bce_with_logits",
    "clamp_tensor",
    "logsumexp",
    "prod",
    "std",
    "norm",
    "max_dim",
    "min_dim",
    "argmax_all",
    "argmin_all",
];

fn str_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args[key]
        .as_str()
        .unwrap_or_else(|| panic!("arg {key} is not a string: {args}"))
}

fn f64_arg(args: &Value, key: &str) -> f64 {
    args[key]
        .as_f64()
        .unwrap_or_else(|| panic!("arg {key} is not a number: {args}"))
}

fn f32_arg(args: &Value, key: &str) -> f32 {
    f64_arg(args, key) as f32
}

fn opt_f32_arg(args: &Value, key: &str) -> Option<f32> {
    args[key].as_f64().map(|v| v as f32)
}

fn int_arg(args: &Value, key: &str) -> i64 {
    args[key]
        .as_i64()
        .unwrap_or_else(|| panic!("arg {key} is not an integer: {args}"))
}

fn bool_arg(args: &Value, key: &str) -> bool {
    args[key]
        .as_bool()
        .unwrap_or_else(|| panic!("arg {key} is not a bool: {args}"))
}

fn int_list(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}")))
        .collect()
}

fn isizes(value: &Value) -> Vec<isize> {
    int_list(value).into_iter().map(|v| v as isize).collect()
}

fn usizes(value: &Value) -> Vec<usize> {
    int_list(value).into_iter().map(|v| v as usize).collect()
}

fn dtype_arg(args: &Value) -> DType {
    match str_arg(args, "dtype") {
        "f32" => DType::F32,
        "i32" => DType::I32,
        "u32" => DType::U32,
        other => panic!("unknown dtype {other}"),
    }
}

fn reduction_arg(args: &Value) -> Reduction {
    match str_arg(args, "reduction") {
        "mean" => Reduction::Mean,
        "sum" => Reduction::Sum,
        "none" => Reduction::None,
        other => panic!("unknown reduction {other}"),
    }
}

fn binary_op(name: &str) -> BinaryOp {
    match name {
        "add" => BinaryOp::Add,
        "sub" => BinaryOp::Sub,
        "mul" => BinaryOp::Mul,
        "div" => BinaryOp::Div,
        "pow" => BinaryOp::Pow,
        "maximum" => BinaryOp::Maximum,
        "minimum" => BinaryOp::Minimum,
        other => panic!("unknown binary op {other}"),
    }
}

/// Applies one view spec `[name, args..]` (as `apply_views` in make_fixtures.py).
fn apply_view(t: &Tensor, spec: &Value) -> Result<Tensor> {
    let spec = spec.as_array().expect("a view is a list");
    let name = spec[0].as_str().expect("view name");
    let int = |i: usize| spec[i].as_i64().expect("view arg") as isize;
    match name {
        "transpose" => t.transpose(int(1), int(2)),
        "permute" => t.permute(&isizes(&spec[1])),
        "narrow" => t.narrow(int(1), int(2) as usize, int(3) as usize),
        "expand" => t.expand(&usizes(&spec[1])),
        "unsqueeze" => t.unsqueeze(int(1)),
        other => panic!("unknown view {other}"),
    }
}

/// Runs `op` with `args` on the (viewed) inputs `x`, through the public API.
fn apply(op: &str, args: &Value, x: &[Tensor], device: &Device) -> Result<Tensor> {
    let axes = || isizes(&args["axes"]);
    let keepdim = || bool_arg(args, "keepdim");
    let axis = || int_arg(args, "axis") as isize;
    match op {
        // creation
        "zeros" => Tensor::zeros(&usizes(&args["shape"]), device),
        "ones" => Tensor::ones(&usizes(&args["shape"]), device),
        "full" => Tensor::full(
            &usizes(&args["shape"]),
            f64_arg(args, "value"),
            DType::F32,
            device,
        ),
        "arange" => Tensor::arange(
            f64_arg(args, "start"),
            f64_arg(args, "end"),
            f64_arg(args, "step"),
            dtype_arg(args),
            device,
        ),
        // views and joining
        "reshape" => x[0].reshape(&isizes(&args["shape"])),
        "transpose" => x[0].transpose(int_arg(args, "a") as isize, int_arg(args, "b") as isize),
        "permute" => x[0].permute(&isizes(&args["dims"])),
        "narrow" => x[0].narrow(
            axis(),
            int_arg(args, "start") as usize,
            int_arg(args, "len") as usize,
        ),
        "expand" => x[0].expand(&usizes(&args["shape"])),
        "unsqueeze" => x[0].unsqueeze(axis()),
        "squeeze" => x[0].squeeze(axis()),
        "contiguous" => x[0].contiguous(),
        "flatten" => x[0].flatten(int_arg(args, "start") as usize),
        "cat" => Tensor::cat(&x.iter().collect::<Vec<_>>(), axis()),
        // binary
        "add" => x[0].add(&x[1]),
        "sub" => x[0].sub(&x[1]),
        "mul" => x[0].mul(&x[1]),
        "div" => x[0].div(&x[1]),
        "pow" => x[0].pow(&x[1]),
        "maximum" => x[0].maximum(&x[1]),
        "minimum" => x[0].minimum(&x[1]),
        "binary_scalar" => {
            let s = f32_arg(args, "scalar");
            if bool_arg(args, "scalar_on_left") {
                x[0].binary_scalar(binary_op(str_arg(args, "fn")), s, true)
            } else {
                match str_arg(args, "fn") {
                    "add" => x[0].add_scalar(s),
                    "sub" => x[0].sub_scalar(s),
                    "mul" => x[0].mul_scalar(s),
                    "div" => x[0].div_scalar(s),
                    "pow" => x[0].pow_scalar(s),
                    "maximum" => x[0].maximum_scalar(s),
                    "minimum" => x[0].minimum_scalar(s),
                    other => panic!("unknown scalar op {other}"),
                }
            }
        }
        // comparison and select
        "compare" => match str_arg(args, "fn") {
            "eq" => x[0].eq(&x[1]),
            "ne" => x[0].ne(&x[1]),
            "lt" => x[0].lt(&x[1]),
            "le" => x[0].le(&x[1]),
            "gt" => x[0].gt(&x[1]),
            "ge" => x[0].ge(&x[1]),
            other => panic!("unknown comparison {other}"),
        },
        "compare_scalar" => {
            let s = f32_arg(args, "scalar");
            match str_arg(args, "fn") {
                "eq" => x[0].eq_scalar(s),
                "ne" => x[0].ne_scalar(s),
                "lt" => x[0].lt_scalar(s),
                "le" => x[0].le_scalar(s),
                "gt" => x[0].gt_scalar(s),
                "ge" => x[0].ge_scalar(s),
                other => panic!("unknown comparison {other}"),
            }
        }
        "where" => Tensor::where_cond(&x[0], &x[1], &x[2]),
        // unary
        "leaky_relu" => x[0].leaky_relu(f32_arg(args, "slope")),
        "clamp" => x[0].clamp(opt_f32_arg(args, "min"), opt_f32_arg(args, "max")),
        "softplus" => x[0].softplus(f32_arg(args, "beta"), f32_arg(args, "threshold")),
        "elu" => x[0].elu(f32_arg(args, "alpha")),
        "hardtanh" => x[0].hardtanh(f32_arg(args, "min"), f32_arg(args, "max")),
        "clamp_tensor" => {
            let min = bool_arg(args, "min").then(|| &x[1]);
            let max = bool_arg(args, "max").then(|| &x[x.len() - 1]);
            x[0].clamp_tensor(min, max)
        }
        "cast" => x[0].cast(dtype_arg(args)),
        // reductions
        "sum" => x[0].sum(&axes(), keepdim()),
        "mean" => x[0].mean(&axes(), keepdim()),
        "max" => x[0].max(&axes(), keepdim()),
        "min" => x[0].min(&axes(), keepdim()),
        "var" => x[0].var(&axes(), int_arg(args, "correction") as usize, keepdim()),
        "argmax" => x[0].argmax(axis(), keepdim()),
        "argmin" => x[0].argmin(axis(), keepdim()),
        "logsumexp" => x[0].logsumexp(&axes(), keepdim()),
        "prod" => x[0].prod(&axes(), keepdim()),
        "std" => x[0].std(&axes(), int_arg(args, "correction") as usize, keepdim()),
        "norm" => {
            let p: f32 = str_arg(args, "p")
                .parse()
                .unwrap_or_else(|e| panic!("norm p {args}: {e}"));
            x[0].norm(p, &axes(), keepdim())
        }
        "max_dim" | "min_dim" => {
            let dim = int_arg(args, "dim") as isize;
            let (values, indices) = if op == "max_dim" {
                x[0].max_dim(dim, keepdim())?
            } else {
                x[0].min_dim(dim, keepdim())?
            };
            match str_arg(args, "part") {
                "values" => Ok(values),
                "indices" => Ok(indices),
                other => panic!("unknown part {other}"),
            }
        }
        "argmax_all" => x[0].argmax_all(),
        "argmin_all" => x[0].argmin_all(),
        "softmax" => x[0].softmax(axis()),
        "log_softmax" => x[0].log_softmax(axis()),
        // matmul
        "matmul" => x[0].matmul(&x[1]),
        "matmul_t" => x[0].matmul_t(&x[1], bool_arg(args, "trans_a"), bool_arg(args, "trans_b")),
        // F.linear(x, weight, bias?), as a port writes it.
        "linear" => wgrad::nn::linear(&x[0], &x[1], x.get(2)),
        // indexing
        "index_select" => x[0].index_select(axis(), &x[1]),
        "gather" => x[0].gather(axis(), &x[1]),
        "one_hot" => x[0].one_hot(int_arg(args, "num_classes") as usize, DType::F32),
        // losses
        "cross_entropy" => cross_entropy(
            &x[0],
            &x[1],
            CrossEntropyOptions {
                reduction: reduction_arg(args),
                label_smoothing: f32_arg(args, "label_smoothing"),
                ignore_index: int_arg(args, "ignore_index") as i32,
            },
        ),
        "nll_loss" => nll_loss_with(
            &x[0],
            &x[1],
            reduction_arg(args),
            int_arg(args, "ignore_index") as i32,
        ),
        "mse_loss" => mse_loss(&x[0], &x[1], reduction_arg(args)),
        "l1_loss" => l1_loss(&x[0], &x[1], reduction_arg(args)),
        "smooth_l1_loss" => {
            smooth_l1_loss(&x[0], &x[1], f32_arg(args, "beta"), reduction_arg(args))
        }
        "bce_with_logits" => binary_cross_entropy_with_logits(&x[0], &x[1], reduction_arg(args)),
        // Parameterless unary ops replay through the generic entry point, so
        // a new `UnaryOp` needs only its fixture case, not a line here
        // (parameterised ones have their line above).
        other => match unary_op(other) {
            Some(op) => x[0].unary(op),
            None => match crate::fixtures_cnn::apply(other, args, x)
                .or_else(|| crate::fixtures_structure::apply(other, args, x))
                .or_else(|| crate::fixtures_attention::apply(other, args, x))
                .or_else(|| crate::int_ops::apply(other, args, x))
            {
                Some(result) => result,
                None => panic!("no replay for op {other}"),
            },
        },
    }
}

/// Replays one case on `device`; `Err` describes every disagreement.
fn run_case(fx: &Fixture, case: &Value, device: &Device) -> std::result::Result<(), String> {
    let name = case["name"].as_str().expect("case name");
    let op = case["op"].as_str().expect("case op");
    let args = &case["args"];
    let kinds: Vec<&str> = array(case, "inputs")
        .iter()
        .map(|k| k.as_str().expect("input kind"))
        .collect();
    let grads: Vec<bool> = array(case, "grad")
        .iter()
        .map(|g| g.as_bool().expect("grad flag"))
        .collect();
    let views = array(case, "views");
    let err = |e: wgrad::Error| format!("{name} ({op}): wgrad error: {e}");

    let mut leaves = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let key = format!("{name}.in{i}");
        let leaf = match *kind {
            "f32" => fx
                .tensor_f32(&key, device)
                .with_requires_grad(grads[i])
                .map_err(err)?,
            "f16" | "bf16" => fx
                .tensor_half(&key, device)
                .with_requires_grad(grads[i])
                .map_err(err)?,
            "i32" => fx.tensor_i32(&key, device),
            "u32" => {
                let t = fx.i32(&key);
                let mask: Vec<u32> = t.data.iter().map(|&v| v as u32).collect();
                Tensor::from_vec(mask, &t.shape, device).map_err(err)?
            }
            other => panic!("{name}: unknown input kind {other}"),
        };
        leaves.push(leaf);
    }
    let mut viewed = Vec::new();
    for (leaf, specs) in leaves.iter().zip(views) {
        let mut t = leaf.clone();
        for spec in specs.as_array().expect("view list") {
            t = apply_view(&t, spec).map_err(err)?;
        }
        viewed.push(t);
    }
    let out = apply(op, args, &viewed, device).map_err(err)?;

    let tol = if kinds.contains(&"bf16") {
        BF16_TOL
    } else if kinds.contains(&"f16") {
        F16_TOL
    } else if REDUCING_OPS.contains(&op) {
        REDUCTION_TOL
    } else {
        ELEMENTWISE_TOL
    };
    let out_key = format!("{name}.out");
    let mut failures = Vec::new();
    let want_dtype = case["out_dtype"].as_str().expect("out_dtype");
    match want_dtype {
        "f32" => {
            let want = fx.f32(&out_key);
            if out.shape() != want.shape {
                return Err(format!(
                    "{name} ({op}): output shape {:?}, PyTorch {:?}",
                    out.shape(),
                    want.shape
                ));
            }
            let got = out.to_vec_f32().map_err(err)?;
            if let Err(e) = check_close(&format!("{name} ({op}) output"), &got, &want.data, tol) {
                failures.push(e);
            }
        }
        "f16" | "bf16" => {
            let want = fx.tensor_half(&out_key, &Device::Cpu);
            let dtype = want.dtype();
            if out.dtype() != dtype || out.shape() != want.shape() {
                return Err(format!(
                    "{name} ({op}): output {} {:?}, PyTorch {dtype} {:?}",
                    out.dtype(),
                    out.shape(),
                    want.shape()
                ));
            }
            let got = out.to_vec_f32().map_err(err)?;
            let want = want.to_vec_f32().map_err(err)?;
            if let Err(e) = check_close(&format!("{name} ({op}) output"), &got, &want, tol) {
                failures.push(e);
            }
        }
        "i32" | "u32" => {
            let want = fx.i32(&out_key);
            let expected_dtype = if want_dtype == "i32" {
                DType::I32
            } else {
                DType::U32
            };
            if out.dtype() != expected_dtype || out.shape() != want.shape {
                return Err(format!(
                    "{name} ({op}): output {:?} {:?}, PyTorch {want_dtype} {:?}",
                    out.dtype(),
                    out.shape(),
                    want.shape
                ));
            }
            let got: Vec<i32> = if expected_dtype == DType::I32 {
                out.to_vec::<i32>().map_err(err)?
            } else {
                out.to_vec::<u32>()
                    .map_err(err)?
                    .into_iter()
                    .map(|v| v as i32)
                    .collect()
            };
            if got != want.data {
                failures.push(format!(
                    "{name} ({op}) output: wgrad {got:?}, PyTorch {:?}",
                    want.data
                ));
            }
        }
        other => panic!("{name}: unknown out_dtype {other}"),
    }

    if grads.iter().any(|&g| g) {
        let upstream = if want_dtype == "f32" {
            fx.tensor_f32(&format!("{name}.upstream"), device)
        } else {
            fx.tensor_half(&format!("{name}.upstream"), device)
        };
        out.backward_with(&upstream).map_err(err)?;
        for (i, leaf) in leaves.iter().enumerate() {
            if !grads[i] {
                continue;
            }
            let key = format!("{name}.grad{i}");
            let want = if kinds[i] == "f32" {
                fx.f32(&key)
            } else {
                let t = fx.tensor_half(&key, &Device::Cpu);
                if let Some(g) = leaf.grad().filter(|g| g.dtype() != t.dtype()) {
                    failures.push(format!(
                        "{name} ({op}): grad{i} is {}, PyTorch {}",
                        g.dtype(),
                        t.dtype()
                    ));
                }
                crate::common::HostTensor {
                    data: t.to_vec_f32().map_err(err)?,
                    shape: t.shape().to_vec(),
                }
            };
            let Some(grad) = leaf.grad() else {
                failures.push(format!("{name} ({op}): input {i} got no gradient"));
                continue;
            };
            if grad.shape() != want.shape {
                failures.push(format!(
                    "{name} ({op}): grad{i} shape {:?}, PyTorch {:?}",
                    grad.shape(),
                    want.shape
                ));
                continue;
            }
            let got = grad.to_vec_f32().map_err(err)?;
            if let Err(e) = check_close(&format!("{name} ({op}) grad{i}"), &got, &want.data, tol) {
                failures.push(e);
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Cases where wgrad knowingly differs from the PyTorch that wrote the
/// fixtures: (case, the one result that differs, why). Each must still
/// differ there and only there (the test fails once it agrees, so the
/// entry gets removed); everything else must agree.
const KNOWN_DISAGREEMENTS: &[(&str, &str, &str)] = &[];

/// Replays every case on `device` and reports all disagreements at once.
fn run_all(device: &Device, what: &str) {
    run_file("ops.safetensors", 100, device, what);
}

/// Replays every case of the op-case fixture `file` (at least `min_cases`).
pub(crate) fn run_file(file: &str, min_cases: usize, device: &Device, what: &str) {
    let fx = Fixture::load(file);
    let cases = array(&fx.meta, "cases");
    assert!(
        cases.len() > min_cases,
        "{file} has only {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    let mut known = 0;
    for case in cases {
        let name = case["name"].as_str().expect("case name");
        let result = run_case(&fx, case, device);
        match (KNOWN_DISAGREEMENTS.iter().find(|k| k.0 == name), result) {
            (None, Ok(())) => {}
            (None, Err(e)) => failures.push(e),
            (Some((_, part, why)), Err(e)) => {
                // Only the known result may differ; the message's headline
                // lines start with the case name.
                let headlines: Vec<&str> = e.lines().filter(|l| l.starts_with(name)).collect();
                if headlines.iter().all(|l| l.contains(&format!(" {part}:"))) {
                    known += 1;
                    eprintln!("{what}: known disagreement in case {name} {part}: {why}");
                } else {
                    failures.push(e);
                }
            }
            (Some(_), Ok(())) => failures.push(format!(
                "{name}: listed in KNOWN_DISAGREEMENTS but now agrees with PyTorch; remove it"
            )),
        }
    }
    report(what, cases.len() - known, &failures);
}

#[test]
fn ops_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "ops on the CPU");
}

#[test]
fn ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    run_all(&device, "ops on the GPU");
}

/// The fixture covers the whole op set, and every stored tensor belongs to
/// a described case (so nothing generated is silently left unchecked).
#[test]
fn ops_fixture_covers_the_op_set() {
    let fx = Fixture::load("ops.safetensors");
    let cases = array(&fx.meta, "cases");
    let ops: Vec<&str> = cases
        .iter()
        .map(|c| c["op"].as_str().expect("op"))
        .collect();
    let op_set: Vec<&str> = OP_SET
        .iter()
        .copied()
        .chain(UnaryOp::ALL.iter().map(|op| op.name()))
        .collect();
    let missing: Vec<&&str> = op_set.iter().filter(|op| !ops.contains(op)).collect();
    assert!(
        missing.is_empty(),
        "ops without a PyTorch case: {missing:?}"
    );
    let unknown: Vec<&&str> = ops.iter().filter(|op| !op_set.contains(op)).collect();
    assert!(
        unknown.is_empty(),
        "cases of ops outside the op set: {unknown:?}"
    );
    let names: Vec<&str> = cases
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    for tensor in fx.names() {
        let case = tensor.rsplit_once('.').map_or("", |(c, _)| c);
        assert!(names.contains(&case), "tensor {tensor} belongs to no case");
    }
    // Differentiable cases carry an upstream gradient and one gradient per
    // differentiable input.
    for case in cases {
        let name = case["name"].as_str().expect("name");
        for (i, g) in array(case, "grad").iter().enumerate() {
            if g.as_bool() == Some(true) {
                assert!(fx.has(&format!("{name}.upstream")), "{name}: no upstream");
                assert!(fx.has(&format!("{name}.grad{i}")), "{name}: no grad{i}");
            }
        }
    }
}
