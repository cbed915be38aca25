//! TransformerEncoder, TransformerDecoder and Transformer against PyTorch:
//! each model of `tests/fixtures/transformer_stack.safetensors` (written
//! by `tests/fixtures/make_transformer_stack_fixtures.py`) is built with
//! the same settings, must name its parameters exactly as PyTorch's
//! state_dict (same keys, same order), gets PyTorch's values, runs on the
//! same inputs and masks (eval mode) on the CPU and the GPU, and must
//! match the output and every parameter's gradient.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::{
    LayerMasks, LayerNorm, Module, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer, TransformerOptions,
};
use wgrad::{DType, Device, Tensor};

const TOL: f32 = 1e-4;

enum Model {
    Encoder(TransformerEncoder),
    Decoder(TransformerDecoder),
    Transformer(Transformer),
}

impl Model {
    fn module(&mut self) -> &mut dyn Module {
        match self {
            Model::Encoder(m) => m,
            Model::Decoder(m) => m,
            Model::Transformer(m) => m,
        }
    }
}

fn size(meta: &Value, key: &str) -> usize {
    meta[key].as_u64().unwrap_or_else(|| panic!("{key}")) as usize
}

fn build(meta: &Value, d: &Device) -> Model {
    let mut o = TransformerOptions::new(size(meta, "d_model"), size(meta, "nhead"));
    o.dim_feedforward = size(meta, "dim_feedforward");
    o.dropout = 0.0;
    o.batch_first = meta["batch_first"].as_bool().unwrap_or(false);
    o.norm_first = meta["norm_first"].as_bool().unwrap_or(false);
    let norm = || {
        meta["norm"]
            .as_bool()
            .unwrap_or(false)
            .then(|| LayerNorm::new(&[o.d_model], 1e-5, true, d).unwrap())
    };
    match meta["kind"].as_str().expect("kind") {
        "encoder" => Model::Encoder(
            TransformerEncoder::new(
                || TransformerEncoderLayer::new(&o, d),
                size(meta, "num_layers"),
                norm(),
            )
            .unwrap(),
        ),
        "decoder" => Model::Decoder(
            TransformerDecoder::new(
                || TransformerDecoderLayer::new(&o, d),
                size(meta, "num_layers"),
                norm(),
            )
            .unwrap(),
        ),
        _ => Model::Transformer(
            Transformer::new(
                &o,
                size(meta, "num_encoder_layers"),
                size(meta, "num_decoder_layers"),
                d,
            )
            .unwrap(),
        ),
    }
}

fn run_model(fx: &Fixture, meta: &Value, d: &Device) -> Result<(), String> {
    let name = meta["name"].as_str().expect("name");
    let mut model = build(meta, d);
    model.module().eval();
    let ours: Vec<String> = model
        .module()
        .named_state()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let theirs: Vec<String> = meta["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    if ours != theirs {
        return Err(format!(
            "{name}: state_dict keys\n  ours:   {ours:?}\n  theirs: {theirs:?}"
        ));
    }
    for (key, p) in model.module().named_parameters() {
        let want = fx.tensor_f32(&format!("{name}.param.{key}"), d);
        p.set_storage(want.storage())
            .map_err(|e| format!("{name}: {key}: {e}"))?;
    }
    let input = |arg: &str| -> Option<Tensor> {
        let key = format!("{name}.in.{arg}");
        fx.has(&key).then(|| {
            let t = fx.tensor(&key, d);
            if t.dtype() == DType::I32 {
                t.ne_scalar(0.0).unwrap()
            } else {
                t
            }
        })
    };
    let fail = |e: wgrad::Error| format!("{name}: {e}");
    let out = match &model {
        Model::Encoder(m) => {
            let pad = input("src_key_padding_mask");
            let masks = LayerMasks {
                key_padding_mask: pad.as_ref(),
                ..LayerMasks::default()
            };
            m.forward_masked(&input("src").unwrap(), &masks)
                .map_err(fail)?
        }
        Model::Decoder(m) => {
            let mask = input("tgt_mask");
            let tgt_masks = LayerMasks {
                mask: mask.as_ref(),
                is_causal: true,
                ..LayerMasks::default()
            };
            m.forward_masked(
                &input("tgt").unwrap(),
                &input("memory").unwrap(),
                &tgt_masks,
                &LayerMasks::default(),
            )
            .map_err(fail)?
        }
        Model::Transformer(m) => {
            let (mask, src_pad, mem_pad) = (
                input("tgt_mask"),
                input("src_key_padding_mask"),
                input("memory_key_padding_mask"),
            );
            let src_masks = LayerMasks {
                key_padding_mask: src_pad.as_ref(),
                ..LayerMasks::default()
            };
            let tgt_masks = LayerMasks {
                mask: mask.as_ref(),
                is_causal: true,
                ..LayerMasks::default()
            };
            let mem_masks = LayerMasks {
                key_padding_mask: mem_pad.as_ref(),
                ..LayerMasks::default()
            };
            m.forward_seq2seq(
                &input("src").unwrap(),
                &input("tgt").unwrap(),
                &src_masks,
                &tgt_masks,
                &mem_masks,
            )
            .map_err(fail)?
        }
    };
    let vec = |t: &Tensor| t.to_vec::<f32>().unwrap();
    let mut errors = Vec::new();
    let want = fx.f32(&format!("{name}.out"));
    errors.extend(check_close(&format!("{name} output"), &vec(&out), &want.data, TOL).err());
    let up = fx.tensor_f32(&format!("{name}.upstream"), d);
    out.mul(&up)
        .and_then(|t| t.sum_all())
        .and_then(|l| l.backward())
        .map_err(fail)?;
    for (key, p) in model.module().named_parameters() {
        let want = fx.f32(&format!("{name}.grad.{key}"));
        let got = p.grad().map(|g| vec(&g)).unwrap_or_default();
        errors.extend(check_close(&format!("{name} grad {key}"), &got, &want.data, TOL).err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn run_all(d: &Device, what: &str) {
    let fx = Fixture::load("transformer_stack.safetensors");
    let models = array(&fx.meta, "models");
    let failures: Vec<String> = models
        .iter()
        .filter_map(|m| run_model(&fx, m, d).err())
        .collect();
    report(what, models.len(), &failures);
}

#[test]
fn transformer_stacks_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "transformer stacks on the CPU");
}

#[test]
fn transformer_stacks_match_pytorch_on_gpu() {
    let Some(d) = gpu() else { return };
    run_all(&d, "transformer stacks on the GPU");
}
