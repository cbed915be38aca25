//! The benchmark workloads (kept in step with `benches/torch_compare.py`).

use wgrad::prelude::*;

use crate::Workload;

/// The `gpt` example's model, shared so both measure the same network.
#[path = "../../../examples/gpt/model.rs"]
mod gpt;

fn random(shape: &[usize], seed: u64, device: &Device) -> Result<Tensor> {
    Tensor::randn_with(shape, 0.0, 1.0, seed, device)
}

/// Every workload at full size, or small sizes with `quick` (CI smoke runs, lavapipe).
pub fn all(device: &Device, quick: bool, only: Only<'_>) -> Result<Vec<Workload>> {
    let elems = if quick { 1 << 20 } else { 64 << 20 };
    let label = if quick { "1M" } else { "64M" };
    let mut out = Vec::new();
    // Inputs are made only for the workloads asked for: the 64M-element
    // ones alone took seconds on the CPU.
    let elementwise = ["add", "exp", "sum"].map(|op| format!("{op} {label} f32"));
    if elementwise.iter().any(|n| only.wants(n)) {
        out.extend(elementwise_ops(device, elems, label)?);
    }
    let (rows, cols) = if quick { (512, 512) } else { (8192, 4096) };
    if only.wants(&format!("softmax {rows}x{cols}")) {
        let m = random(&[rows, cols], 3, device)?;
        out.push(Workload {
            name: format!("softmax {rows}x{cols}"),
            amount: 2.0 * 4.0 * (rows * cols) as f64,
            unit: "GB/s",
            iters: 20,
            run: Box::new(move || m.softmax(-1).map(drop)),
        });
    }
    let sizes: &[usize] = if quick { &[256] } else { &[1024, 2048, 4096] };
    for &n in sizes.iter().filter(|n| only.wants(&format!("matmul {n}"))) {
        let x = random(&[n, n], 4, device)?;
        let y = random(&[n, n], 5, device)?;
        out.push(Workload {
            name: format!("matmul {n}"),
            amount: 2.0 * (n as f64).powi(3),
            unit: "TFLOP/s",
            iters: if n >= 4096 { 5 } else { 10 },
            run: Box::new(move || x.matmul(&y).map(drop)),
        });
    }
    out.extend(convolutions(device, quick, only)?);
    out.extend(attention(device, quick, only)?);
    out.extend(training(device, quick, only)?);
    Ok(out)
}

/// Which workloads a run asks for (`--only SUBSTRING`): all when `None`.
#[derive(Clone, Copy)]
pub struct Only<'a>(pub Option<&'a str>);

impl Only<'_> {
    /// Whether the workload called `name` is asked for.
    pub fn wants(&self, name: &str) -> bool {
        self.0.is_none_or(|o| name.contains(o))
    }
}

/// add, exp and sum over `elems` f32 values.
fn elementwise_ops(device: &Device, elems: usize, label: &str) -> Result<Vec<Workload>> {
    let mut out = Vec::new();
    let a = random(&[elems], 1, device)?;
    let b = random(&[elems], 2, device)?;
    {
        let (a, b) = (a.clone(), b.clone());
        out.push(Workload {
            name: format!("add {label} f32"),
            amount: 3.0 * 4.0 * elems as f64,
            unit: "GB/s",
            iters: 20,
            run: Box::new(move || a.add(&b).map(drop)),
        });
    }
    {
        let a = a.clone();
        out.push(Workload {
            name: format!("exp {label} f32"),
            amount: 2.0 * 4.0 * elems as f64,
            unit: "GB/s",
            iters: 20,
            run: Box::new(move || a.exp().map(drop)),
        });
    }
    {
        let a = a.clone();
        out.push(Workload {
            name: format!("sum {label} f32"),
            amount: 4.0 * elems as f64,
            unit: "GB/s",
            iters: 20,
            run: Box::new(move || a.sum_all().map(drop)),
        });
    }
    Ok(out)
}

/// Causal `scaled_dot_product_attention` forward + backward (B 8, H 8,
/// T 1024, head dim 64; quick: B 1, H 2, T 128), rated with
/// FlashAttention's convention: 4·B·H·T²·D FLOPs forward, halved for the
/// causal mask, times 3.5 for forward + backward.
pub fn attention(device: &Device, quick: bool, only: Only<'_>) -> Result<Option<Workload>> {
    let (b, h, t, d) = if quick {
        (1, 2, 128, 64)
    } else {
        (8, 8, 1024, 64)
    };
    let name = format!("attention b{b} h{h} t{t} d{d} causal fwd+bwd");
    if !only.wants(&name) {
        return Ok(None);
    }
    let q = random(&[b, h, t, d], 31, device)?.with_requires_grad(true)?;
    let k = random(&[b, h, t, d], 32, device)?.with_requires_grad(true)?;
    let v = random(&[b, h, t, d], 33, device)?.with_requires_grad(true)?;
    let upstream = random(&[b, h, t, d], 34, device)?;
    Ok(Some(Workload {
        name,
        amount: 3.5 * 4.0 * (b * h * t * t * d) as f64 / 2.0,
        unit: "TFLOP/s",
        iters: 10,
        run: Box::new(move || {
            for x in [&q, &k, &v] {
                x.zero_grad();
            }
            let y = q.scaled_dot_product_attention(&k, &v, None, 0.0, true, None)?;
            y.backward_with_options(Some(&upstream), Default::default())
        }),
    }))
}

