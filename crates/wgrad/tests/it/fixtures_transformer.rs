//! MultiheadAttention and the Transformer layers against PyTorch: each
//! model of `tests/fixtures/transformer.safetensors` (written by
//! `tests/fixtures/make_transformer_fixtures.py`) is built with the same
//! constructor arguments, given PyTorch's parameters by their state_dict
//! names, run on the same inputs and masks (eval mode) on the CPU and the
//! GPU; the output, the returned attention weights and every parameter's
//! gradient under the stored upstream gradient must match.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::nn::{
    Activation, AttentionOptions, LayerMasks, Module, MultiheadAttention,
    MultiheadAttentionOptions, TransformerDecoderLayer, TransformerEncoderLayer,
    TransformerOptions,
};
use wgrad::{DType, Device, Tensor};

const TOL: f32 = 1e-4;

/// What one model is and how it is called.
enum Model {
    Mha(MultiheadAttention),
    Encoder(TransformerEncoderLayer),
    Decoder(TransformerDecoderLayer),
}

impl Model {
    fn module(&mut self) -> &mut dyn Module {
        match self {
            Model::Mha(m) => m,
            Model::Encoder(m) => m,
            Model::Decoder(m) => m,
        }
    }
}

fn flag(meta: &Value, key: &str) -> bool {
    meta[key].as_bool().unwrap_or(false)
}

