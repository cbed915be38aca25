//! The 16-bit float dtypes against PyTorch: every op case of
//! `ops.safetensors`, the convolution family of `cnn.safetensors`,
//! `structure.safetensors` and `attention.safetensors` replayed with float16
//! and with bfloat16 inputs (`tests/fixtures/half_*_{f16,bf16}.safetensors`,
//! written by `make_half_fixtures.py`: outputs and gradients in their dtype), and an
//! MLP under autocast (`autocast.safetensors`), on the CPU and the GPU;
//! plus the half dtypes' own surface: creation, casts, printing, files.

use crate::common::{Fixture, check_close, gpu};
use crate::fixtures_ops::run_file;
use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad::nn::{Linear, Module, state_dict};
use wgrad::{AutocastGuard, DType, Device, Tensor, autocast};

/// Every 16-bit fixture: (file, at least this many cases).
const FILES: [(&str, usize); 8] = [
    ("half_ops_f16.safetensors", 200),
    ("half_ops_bf16.safetensors", 200),
    ("half_cnn_f16.safetensors", 30),
    ("half_cnn_bf16.safetensors", 30),
    ("half_structure_f16.safetensors", 70),
    ("half_structure_bf16.safetensors", 70),
    ("half_attention_f16.safetensors", 10),
    ("half_attention_bf16.safetensors", 10),
];

fn replay_all(device: &Device, what: &str) {
    for (file, min_cases) in FILES {
        run_file(file, min_cases, device, &format!("{file} on {what}"));
    }
}

#[test]
fn half_ops_match_pytorch_on_cpu() {
    replay_all(&Device::Cpu, "the CPU");
}

#[test]
fn half_ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    replay_all(&device, "the GPU");
}

/// The fixture's two-layer MLP (Linear-GELU-Linear, cross-entropy).
struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

fn mlp(fx: &Fixture, device: &Device) -> Mlp {
    let fc1 = Linear::new(12, 16, true, device).unwrap();
    let fc2 = Linear::new(16, 5, true, device).unwrap();
    for (layer, prefix) in [(&fc1, "fc1"), (&fc2, "fc2")] {
        let entries: Vec<(String, Tensor)> = ["weight", "bias"]
            .iter()
            .map(|k| {
                let t = fx.tensor_f32(&format!("model.{prefix}.{k}"), device);
                (k.to_string(), t)
            })
            .collect();
        state_dict::load_state_dict(layer, &entries).unwrap();
    }
    Mlp { fc1, fc2 }
}