/// Conv shapes (batch 32) as `(name, channels in, channels out, size,
/// kernel, stride, groups)`: ResNet's, and depthwise ones (MobileNet's 3x3,
/// ConvNeXt's 7x7); quick runs use batch 2 and a quarter of the size.
const CONV_SHAPES: [(&str, usize, usize, usize, usize, usize, usize); 7] = [
    ("conv 64ch 56x56 3x3", 64, 64, 56, 3, 1, 1),
    ("conv 128ch 28x28 3x3", 128, 128, 28, 3, 1, 1),
    ("conv 256ch 14x14 3x3", 256, 256, 14, 3, 1, 1),
    ("conv 256->64 56x56 1x1", 256, 64, 56, 1, 1, 1),
    ("conv 64->128 56x56 3x3 s2", 64, 128, 56, 3, 2, 1),
    ("conv depthwise 256ch 56x56 3x3", 256, 256, 56, 3, 1, 256),
    ("conv depthwise 96ch 56x56 7x7", 96, 96, 56, 7, 1, 96),
];

/// conv2d forward + both gradients (input and weight) at ResNet shapes:
/// 3x the forward's FLOPs per iteration, reported in TFLOP/s.
pub fn convolutions(device: &Device, quick: bool, only: Only<'_>) -> Result<Vec<Workload>> {
    let batch = if quick { 2 } else { 32 };
    let mut out = Vec::new();
    for (name, cin, cout, size, k, stride, groups) in CONV_SHAPES {
        let name = format!("{name} fwd+bwd");
        if !only.wants(&name) {
            continue;
        }
        let size = if quick { size / 4 } else { size };
        let x = random(&[batch, cin, size, size], 21, device)?.with_requires_grad(true)?;
        let w = random(&[cout, cin / groups, k, k], 22, device)?.with_requires_grad(true)?;
        let args = wgrad::Conv2dArgs {
            stride: [stride; 2],
            padding: [[k / 2; 2]; 2],
            groups,
            ..Default::default()
        };
        let out_size = (size + 2 * (k / 2) - k) / stride + 1;
        let flops = 2.0 * (batch * cout * out_size * out_size * (cin / groups) * k * k) as f64;
        let upstream = random(&[batch, cout, out_size, out_size], 23, device)?;
        out.push(Workload {
            name,
            amount: 3.0 * flops,
            unit: "TFLOP/s",
            iters: 10,
            run: Box::new(move || {
                x.zero_grad();
                w.zero_grad();
                let y = x.conv2d(&w, None, &args)?;
                y.backward_with_options(Some(&upstream), Default::default())
            }),
        });
    }
    Ok(out)
}

/// A training step of an MLP (Linear+ReLU stack, cross-entropy, Adam lr 1e-3),
/// in `async` mode (no readback in the loop) or `sync` mode (loss read back
/// every step, as a logging loop does).
pub fn mlp_step(
    name: &str,
    sizes: &[usize],
    batch: usize,
    sync: bool,
    device: &Device,
) -> Result<Workload> {
    use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy};
    use wgrad::nn::{Linear, Module, ReLU, Sequential};
    use wgrad::optim::{Adam, AdamConfig, Optimizer};

    manual_seed(0);
    let mut model = Sequential::new();
    for (i, pair) in sizes.windows(2).enumerate() {
        model = model.add(Linear::new(pair[0], pair[1], true, device)?);
        if i + 2 < sizes.len() {
            model = model.add(ReLU::new());
        }
    }
    let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
    let x = random(&[batch, sizes[0]], 11, device)?;
    let classes = sizes[sizes.len() - 1];
    let y = Tensor::from_vec(
        (0..batch).map(|i| (i % classes) as i32).collect::<Vec<_>>(),
        &[batch],
        device,
    )?;
    Ok(Workload {
        name: format!("{name} {}", if sync { "sync" } else { "async" }),
        amount: 0.0,
        unit: "ms",
        iters: 20,
        run: Box::new(move || {
            opt.zero_grad();
            let loss = cross_entropy(&model.forward(&x)?, &y, CrossEntropyOptions::default())?;
            loss.backward()?;
            opt.step()?;
            if sync {
                loss.item()?;
            }
            Ok(())
        }),
    })
}

