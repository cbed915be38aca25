//! Whole models against PyTorch: each model of
//! `tests/fixtures/models.safetensors` is built from wgrad layers, its
//! parameters are set from the PyTorch `state_dict` through
//! `named_parameters` (so the names must match PyTorch's too), and the
//! output, the loss and every parameter gradient are compared on the CPU
//! and on the GPU, within 1e-4 (max of `|wgrad - torch| / max(1, |torch|)`).

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy, mse_loss};
use wgrad::nn::{
    Embedding, GELU, LayerNorm, LeakyReLU, Linear, Module, ReLU, Reduction, Sequential, SiLU,
    Sigmoid, Tanh,
};
use wgrad::{Device, Tensor};

/// Tolerance for outputs, losses and gradients of whole models.
const MODEL_TOL: f32 = 1e-4;

/// The wgrad module for a PyTorch activation name.
fn activation(name: &str, model: &Value) -> Box<dyn Module> {
    match name {
        "relu" => Box::new(ReLU::new()),
        "gelu" => Box::new(GELU::new()),
        "silu" => Box::new(SiLU::new()),
        "tanh" => Box::new(Tanh::new()),
        "sigmoid" => Box::new(Sigmoid::new()),
        "leaky_relu" => Box::new(LeakyReLU::new(
            model["slope"].as_f64().expect("leaky_relu slope") as f32,
        )),
        other => panic!("unknown activation {other}"),
    }
}

fn sizes(model: &Value) -> Vec<usize> {
    array(model, "sizes")
        .iter()
        .map(|v| v.as_u64().expect("size") as usize)
        .collect()
}

/// The wgrad equivalent of the PyTorch `nn.Sequential` described by `model`
/// (freshly initialised; the fixture's parameters are set afterwards).
fn build(model: &Value, device: &Device) -> Sequential {
    let linear = |i: usize, o: usize| Linear::new(i, o, true, device).expect("Linear::new");
    match model["kind"].as_str().expect("kind") {
        "mlp" => {
            let s = sizes(model);
            Sequential::new()
                .add(linear(s[0], s[1]))
                .add(activation(model["act"].as_str().expect("act"), model))
                .add(linear(s[1], s[2]))
        }
        "mlp_deep" => {
            let s = sizes(model);
            let acts = array(model, "acts");
            let mut seq = Sequential::new();
            for (i, pair) in s.windows(2).enumerate() {
                seq.push(linear(pair[0], pair[1]));
                if let Some(act) = acts.get(i) {
                    seq.push(activation(act.as_str().expect("act"), model));
                }
            }
            seq
        }
        "embedding_layernorm_linear" => {
            let n = |k: &str| model[k].as_u64().expect(k) as usize;
            let eps = model["eps"].as_f64().expect("eps") as f32;
            Sequential::new()
                .add(Embedding::new(n("vocab"), n("dim"), device).expect("Embedding::new"))
                .add(LayerNorm::new(&[n("dim")], eps, true, device).expect("LayerNorm::new"))
                .add(linear(n("dim"), n("classes")))
        }
        other => panic!("unknown model kind {other}"),
    }
}

/// Builds, loads, runs and differentiates one model; `Err` lists every
/// disagreement with PyTorch.
fn check_model(fx: &Fixture, model: &Value, device: &Device) -> Result<(), String> {
    let prefix = model["name"].as_str().expect("model name");
    let net = build(model, device);

    // Parameter names and order must be PyTorch's (state_dict keys).
    let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    let torch_names: Vec<String> = array(model, "params")
        .iter()
        .map(|v| v.as_str().expect("param name").to_string())
        .collect();
    if names != torch_names {
        return Err(format!(
            "{prefix}: wgrad parameters {names:?}, PyTorch {torch_names:?}"
        ));
    }
    for (name, param) in net.named_parameters() {
        let value = fx.tensor_f32(&format!("{prefix}.{name}"), device);
        param
            .set_storage(value.storage())
            .map_err(|e| format!("{prefix}: setting {name}: {e}"))?;
    }

    let err = |e: wgrad::Error| format!("{prefix}: wgrad error: {e}");
    let x = fx.tensor(&format!("{prefix}.input"), device);
    let target = fx.tensor(&format!("{prefix}.target"), device);
    let out = net.forward(&x).map_err(err)?;
    let loss = match model["loss"].as_str().expect("loss") {
        "cross_entropy" => cross_entropy(&out, &target, CrossEntropyOptions::default()),
        "cross_entropy_flat" => {
            let classes = *out.shape().last().expect("class dim") as isize;
            let logits = out.reshape(&[-1, classes]).map_err(err)?;
            let labels = target.reshape(&[-1]).map_err(err)?;
            cross_entropy(&logits, &labels, CrossEntropyOptions::default())
        }
        "mse" => mse_loss(&out, &target, Reduction::Mean),
        other => panic!("unknown loss {other}"),
    }
    .map_err(err)?;
    loss.backward().map_err(err)?;

    let compare = |what: &str, got: &Tensor, key: &str| -> Result<(), String> {
        let want = fx.f32(key);
        if got.shape() != want.shape {
            return Err(format!(
                "{prefix} {what}: shape {:?}, PyTorch {:?}",
                got.shape(),
                want.shape
            ));
        }
        let got = got.to_vec_f32().map_err(err)?;
        check_close(&format!("{prefix} {what}"), &got, &want.data, MODEL_TOL)
    };
    let mut results = vec![
        compare("output", &out, &format!("{prefix}.output")),
        compare("loss", &loss, &format!("{prefix}.loss")),
    ];
    for (name, param) in net.named_parameters() {
        results.push(match param.grad() {
            Some(g) => compare(
                &format!("grad of {name}"),
                &g,
                &format!("{prefix}.grad.{name}"),
            ),
            None => Err(format!("{prefix}: {name} got no gradient")),
        });
    }
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn run_all(device: &Device, what: &str) {
    let fx = Fixture::load("models.safetensors");
    let models = array(&fx.meta, "models");
    assert!(
        models.len() >= 8,
        "models fixture has {} models",
        models.len()
    );
    let failures: Vec<String> = models
        .iter()
        .filter_map(|m| check_model(&fx, m, device).err())
        .collect();
    report(what, models.len(), &failures);
}

#[test]
fn models_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "models on the CPU");
}

#[test]
fn models_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    run_all(&device, "models on the GPU");
}

/// Every activation of the brief has its MLP, and the embedding model is there.
#[test]
fn models_fixture_covers_every_activation() {
    let fx = Fixture::load("models.safetensors");
    let models = array(&fx.meta, "models");
    let names: Vec<&str> = models
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    for act in ["relu", "gelu", "silu", "tanh", "sigmoid", "leaky_relu"] {
        assert!(
            names.contains(&format!("mlp_{act}").as_str()),
            "no mlp_{act}"
        );
    }
    assert!(names.contains(&"emb_ln"), "no embedding model");
}