fn size(meta: &Value, key: &str) -> usize {
    meta[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: {meta}")) as usize
}

fn build(meta: &Value, d: &Device) -> Model {
    match meta["kind"].as_str().expect("kind") {
        "mha" => {
            let options = MultiheadAttentionOptions {
                bias: meta["bias"].as_bool().unwrap_or(true),
                add_bias_kv: flag(meta, "add_bias_kv"),
                add_zero_attn: flag(meta, "add_zero_attn"),
                kdim: meta["kdim"].as_u64().map(|v| v as usize),
                vdim: meta["vdim"].as_u64().map(|v| v as usize),
                batch_first: flag(meta, "batch_first"),
                ..MultiheadAttentionOptions::default()
            };
            Model::Mha(
                MultiheadAttention::with_options(
                    size(meta, "embed_dim"),
                    size(meta, "num_heads"),
                    &options,
                    d,
                )
                .unwrap(),
            )
        }
        kind => {
            let mut o = TransformerOptions::new(size(meta, "d_model"), size(meta, "nhead"));
            o.dim_feedforward = size(meta, "dim_feedforward");
            o.dropout = 0.0;
            o.batch_first = flag(meta, "batch_first");
            o.norm_first = flag(meta, "norm_first");
            o.activation = match meta["activation"].as_str() {
                Some("gelu") => Activation::Gelu,
                _ => Activation::Relu,
            };
            if kind == "encoder" {
                Model::Encoder(TransformerEncoderLayer::new(&o, d).unwrap())
            } else {
                Model::Decoder(TransformerDecoderLayer::new(&o, d).unwrap())
            }
        }
    }
}

fn run_model(fx: &Fixture, meta: &Value, d: &Device) -> Result<(), String> {
    let name = meta["name"].as_str().expect("name");
    let mut model = build(meta, d);
    model.module().eval();
    for (key, p) in model.module().named_parameters() {
        let want = fx.tensor_f32(&format!("{name}.param.{key}"), d);
        p.set_storage(want.storage())
            .map_err(|e| format!("{name}: parameter {key}: {e}"))?;
    }
    let input = |arg: &str| -> Option<Tensor> {
        let key = format!("{name}.in.{arg}");
        fx.has(&key).then(|| {
            let t = fx.tensor(&key, d);
            // Boolean masks are stored as int32 0/1.
            if t.dtype() == DType::I32 {
                t.ne_scalar(0.0).unwrap()
            } else {
                t
            }
        })
    };
    let (out, weights) = match &model {
        Model::Mha(m) => {
            let q = input("query").expect("query");
            let (k, v) = if flag(meta, "self") {
                (q.clone(), q.clone())
            } else {
                (input("key").expect("key"), input("value").expect("value"))
            };
            let (pad, mask) = (input("key_padding_mask"), input("attn_mask"));
            let options = AttentionOptions {
                key_padding_mask: pad.as_ref(),
                need_weights: flag(meta, "need_weights"),
                attn_mask: mask.as_ref(),
                average_attn_weights: flag(meta, "average_attn_weights"),
                is_causal: false,
            };
            m.forward_attention(&q, &k, &v, &options)
                .map_err(|e| format!("{name}: {e}"))?
        }
        Model::Encoder(m) => {
            let (mask, pad) = (input("src_mask"), input("src_key_padding_mask"));
            let masks = LayerMasks {
                mask: mask.as_ref(),
                key_padding_mask: pad.as_ref(),
                is_causal: mask.is_some(),
            };
            let src = input("src").expect("src");
            (
                m.forward_masked(&src, &masks)
                    .map_err(|e| format!("{name}: {e}"))?,
                None,
            )
        }
        Model::Decoder(m) => {
            let (tgt_mask, mem_pad) = (input("tgt_mask"), input("memory_key_padding_mask"));
            let tgt_masks = LayerMasks {
                mask: tgt_mask.as_ref(),
                ..LayerMasks::default()
            };
            let mem_masks = LayerMasks {
                key_padding_mask: mem_pad.as_ref(),
                ..LayerMasks::default()
            };
            let (tgt, memory) = (input("tgt").expect("tgt"), input("memory").expect("memory"));
            (
                m.forward_masked(&tgt, &memory, &tgt_masks, &mem_masks)
                    .map_err(|e| format!("{name}: {e}"))?,
                None,
            )
        }
    };
    let vec = |t: &Tensor| t.to_vec::<f32>().unwrap();
    let mut errors = Vec::new();
    let want_out = fx.f32(&format!("{name}.out"));
    if out.shape() != want_out.shape.as_slice() {
        return Err(format!(
            "{name}: output shape {:?}, PyTorch {:?}",
            out.shape(),
            want_out.shape
        ));
    }
    errors.extend(check_close(&format!("{name} output"), &vec(&out), &want_out.data, TOL).err());
    if let Some(w) = &weights {
        let want = fx.f32(&format!("{name}.weights"));
        errors.extend(check_close(&format!("{name} weights"), &vec(w), &want.data, TOL).err());
    }
    let upstream = fx.tensor_f32(&format!("{name}.upstream"), d);
    out.mul(&upstream)
        .and_then(|t| t.sum_all())
        .and_then(|l| l.backward())
        .map_err(|e| format!("{name}: backward: {e}"))?;
    for (key, p) in model.module().named_parameters() {
        let want = fx.f32(&format!("{name}.grad.{key}"));
        let got = p
            .grad()
            .map(|g| vec(&g))
            .unwrap_or_else(|| vec![0.0; want.data.len()]);
        errors.extend(check_close(&format!("{name} grad {key}"), &got, &want.data, TOL).err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn run_all(d: &Device, what: &str) {
    let fx = Fixture::load("transformer.safetensors");
    let models = array(&fx.meta, "models");
    let failures: Vec<String> = models
        .iter()
        .filter_map(|m| run_model(&fx, m, d).err())
        .collect();
    report(what, models.len(), &failures);
}

#[test]
fn transformer_modules_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "transformer modules on the CPU");
}

#[test]
fn transformer_modules_match_pytorch_on_gpu() {
    let Some(d) = gpu() else { return };
    run_all(&d, "transformer modules on the GPU");
}

#[test]
fn transformer_state_dict_keys_are_pytorchs() {
    let fx = Fixture::load("transformer.safetensors");
    for meta in array(&fx.meta, "models") {
        let name = meta["name"].as_str().expect("name");
        let mut model = build(meta, &Device::Cpu);
        let mut ours: Vec<String> = model
            .module()
            .named_parameters()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let mut theirs: Vec<String> = fx
            .names()
            .into_iter()
            .filter_map(|n| {
                n.strip_prefix(&format!("{name}.param."))
                    .map(str::to_string)
            })
            .collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "{name}");
    }
}

/// The parameters come in PyTorch's order, which optimizer state follows:
/// `[n for n, _ in nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=5,
/// vdim=3).named_parameters()]` and the same without kdim/vdim (PyTorch
/// 2.15). Bad kdim/vdim inputs name the dim.
#[test]
fn multihead_attention_parameters_come_in_pytorchs_order() {
    let d = Device::Cpu;
    let names = |o: MultiheadAttentionOptions| -> Vec<String> {
        MultiheadAttention::with_options(8, 2, &o, &d)
            .unwrap()
            .named_parameters()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    let kv = MultiheadAttentionOptions {
        add_bias_kv: true,
        ..MultiheadAttentionOptions::default()
    };
    assert_eq!(
        names(MultiheadAttentionOptions {
            kdim: Some(5),
            vdim: Some(3),
            ..kv
        }),
        [
            "q_proj_weight",
            "k_proj_weight",
            "v_proj_weight",
            "in_proj_bias",
            "bias_k",
            "bias_v",
            "out_proj.weight",
            "out_proj.bias"
        ]
    );
    assert_eq!(
        names(kv),
        [
            "in_proj_weight",
            "in_proj_bias",
            "bias_k",
            "bias_v",
            "out_proj.weight",
            "out_proj.bias"
        ]
    );
    let mha = MultiheadAttention::with_options(
        8,
        2,
        &MultiheadAttentionOptions {
            kdim: Some(5),
            ..MultiheadAttentionOptions::default()
        },
        &d,
    )
    .unwrap();
    let q = Tensor::zeros(&[3, 1, 8], &d).unwrap();
    let e = mha
        .forward_attention(&q, &q, &q, &AttentionOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("key") && e.contains("kdim 5"), "{e}");
}

/// `bias=False` reaches the layers' norms too, as in PyTorch: their keys
/// (from `nn.TransformerEncoderLayer(8, 2, bias=False)` and the decoder
/// layer in PyTorch 2.15) have no shift anywhere.
#[test]
fn layers_without_bias_have_pytorchs_keys() {
    let o = TransformerOptions {
        bias: false,
        ..TransformerOptions::new(8, 2)
    };
    let keys = |m: &dyn Module| {
        let mut k: Vec<String> = m.named_parameters().into_iter().map(|(k, _)| k).collect();
        k.sort();
        k
    };
    let enc = TransformerEncoderLayer::new(&o, &Device::Cpu).unwrap();
    assert_eq!(
        keys(&enc),
        [
            "linear1.weight",
            "linear2.weight",
            "norm1.weight",
            "norm2.weight",
            "self_attn.in_proj_weight",
            "self_attn.out_proj.weight",
        ]
    );
    let dec = TransformerDecoderLayer::new(&o, &Device::Cpu).unwrap();
    assert_eq!(
        keys(&dec),
        [
            "linear1.weight",
            "linear2.weight",
            "multihead_attn.in_proj_weight",
            "multihead_attn.out_proj.weight",
            "norm1.weight",
            "norm2.weight",
            "norm3.weight",
            "self_attn.in_proj_weight",
            "self_attn.out_proj.weight",
        ]
    );
    // They still run.
    let x = Tensor::ones(&[3, 1, 8], &Device::Cpu).unwrap();
    let y = enc.forward_masked(&x, &LayerMasks::default()).unwrap();
    assert_eq!(y.shape().to_vec(), vec![3, 1, 8]);
}

/// `is_causal` is PyTorch's hint about `attn_mask`: without a mask it is
/// PyTorch's error (also with only a key padding mask); with
/// `generate_square_subsequent_mask` the layer runs as the causal mask says.
#[test]
fn is_causal_needs_an_attn_mask_as_in_pytorch() {
    let d = Device::Cpu;
    let mha = MultiheadAttention::new(8, 2, 0.0, true, false, &d).unwrap();
    let x = Tensor::rand_with(&[3, 1, 8], -1.0, 1.0, 11, &d).unwrap();
    let causal = AttentionOptions {
        is_causal: true,
        ..AttentionOptions::default()
    };
    let e = mha
        .forward_attention(&x, &x, &x, &causal)
        .unwrap_err()
        .to_string();
    assert!(e.contains("is_causal") && e.contains("attn_mask"), "{e}");
    let pad = Tensor::zeros(&[1, 3], &d).unwrap().gt_scalar(0.5).unwrap();
    let padded = AttentionOptions {
        key_padding_mask: Some(&pad),
        ..causal
    };
    assert!(mha.forward_attention(&x, &x, &x, &padded).is_err());
    let mask = wgrad::nn::generate_square_subsequent_mask(3, &d).unwrap();
    assert_eq!(
        mask.to_vec_f32().unwrap(),
        [
            0.0,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            0.0,
            0.0,
            f32::NEG_INFINITY,
            0.0,
            0.0,
            0.0
        ]
    );
    let hinted = AttentionOptions {
        attn_mask: Some(&mask),
        ..causal
    };
    let plain = AttentionOptions {
        attn_mask: Some(&mask),
        ..AttentionOptions::default()
    };
    let (a, _) = mha.forward_attention(&x, &x, &x, &hinted).unwrap();
    let (b, _) = mha.forward_attention(&x, &x, &x, &plain).unwrap();
    assert_eq!(a.to_vec_f32().unwrap(), b.to_vec_f32().unwrap());
}
