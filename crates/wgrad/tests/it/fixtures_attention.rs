//! `scaled_dot_product_attention` against PyTorch: replays every case of
//! `tests/fixtures/attention.safetensors` (written by
//! `tests/fixtures/make_attention_fixtures.py`: masks of both kinds,
//! causal with L < S and L > S, fully masked rows, broadcast batch dims,
//! transposed views, head dims past one tile, large logits) on the CPU and
//! the GPU through `fixtures_ops::run_file`: the output and the q, k and v
//! gradients.

use crate::common::gpu;
use serde_json::Value;
use wgrad::{Device, Result, Tensor};

/// The replay of one attention case, or `None` for an op of another family.
pub(crate) fn apply(op: &str, args: &Value, x: &[Tensor]) -> Option<Result<Tensor>> {
    if op != "scaled_dot_product_attention" {
        return None;
    }
    let causal = args["is_causal"].as_bool().expect("is_causal");
    let scale = args["scale"].as_f64();
    Some(x[0].scaled_dot_product_attention(&x[1], &x[2], x.get(3), 0.0, causal, scale))
}

#[test]
fn attention_matches_pytorch_on_cpu() {
    crate::fixtures_ops::run_file(
        "attention.safetensors",
        10,
        &Device::Cpu,
        "attention on the CPU",
    );
}

#[test]
fn attention_matches_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    crate::fixtures_ops::run_file("attention.safetensors", 10, &device, "attention on the GPU");
}