/// A training step of the PyTorch MNIST tutorial's conv net (conv 32 3x3,
/// conv 64 3x3, max-pool 2, linear 9216-128, linear 128-10; dropout left
/// out so both sides run the same arithmetic) on `[batch, 1, 28, 28]`,
/// cross-entropy, Adam, no readback in the loop.
pub fn cnn_step(batch: usize, device: &Device) -> Result<Workload> {
    use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy};
    use wgrad::nn::{Conv2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential};
    use wgrad::optim::{Adam, AdamConfig, Optimizer};

    manual_seed(0);
    let model = Sequential::new()
        .add(Conv2d::new(1, 32, 3, device)?)
        .add(ReLU::new())
        .add(Conv2d::new(32, 64, 3, device)?)
        .add(ReLU::new())
        .add(MaxPool2d::new(2))
        .add(Flatten::new())
        .add(Linear::new(9216, 128, true, device)?)
        .add(ReLU::new())
        .add(Linear::new(128, 10, true, device)?);
    let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
    let x = random(&[batch, 1, 28, 28], 31, device)?;
    let y = Tensor::from_vec(
        (0..batch).map(|i| (i % 10) as i32).collect::<Vec<_>>(),
        &[batch],
        device,
    )?;
    Ok(Workload {
        name: format!("cnn step b{batch}"),
        amount: 0.0,
        unit: "ms",
        iters: 20,
        run: Box::new(move || {
            opt.zero_grad();
            let loss = cross_entropy(&model.forward(&x)?, &y, CrossEntropyOptions::default())?;
            loss.backward()?;
            opt.step()
        }),
    })
}

/// T2: a training step of the `gpt` example's model (vocab 1024, block
/// 256, 4 layers, 6 heads, 384 features, no dropout) at batch 32 (quick: a
/// tiny one), cross-entropy, AdamW with decay / no-decay groups, no
/// readback in the loop.
pub fn gpt_step(device: &Device, quick: bool) -> Result<Workload> {
    use wgrad::nn::Module;
    use wgrad::optim::{AdamW, AdamWConfig, Optimizer, ParamGroup};

    let (batch, config) = if quick {
        (
            2,
            gpt::GptConfig {
                vocab_size: 64,
                block_size: 32,
                n_layer: 1,
                n_head: 2,
                n_embd: 32,
                dropout: 0.0,
            },
        )
    } else {
        (
            32,
            gpt::GptConfig {
                vocab_size: 1024,
                block_size: 256,
                n_layer: 4,
                n_head: 6,
                n_embd: 384,
                dropout: 0.0,
            },
        )
    };
    manual_seed(0);
    let model = gpt::Gpt::new(config, device)?;
    let (decay, no_decay) = model.decay_groups();
    let base = AdamWConfig {
        lr: 3e-4,
        betas: (0.9, 0.95),
        ..AdamWConfig::default()
    };
    let mut opt = AdamW::with_groups(vec![
        ParamGroup::new(
            decay,
            AdamWConfig {
                weight_decay: 0.1,
                ..base
            },
        ),
        ParamGroup::new(
            no_decay,
            AdamWConfig {
                weight_decay: 0.0,
                ..base
            },
        ),
    ])?;
    let t = config.block_size;
    let tokens = |shift: usize| -> Vec<i32> {
        (0..batch * t)
            .map(|i| ((i * 7 + shift) % config.vocab_size) as i32)
            .collect()
    };
    let x = Tensor::from_vec(tokens(0), &[batch, t], device)?;
    let y = Tensor::from_vec(tokens(1), &[batch, t], device)?;
    let _ = model.num_parameters();
    Ok(Workload {
        name: "T2 gpt step".to_string(),
        amount: 0.0,
        unit: "ms",
        iters: 10,
        run: Box::new(move || {
            opt.zero_grad();
            let loss = model.loss(&x, &y)?;
            loss.backward()?;
            opt.step()
        }),
    })
}

/// W1 (784-256-256-10, batch 128) and W2 (784-1024-1024-10, batch 1024), both modes.
pub fn training(device: &Device, quick: bool, only: Only<'_>) -> Result<Vec<Workload>> {
    let w2_batch = if quick { 128 } else { 1024 };
    let mut out = Vec::new();
    for batch in if quick { vec![8] } else { vec![64, 128] } {
        if only.wants(&format!("cnn step b{batch}")) {
            out.push(cnn_step(batch, device)?);
        }
    }
    if only.wants("T2 gpt step") {
        out.push(gpt_step(device, quick)?);
    }
    let mode = |sync: bool| if sync { "sync" } else { "async" };
    for sync in [false, true] {
        if only.wants(&format!("W1 {}", mode(sync))) {
            out.push(mlp_step("W1", &[784, 256, 256, 10], 128, sync, device)?);
        }
    }
    for sync in [false, true] {
        if only.wants(&format!("W2 {}", mode(sync))) {
            out.push(mlp_step(
                "W2",
                &[784, 1024, 1024, 10],
                w2_batch,
                sync,
                device,
            )?);
        }
    }
    Ok(out)
}