fn autocast_run(device: &Device) {
    let fx = Fixture::load("autocast.safetensors");
    let runs = &fx.meta["runs"];
    let x = fx.tensor_f32("x", device);
    let labels = fx.tensor_i32("labels", device);
    for (label, dtype, tol) in [
        ("f32", None, 1e-5),
        ("f16", Some(DType::F16), 8e-3),
        ("bf16", Some(DType::BF16), 6e-2),
    ] {
        let model = mlp(&fx, device);
        let guard = dtype.map(|d| AutocastGuard::new(d).unwrap());
        let h = model.fc1.forward(&x).unwrap();
        let a = h.gelu().unwrap();
        let logits = model.fc2.forward(&a).unwrap();
        let loss = cross_entropy(&logits, &labels, CrossEntropyOptions::default()).unwrap();
        drop(guard);
        let dtypes = &runs[label]["dtypes"];
        for (what, t) in [
            ("fc1", &h),
            ("gelu", &a),
            ("logits", &logits),
            ("loss", &loss),
        ] {
            assert_eq!(
                t.dtype().name(),
                dtypes[what].as_str().unwrap(),
                "{label}: {what}'s dtype"
            );
        }
        let got = logits.to_vec_f32().unwrap();
        check_close(
            &format!("{label} logits"),
            &got,
            &fx.f32(&format!("{label}.logits")).data,
            tol,
        )
        .unwrap();
        let got = loss.to_vec_f32().unwrap();
        check_close(
            &format!("{label} loss"),
            &got,
            &fx.f32(&format!("{label}.loss")).data,
            tol,
        )
        .unwrap();
        loss.backward().unwrap();
        for (prefix, layer) in [("fc1", &model.fc1), ("fc2", &model.fc2)] {
            for (k, p) in layer.named_parameters() {
                let g = p.grad().expect("a gradient");
                assert_eq!(
                    g.dtype(),
                    DType::F32,
                    "{label}: master weights get F32 gradients"
                );
                let want = fx.f32(&format!("{label}.grad.{prefix}.{k}"));
                check_close(
                    &format!("{label} {prefix}.{k} grad"),
                    &g.to_vec_f32().unwrap(),
                    &want.data,
                    tol,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn autocast_mlp_matches_pytorch_on_cpu() {
    autocast_run(&Device::Cpu);
}

#[test]
fn autocast_mlp_matches_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    autocast_run(&device);
}

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

#[test]
fn half_tensors_round_trip_and_convert_like_pytorch() {
    use half::{bf16, f16};
    for device in devices() {
        let values = [
            0.0f32,
            -0.0,
            1.0,
            65504.0,
            65520.0,
            1e-8,
            6e-8,
            -3.5,
            f32::INFINITY,
        ];
        let x = Tensor::from_vec(values.to_vec(), &[values.len()], &device).unwrap();
        // torch.tensor(values).half(): round to nearest even, overflow to inf.
        let h = x.cast(DType::F16).unwrap();
        let want: Vec<f16> = values.iter().map(|&v| f16::from_f32(v)).collect();
        assert_eq!(h.to_vec::<f16>().unwrap(), want, "{device}");
        let b = x.cast(DType::BF16).unwrap();
        let want: Vec<bf16> = values.iter().map(|&v| bf16::from_f32(v)).collect();
        assert_eq!(b.to_vec::<bf16>().unwrap(), want, "{device}");
        // Odd lengths, 0-d, empty, views.
        let odd = Tensor::from_vec(vec![f16::from_f32(1.5); 5], &[5], &device).unwrap();
        assert_eq!(odd.dtype(), DType::F16);
        assert_eq!(odd.to_vec_f32().unwrap(), [1.5; 5]);
        let zero_d = Tensor::full(&[], 2.25, DType::BF16, &device).unwrap();
        assert_eq!(zero_d.item().unwrap(), 2.25);
        let empty = Tensor::full(&[0, 3], 1.0, DType::F16, &device).unwrap();
        assert_eq!(empty.to_vec::<f16>().unwrap(), []);
        let m = Tensor::arange(0.0, 12.0, 1.0, DType::F32, &device)
            .unwrap()
            .reshape(&[3, 4])
            .unwrap()
            .cast(DType::F16)
            .unwrap();
        let t = m.transpose(0, 1).unwrap().narrow(0, 1, 2).unwrap();
        assert_eq!(
            t.to_vec_f32().unwrap(),
            [1.0, 5.0, 9.0, 2.0, 6.0, 10.0],
            "{device}"
        );
        assert_eq!(t.contiguous().unwrap().dtype(), DType::F16);
        // Printing names the dtype as PyTorch does.
        let p = Tensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(2.5)], &[2], &device)
            .unwrap()
            .to(&Device::Cpu)
            .unwrap();
        assert_eq!(p.to_string(), "tensor([1.0000, 2.5000], dtype=float16)");
    }
}

#[test]
fn half_promotion_follows_pytorch() {
    for device in devices() {
        let h = Tensor::full(&[3], 1.5, DType::F16, &device).unwrap();
        let f = Tensor::full(&[3], 2.0, DType::F32, &device).unwrap();
        let b = Tensor::full(&[3], 2.0, DType::BF16, &device).unwrap();
        let s = Tensor::full(&[], 2.0, DType::F32, &device).unwrap();
        let i = Tensor::full(&[3], 2.0, DType::I32, &device).unwrap();
        assert_eq!(h.add(&f).unwrap().dtype(), DType::F32);
        assert_eq!(
            h.mul(&s).unwrap().dtype(),
            DType::F16,
            "0-d F32 does not promote"
        );
        assert_eq!(h.add(&b).unwrap().dtype(), DType::F32);
        assert_eq!(i.mul(&h).unwrap().dtype(), DType::F16);
        assert_eq!(h.mul_scalar(3.0).unwrap().dtype(), DType::F16);
        assert_eq!(h.lt(&f).unwrap().dtype(), DType::U32);
        assert_eq!(Tensor::cat(&[&h, &f], 0).unwrap().dtype(), DType::F32);
        // f16 overflow is inf, as in PyTorch.
        let big = Tensor::full(&[2], 60000.0, DType::F16, &device).unwrap();
        assert_eq!(
            big.mul_scalar(2.0).unwrap().to_vec_f32().unwrap(),
            [f32::INFINITY; 2]
        );
        // Gradients come back in each leaf's dtype.
        let hl = h.detach().with_requires_grad(true).unwrap();
        let fl = f.detach().with_requires_grad(true).unwrap();
        hl.mul(&fl).unwrap().sum_all().unwrap().backward().unwrap();
        assert_eq!(hl.grad().unwrap().dtype(), DType::F16);
        assert_eq!(fl.grad().unwrap().dtype(), DType::F32);
    }
}

#[test]
fn half_models_train_and_save() {
    for device in devices() {
        let layer = Linear::new(4, 3, true, &device).unwrap();
        let half: Vec<(String, Tensor)> = layer
            .named_parameters()
            .into_iter()
            .map(|(k, p)| (k, p.detach().cast(DType::BF16).unwrap()))
            .collect();
        // A bfloat16 state_dict loads into float32 parameters (copy_ semantics).
        state_dict::load_state_dict(&layer, &half).unwrap();
        assert_eq!(layer.weight.dtype(), DType::F32);
        // A float16 model steps with Adam; the parameters stay float16.
        let w = Tensor::full(&[3], 1.0, DType::F16, &device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let mut opt = wgrad::optim::Adam::new(vec![w.clone()], Default::default()).unwrap();
        use wgrad::optim::Optimizer;
        w.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
        opt.step().unwrap();
        assert_eq!(w.dtype(), DType::F16);
        let got = w.to_vec_f32().unwrap();
        // Adam's first step moves each weight by lr = 1e-3 against the gradient.
        let want = half::f16::from_f32(1.0 - 1e-3).to_f32();
        assert!(
            got.iter().all(|&v| (v - want).abs() <= 1e-3),
            "{device}: {got:?}"
        );
        // Saving and loading a float16 tensor keeps its dtype and bits.
        let dir = std::env::temp_dir().join(format!("wgrad_half_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h.safetensors");
        state_dict::save_file(&[("w".to_string(), w.detach())], &path).unwrap();
        let back = state_dict::load_file(&path, &device).unwrap();
        assert_eq!(back[0].1.dtype(), DType::F16);
        assert_eq!(
            back[0].1.to_vec::<half::f16>().unwrap(),
            w.to_vec::<half::f16>().unwrap()
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn modules_convert_to_half_in_place() {
    for device in devices() {
        let layer = Linear::new(3, 2, true, &device).unwrap();
        let weight = layer.weight.clone();
        let before = weight.to_vec_f32().unwrap();
        let mut opt = wgrad::optim::Sgd::new(layer.parameters(), Default::default()).unwrap();
        layer.half().unwrap();
        assert_eq!(weight.dtype(), DType::F16, "the same tensor, converted");
        let want: Vec<f32> = before
            .iter()
            .map(|&v| half::f16::from_f32(v).to_f32())
            .collect();
        assert_eq!(weight.to_vec_f32().unwrap(), want);
        let x = Tensor::ones(&[4, 3], &device).unwrap().half().unwrap();
        let y = layer.forward(&x).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(weight.grad().unwrap().dtype(), DType::F16);
        use wgrad::optim::Optimizer;
        opt.step().unwrap();
        assert_eq!(weight.dtype(), DType::F16);
        layer.float().unwrap();
        assert_eq!(layer.weight.dtype(), DType::F32);
        assert!(layer.to_dtype(DType::I32).is_err());
        // An integer tensor's data does not change dtype.
        let i = Tensor::full(&[2], 1.0, DType::I32, &device).unwrap();
        let to_f16 = i.storage().cast(DType::F16).unwrap();
        assert!(
            i.set_data(to_f16)
                .unwrap_err()
                .to_string()
                .contains("int32 -> float16")
        );
    }
}

#[test]
fn half_checkpoints_round_trip() {
    use wgrad::nn::checkpoint;
    use wgrad::optim::{Adam, AdamConfig, Optimizer};
    let d = &Device::Cpu;
    let model = Linear::new(3, 2, true, d).unwrap();
    model.half().unwrap();
    let mut opt = Adam::new(model.parameters(), AdamConfig::default()).unwrap();
    let x = Tensor::from_vec(vec![wgrad::f16::from_f32(0.5); 6], &[2, 3], d).unwrap();
    model
        .forward(&x)
        .unwrap()
        .float()
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    opt.step().unwrap();
    let dir = std::env::temp_dir().join(format!("wgrad_half_ckpt_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.safetensors");
    checkpoint::save(&path, &model, &opt, 3).unwrap();
    let back = Linear::new(3, 2, true, d).unwrap();
    back.half().unwrap();
    let mut opt2 = Adam::new(back.parameters(), AdamConfig::default()).unwrap();
    assert_eq!(checkpoint::load(&path, &back, &mut opt2).unwrap(), 3);
    assert_eq!(back.weight.dtype(), DType::F16);
    assert_eq!(
        back.weight.to_vec::<wgrad::f16>().unwrap(),
        model.weight.to_vec::<wgrad::f16>().unwrap()
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn autocast_refuses_full_precision_dtypes() {
    for dtype in [DType::F32, DType::I32, DType::U32] {
        let e = autocast(dtype, || ()).unwrap_err().to_string();
        assert!(e.contains("autocast") && e.contains(dtype.name()), "{e}");
    }
}

/// A float16 product large enough for the tensor cores (on GPUs that have
/// them; elsewhere the f32 kernels) gives the CPU's result: the operands are
/// f16 values, so the tensor cores' f16 rounding is exact and only the
/// summation order differs before the result is rounded to f16.
#[test]
fn large_f16_products_match_the_cpu() {
    let Some(device) = gpu() else { return };
    let (m, k, n) = (512, 1024, 512);
    let a = Tensor::randn_with(&[m, k], 0.0, 1.0, 11, &Device::Cpu)
        .unwrap()
        .half()
        .unwrap();
    let b = Tensor::randn_with(&[n, k], 0.0, 1.0, 12, &Device::Cpu)
        .unwrap()
        .half()
        .unwrap();
    let want = a.matmul_t(&b, false, true).unwrap();
    let got = a
        .to(&device)
        .unwrap()
        .matmul_t(&b.to(&device).unwrap(), false, true)
        .unwrap();
    assert_eq!(got.dtype(), DType::F16);
    let (got, want) = (got.to_vec_f32().unwrap(), want.to_vec_f32().unwrap());
    // |values| ~ sqrt(k) = 32: one f16 ulp there is 2^-5.
    check_close("f16 product", &got, &want, 2.0 * 9.77e-4 * 32.0).unwrap();
    // Batched, the left operand transposed (m-fast loads), K = 512.
    let a = Tensor::randn_with(&[2, 512, 512], 0.0, 1.0, 13, &Device::Cpu)
        .unwrap()
        .half()
        .unwrap();
    let b = Tensor::randn_with(&[2, 512, 512], 0.0, 1.0, 14, &Device::Cpu)
        .unwrap()
        .half()
        .unwrap();
    let want = a.matmul_t(&b, true, false).unwrap().to_vec_f32().unwrap();
    let (ga, gb) = (a.to(&device).unwrap(), b.to(&device).unwrap());
    let got = ga.matmul_t(&gb, true, false).unwrap();
    assert_eq!(got.dtype(), DType::F16);
    check_close(
        "batched f16 product",
        &got.to_vec_f32().unwrap(),
        &want,
        2.0 * 9.77e-4 * 32.0,
    )
    .unwrap();
}

/// A 16-bit input to float32 normalisation layers (a float model fed half
/// activations) comes out in the input's dtype, computed in f32, as
/// PyTorch's mixed-dtype batch and group norms do; the running statistics
/// stay F32.
#[test]
fn norms_of_half_inputs_with_f32_parameters() {
    use wgrad::nn::{BatchNorm2d, GroupNorm};
    for device in devices() {
        let x = Tensor::randn_with(&[2, 4, 3, 3], 0.5, 2.0, 5, &device).unwrap();
        let xh = x.half().unwrap();
        let bn = BatchNorm2d::new(4, &device).unwrap();
        let want = bn
            .forward(&xh.float().unwrap())
            .unwrap()
            .to_vec_f32()
            .unwrap();
        let bn = BatchNorm2d::new(4, &device).unwrap();
        let y = bn.forward(&xh).unwrap();
        assert_eq!(y.dtype(), DType::F16, "{device}");
        check_close("batch_norm", &y.to_vec_f32().unwrap(), &want, 2e-3).unwrap();
        for (_, t) in bn.named_buffers() {
            assert_ne!(t.dtype(), DType::F16, "{device}: buffers keep their dtype");
        }
        let gn = GroupNorm::new(2, 4, 1e-5, true, &device).unwrap();
        let y = gn.forward(&xh).unwrap();
        assert_eq!(y.dtype(), DType::F16, "{device}");
        let want = gn
            .forward(&xh.float().unwrap())
            .unwrap()
            .to_vec_f32()
            .unwrap();
        check_close("group_norm", &y.to_vec_f32().unwrap(), &want, 2e-3).unwrap();
    }
}

/// Every layer kind converted with `.half()` / `.bfloat16()` keeps a 16-bit
/// input 16-bit through forward and gives 16-bit gradients (PyTorch's
/// `model.half()`), in training and eval mode.
#[test]
fn half_models_of_every_layer_kind_stay_half() {
    use wgrad::nn::{
        BatchNorm2d, Conv2d, Dropout, Dropout2d, Embedding, GroupNorm, LayerNorm, MaxPool2d,
        MultiheadAttention, TransformerEncoderLayer, TransformerOptions,
    };
    for device in devices() {
        for dtype in [DType::F16, DType::BF16] {
            let d = &device;
            let img = Tensor::randn_with(&[2, 3, 8, 8], 0.0, 1.0, 1, d)
                .unwrap()
                .cast(dtype)
                .unwrap();
            let seq = Tensor::randn_with(&[2, 5, 8], 0.0, 1.0, 2, d)
                .unwrap()
                .cast(dtype)
                .unwrap();
            let tokens = Tensor::from_vec(vec![1i32, 3, 0, 2], &[4], d).unwrap();
            let mut layers: Vec<(&str, Box<dyn Module>, &Tensor)> = vec![
                ("conv", Box::new(Conv2d::new(3, 4, 3, d).unwrap()), &img),
                (
                    "batch_norm",
                    Box::new(BatchNorm2d::new(3, d).unwrap()),
                    &img,
                ),
                (
                    "group_norm",
                    Box::new(GroupNorm::new(1, 3, 1e-5, true, d).unwrap()),
                    &img,
                ),
                ("max_pool", Box::new(MaxPool2d::new(2)), &img),
                ("dropout", Box::new(Dropout::new(0.5).unwrap()), &img),
                ("dropout2d", Box::new(Dropout2d::new(0.5).unwrap()), &img),
                (
                    "layer_norm",
                    Box::new(LayerNorm::new(&[8], 1e-5, true, d).unwrap()),
                    &seq,
                ),
                (
                    "linear",
                    Box::new(Linear::new(8, 3, true, d).unwrap()),
                    &seq,
                ),
                (
                    "attention",
                    Box::new(MultiheadAttention::new(8, 2, 0.0, true, true, d).unwrap()),
                    &seq,
                ),
                (
                    "encoder",
                    Box::new(
                        TransformerEncoderLayer::new(
                            &TransformerOptions {
                                dim_feedforward: 16,
                                batch_first: true,
                                ..TransformerOptions::new(8, 2)
                            },
                            d,
                        )
                        .unwrap(),
                    ),
                    &seq,
                ),
                (
                    "embedding",
                    Box::new(Embedding::new(4, 6, d).unwrap()),
                    &tokens,
                ),
            ];
            for (name, layer, x) in &mut layers {
                layer.to_dtype(dtype).unwrap();
                for training in [true, false] {
                    layer.train(training);
                    let y = layer
                        .forward(x)
                        .unwrap_or_else(|e| panic!("{device} {dtype} {name}: {e}"));
                    assert_eq!(y.dtype(), dtype, "{device} {name} (training {training})");
                    assert!(
                        y.to_vec_f32().unwrap().iter().all(|v| v.is_finite()),
                        "{device} {dtype} {name}"
                    );
                    if training && !layer.parameters().is_empty() {
                        layer.zero_grad();
                        y.float().unwrap().sum_all().unwrap().backward().unwrap();
                        for (p, t) in layer.named_parameters() {
                            let g = t.grad().unwrap_or_else(|| panic!("{name}.{p}: no grad"));
                            assert_eq!(g.dtype(), dtype, "{device} {name}.{p} grad");
                        }
                    }
                }
            }
        }
    }
}

/// The ops the fixtures do not replay in 16 bits (sorting, sampling, the
/// tuple-returning reductions, tensor-bound clamp, one_hot): each keeps a
/// 16-bit input's dtype where PyTorch does and gives float32's result
/// rounded to it, on both devices.
#[test]
fn the_remaining_ops_keep_16_bit_dtypes() {
    type Op = fn(&Tensor) -> wgrad::Result<Vec<Tensor>>;
    let ops: Vec<(&str, Op)> = vec![
        ("sort", |x| x.sort(1, true).map(|(v, i)| vec![v, i])),
        ("argsort", |x| Ok(vec![x.argsort(0, false)?])),
        ("topk", |x| {
            x.topk(2, 1, true, true).map(|(v, i)| vec![v, i])
        }),
        ("cumsum", |x| Ok(vec![x.cumsum(1)?])),
        ("cumprod", |x| Ok(vec![x.cumprod(0)?])),
        ("max_dim", |x| x.max_dim(1, false).map(|(v, i)| vec![v, i])),
        ("min_dim", |x| x.min_dim(0, true).map(|(v, i)| vec![v, i])),
        ("argmax", |x| Ok(vec![x.argmax(1, false)?])),
        ("std", |x| Ok(vec![x.std(&[1], 1, false)?])),
        ("var", |x| Ok(vec![x.var(&[], 0, false)?])),
        ("mean", |x| Ok(vec![x.mean(&[0], true)?])),
        ("amax", |x| Ok(vec![x.max(&[1], false)?])),
        ("clamp_tensor", |x| {
            let lo = x.mean(&[0], true)?;
            Ok(vec![x.clamp_tensor(Some(&lo), None)?])
        }),
        ("where", |x| {
            let m = x.gt_scalar(0.0)?;
            Ok(vec![Tensor::where_cond(&m, x, &x.neg()?)?])
        }),
        ("masked_fill", |x| {
            Ok(vec![x.masked_fill(&x.lt_scalar(0.0)?, -1.5)?])
        }),
        ("stack", |x| Ok(vec![Tensor::stack(&[x, x], 0)?])),
        ("roll", |x| Ok(vec![x.roll(&[1], &[1])?])),
        ("softmax", |x| Ok(vec![x.softmax(1)?])),
        ("gather", |x| {
            let i = Tensor::from_vec(vec![0i32, 2, 1, 0, 3, 3], &[3, 2], &x.device())?;
            Ok(vec![x.gather(1, &i)?])
        }),
        ("abs_sum", |x| Ok(vec![x.abs()?.sum(&[1], false)?])),
    ];
    for device in devices() {
        for dtype in [DType::F16, DType::BF16] {
            let x32 = Tensor::randn_with(&[3, 4], 0.0, 1.5, 21, &device).unwrap();
            let x = x32.cast(dtype).unwrap();
            // The reference: float32's result on the 16-bit values, rounded.
            let wide = x.float().unwrap();
            for (name, op) in &ops {
                let got = op(&x).unwrap_or_else(|e| panic!("{device} {dtype} {name}: {e}"));
                let want = op(&wide).unwrap();
                for (g, w) in got.iter().zip(&want) {
                    let expect = if w.dtype() == DType::F32 {
                        dtype
                    } else {
                        w.dtype()
                    };
                    assert_eq!(g.dtype(), expect, "{device} {dtype} {name}");
                    let values = |t: &Tensor| t.cast(DType::F32).unwrap().to_vec_f32().unwrap();
                    let w = values(&w.cast(expect).unwrap());
                    assert_eq!(values(g), w, "{device} {dtype} {name}");
                }
            }
            // Sampling reads 16-bit probabilities and weights.
            let p = Tensor::full(&[4, 3], 0.5, dtype, &device).unwrap();
            assert_eq!(p.bernoulli_with(3).unwrap().dtype(), dtype);
            let idx = p.multinomial_with(2, false, 4).unwrap();
            assert_eq!(idx.dtype(), DType::I32);
            let labels = Tensor::from_vec(vec![0i32, 2], &[2], &device).unwrap();
            assert_eq!(
                labels.one_hot(3, dtype).unwrap().to_vec_f32().unwrap(),
                [1., 0., 0., 0., 0., 1.]
            );
        }
    }
}

/// A Python number meets a 16-bit tensor as PyTorch's CPU kernels take it:
/// rounded to the tensor's dtype for add, sub and remainder, kept in float
/// for mul, div and floor_divide (values from PyTorch 2.15).
#[test]
fn half_scalars_round_where_pytorch_rounds_them() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let x = Tensor::from_vec(vec![3.0f32], &[1], &d)
            .unwrap()
            .cast(DType::F16)
            .unwrap();
        let got = |y: Tensor| y.cast(DType::F32).unwrap().to_vec_f32().unwrap()[0];
        assert_eq!(got(x.mul_scalar(0.1).unwrap()), 0.300_048_83, "{d:?}");
        assert_eq!(got(x.div_scalar(10.0).unwrap()), 0.300_048_83);
        assert_eq!(got(x.div_floor_scalar(0.1).unwrap()), 29.0);
        assert_eq!(got(x.remainder_scalar(0.1).unwrap()), 0.000_732_421_9);
        assert_eq!(got(x.add_scalar(0.1).unwrap()), 3.099_609_4);
        let b = Tensor::from_vec(vec![3.0f32], &[1], &d)
            .unwrap()
            .cast(DType::BF16)
            .unwrap();
        assert_eq!(got(b.mul_scalar(0.1).unwrap()), 0.300_781_25);
    }
}
