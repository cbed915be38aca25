//! Checkpoints: training N steps, saving, and training M more gives the same
//! parameters bit for bit as restoring into a fresh model and optimizer and
//! training M, for SGD, Adam and AdamW on either device; optimizer state
//! files; and loads that fail change nothing.

use std::path::PathBuf;
use wgrad_test_support::{gpu, seed_lock};

use wgrad_autograd::optim::LrScheduler;
use wgrad_autograd::optim::{
    Adam, AdamConfig, AdamW, AdamWConfig, Optimizer, Sgd, SgdConfig, StepLR,
};
use wgrad_autograd::{Device, Error, Tensor, manual_seed};
use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad_nn::{
    Linear, Module, OptimizerCheckpoint, OptimizerConfig, ReLU, Sequential, checkpoint, state_dict,
};

const SIZES: [usize; 3] = [6, 8, 3];

pub(crate) fn mlp(seed: u64, device: &Device) -> Sequential {
    let _guard = seed_lock();
    manual_seed(seed);
    Sequential::new()
        .add(Linear::new(SIZES[0], SIZES[1], true, device).unwrap())
        .add(ReLU::new())
        .add(Linear::new(SIZES[1], SIZES[2], true, device).unwrap())
}

pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("checkpoint_tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

pub(crate) fn bits(model: &dyn Module) -> Vec<Vec<u32>> {
    model
        .parameters()
        .iter()
        .map(|p| {
            p.to_vec_f32()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        })
        .collect()
}

pub(crate) fn invalid<T: std::fmt::Debug>(result: wgrad_core::Result<T>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// One cross-entropy step on batch `step` (a different batch each step,
/// drawn from explicit seeds so both runs see the same data).
pub(crate) fn train_step(model: &Sequential, opt: &mut dyn Optimizer, step: u64, device: &Device) {
    let x = Tensor::randn_with(&[5, SIZES[0]], 0.0, 1.0, 1000 + step, device).unwrap();
    let labels: Vec<i32> = (0..5).map(|i| (i + step as i32) % 3).collect();
    let y = Tensor::from_vec(labels, &[5], device).unwrap();
    let loss = cross_entropy(
        &model.forward(&x).unwrap(),
        &y,
        CrossEntropyOptions::default(),
    )
    .unwrap();
    opt.zero_grad();
    loss.backward().unwrap();
    opt.step().unwrap();
}

/// Trains N steps, saves, trains M more; then restores the checkpoint into
/// a differently initialised model and an optimizer built with another
/// learning rate, trains the same M steps, and expects the same bits.
pub(crate) fn resume_matches<O: OptimizerCheckpoint>(
    device: &Device,
    name: &str,
    make: impl Fn(Vec<Tensor>, f64) -> O,
) {
    const N: u64 = 3;
    const M: u64 = 4;
    let path = scratch(&format!("{name}_{}.safetensors", device.is_gpu()));
    let a = mlp(1, device);
    let mut opt_a = make(a.parameters(), 0.05);
    for step in 0..N {
        train_step(&a, &mut opt_a, step, device);
    }
    checkpoint::save(&path, &a, &opt_a, 7).unwrap();
    for step in N..N + M {
        train_step(&a, &mut opt_a, step, device);
    }

    let b = mlp(2, device);
    let mut opt_b = make(b.parameters(), 0.5);
    assert!(checkpoint::is_checkpoint(&path).unwrap());
    assert_eq!(checkpoint::load(&path, &b, &mut opt_b).unwrap(), 7);
    assert_eq!(
        opt_b.lr(),
        0.05,
        "{name}: the learning rate was not restored"
    );
    for step in N..N + M {
        train_step(&b, &mut opt_b, step, device);
    }
    assert_eq!(bits(&a), bits(&b), "{name}: resumed training diverged");
    // Guard against a vacuous pass: the steps after the restore moved the
    // parameters.
    let c = mlp(3, device);
    let mut opt_c = make(c.parameters(), 0.05);
    checkpoint::load(&path, &c, &mut opt_c).unwrap();
    assert_ne!(
        bits(&a),
        bits(&c),
        "{name}: training after the restore did nothing"
    );
}

fn sgd(params: Vec<Tensor>, lr: f64) -> Sgd {
    let config = SgdConfig {
        lr,
        momentum: 0.9,
        nesterov: true,
        weight_decay: 1e-3,
        ..Default::default()
    };
    Sgd::new(params, config).unwrap()
}

fn adam(params: Vec<Tensor>, lr: f64) -> Adam {
    let config = AdamConfig {
        lr,
        amsgrad: true,
        weight_decay: 1e-2,
        ..Default::default()
    };
    Adam::new(params, config).unwrap()
}

fn adamw(params: Vec<Tensor>, lr: f64) -> AdamW {
    let config = AdamWConfig {
        lr,
        betas: (0.8, 0.99),
        ..Default::default()
    };
    AdamW::new(params, config).unwrap()
}

#[test]
fn resume_is_bit_identical_cpu() {
    let device = Device::Cpu;
    resume_matches(&device, "sgd", sgd);
    resume_matches(&device, "adam", adam);
    resume_matches(&device, "adamw", adamw);
}

#[test]
fn resume_is_bit_identical_gpu() {
    let Some(device) = gpu() else { return };
    resume_matches(&device, "sgd", sgd);
    resume_matches(&device, "adam", adam);
    resume_matches(&device, "adamw", adamw);
}

#[test]
fn checkpoint_from_the_gpu_resumes_on_the_cpu() {
    let Some(device) = gpu() else { return };
    let path = scratch("gpu_to_cpu.safetensors");
    let a = mlp(1, &device);
    let mut opt_a = adam(a.parameters(), 0.01);
    for step in 0..2 {
        train_step(&a, &mut opt_a, step, &device);
    }
    checkpoint::save(&path, &a, &opt_a, 2).unwrap();
    let b = mlp(2, &Device::Cpu);
    let mut opt_b = adam(b.parameters(), 0.01);
    checkpoint::load(&path, &b, &mut opt_b).unwrap();
    assert_eq!(bits(&a), bits(&b));
    let (sa, sb) = (
        opt_a.optimizer_state_dict().unwrap(),
        opt_b.optimizer_state_dict().unwrap(),
    );
    for (pa, pb) in sa.state.iter().zip(&sb.state) {
        assert_eq!(pa.step, Some(2));
        assert_eq!(pa.step, pb.step);
        for ((na, ta), (nb, tb)) in pa.buffers.iter().zip(&pb.buffers) {
            assert_eq!(na, nb);
            assert!(tb.device().same(&Device::Cpu));
            assert_eq!(ta.to_vec_f32().unwrap(), tb.to_vec_f32().unwrap(), "{na}");
        }
    }
}

#[test]
fn optimizer_file_roundtrip_keeps_state_and_schedule() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = adamw(model.parameters(), 0.1);
    let mut sched = StepLR::new(&mut opt, 1, 0.5).unwrap();
    for step in 0..3 {
        train_step(&model, &mut opt, step, &device);
        sched.step(&mut opt);
    }
    let path = scratch("optimizer.safetensors");
    checkpoint::save_optimizer(&opt, &path).unwrap();
    let mut fresh = adamw(model.parameters(), 0.1);
    checkpoint::load_optimizer(&mut fresh, &path).unwrap();
    assert_eq!(fresh.lr(), opt.lr());
    assert_eq!(fresh.lr(), 0.1 * 0.125);
    assert_eq!(fresh.initial_lr(), Some(0.1));
    let (want, got) = (
        opt.optimizer_state_dict().unwrap(),
        fresh.optimizer_state_dict().unwrap(),
    );
    assert_eq!(want.config, got.config);
    assert_eq!(got.config, OptimizerConfig::AdamW(opt.config()));
    for (w, g) in want.state.iter().zip(&got.state) {
        assert_eq!(w.step, g.step);
        let names = |p: &wgrad_nn::ParamState| -> Vec<String> {
            p.buffers.iter().map(|(n, _)| n.clone()).collect()
        };
        assert_eq!(names(w), ["exp_avg", "exp_avg_sq"]);
        assert_eq!(names(w), names(g));
        for ((_, a), (_, b)) in w.buffers.iter().zip(&g.buffers) {
            assert_eq!(a.to_vec_f32().unwrap(), b.to_vec_f32().unwrap());
        }
    }
    // The file reads like PyTorch's optimizer state (steps are I64 scalars,
    // which wgrad tensors cannot hold, so read it with safetensors itself).
    let bytes = std::fs::read(&path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = file.names();
    names.sort();
    let want: Vec<String> = (0..4)
        .flat_map(|i| ["exp_avg", "exp_avg_sq", "step"].map(|n| format!("optim.state.{i}.{n}")))
        .collect();
    assert_eq!(names, want);
    let step = file.tensor("optim.state.2.step").unwrap();
    assert_eq!(step.dtype(), safetensors::Dtype::I64);
    assert_eq!(step.shape(), &[] as &[usize]);
    assert_eq!(step.data(), 3i64.to_le_bytes());
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().clone().unwrap();
    assert_eq!(meta["optim.type"], "AdamW");
    assert_eq!(meta["optim.betas"], "[0.8, 0.99]");
    assert_eq!(meta["optim.lr"], "0.0125");
}

#[test]
fn unstepped_parameters_have_no_state_in_the_file() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = sgd(model.parameters(), 0.1);
    // Only the last layer gets a gradient: the others keep no buffer.
    let last = model.parameters()[3].clone();
    last.sum_all().unwrap().backward().unwrap();
    opt.step().unwrap();
    let path = scratch("partial_state.safetensors");
    checkpoint::save_optimizer(&opt, &path).unwrap();
    let mut fresh = sgd(model.parameters(), 0.1);
    checkpoint::load_optimizer(&mut fresh, &path).unwrap();
    let has: Vec<bool> = fresh
        .state()
        .iter()
        .map(|s| s.momentum_buffer.is_some())
        .collect();
    assert_eq!(has, [false, false, false, true]);
}

#[test]
fn wrong_optimizer_type_or_hyper_parameters_are_refused() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = adam(model.parameters(), 0.01);
    train_step(&model, &mut opt, 0, &device);
    let path = scratch("adam_state.safetensors");
    checkpoint::save_optimizer(&opt, &path).unwrap();

    let mut other_kind = sgd(model.parameters(), 0.01);
    let msg = invalid(checkpoint::load_optimizer(&mut other_kind, &path));
    assert!(msg.contains("adam_state.safetensors"), "{msg}");
    assert!(
        msg.contains("holds Adam state, the optimizer is SGD"),
        "{msg}"
    );

    let config = AdamConfig {
        betas: (0.9, 0.99),
        amsgrad: true,
        weight_decay: 1e-2,
        ..Default::default()
    };
    let mut other_betas = Adam::new(model.parameters(), config).unwrap();
    let msg = invalid(checkpoint::load_optimizer(&mut other_betas, &path));
    assert!(
        msg.contains("optim.betas = [0.9, 0.999] (the optimizer has [0.9, 0.99])"),
        "{msg}"
    );
    assert!(other_betas.state().iter().all(Option::is_none));

    let mut fewer = adam(model.parameters()[..2].to_vec(), 0.01);
    let msg = invalid(checkpoint::load_optimizer(&mut fewer, &path));
    assert!(
        msg.contains("has state for 4 parameter(s), the optimizer has 2"),
        "{msg}"
    );
}

#[test]
fn in_memory_state_problems_name_the_buffers() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = adam(model.parameters(), 0.01);
    train_step(&model, &mut opt, 0, &device);
    let good = opt.optimizer_state_dict().unwrap();

    let mut missing = good.clone();
    missing.state[1].buffers.retain(|(n, _)| n != "exp_avg");
    let mut fresh = adam(model.parameters(), 0.01);
    let msg = invalid(fresh.load_optimizer_state_dict(&missing));
    assert!(
        msg.contains("missing tensor(s): 'optim.state.1.exp_avg'"),
        "{msg}"
    );

    let mut shaped = good.clone();
    shaped.state[0].buffers[0].1 = Tensor::zeros(&[2, 2], &device).unwrap();
    let msg = invalid(fresh.load_optimizer_state_dict(&shaped));
    assert!(
        msg.contains(
            "tensor 'optim.state.0.exp_avg' has shape [2, 2], the parameter has shape [8, 6]"
        ),
        "{msg}"
    );

    let mut extra = good.clone();
    extra.state[2].buffers.push((
        "momentum_buffer".to_string(),
        Tensor::zeros(&[3, 8], &device).unwrap(),
    ));
    let msg = invalid(fresh.load_optimizer_state_dict(&extra));
    assert!(
        msg.contains("unexpected tensor(s): 'optim.state.2.momentum_buffer'"),
        "{msg}"
    );
    assert!(
        fresh.state().iter().all(Option::is_none),
        "a failed load changed state"
    );

    fresh.load_optimizer_state_dict(&good).unwrap();
    assert!(fresh.state().iter().all(Option::is_some));
}

/// A checkpoint whose optimizer part does not fit leaves the model as it
/// was, though the model part alone would have loaded; one whose model part
/// does not fit leaves the optimizer alone.
fn failed_checkpoint_load_changes_nothing(device: &Device) {
    let path = scratch(&format!("atomic_{}.safetensors", device.is_gpu()));
    let a = mlp(1, device);
    let mut opt_a = adam(a.parameters(), 0.01);
    train_step(&a, &mut opt_a, 0, device);
    checkpoint::save(&path, &a, &opt_a, 1).unwrap();

    let b = mlp(2, device);
    let before = bits(&b);
    let mut wrong_kind = sgd(b.parameters(), 0.01);
    let msg = invalid(checkpoint::load(&path, &b, &mut wrong_kind));
    assert!(msg.contains("holds Adam state"), "{msg}");
    assert_eq!(
        bits(&b),
        before,
        "the model changed although the load failed"
    );
    assert!(
        wrong_kind
            .state()
            .iter()
            .all(|s| s.momentum_buffer.is_none())
    );

    let wider = {
        let _seed = seed_lock();
        Sequential::new()
            .add(Linear::new(SIZES[0], SIZES[1] + 1, true, device).unwrap())
            .add(ReLU::new())
            .add(Linear::new(SIZES[1] + 1, SIZES[2], true, device).unwrap())
    };
    let mut opt_w = adam(wider.parameters(), 0.01);
    let msg = invalid(checkpoint::load(&path, &wider, &mut opt_w));
    assert!(msg.contains("'0.weight' has shape [8, 6]"), "{msg}");
    assert!(opt_w.state().iter().all(Option::is_none));
    assert_eq!(opt_w.lr(), 0.01);
}

#[test]
fn failed_checkpoint_load_changes_nothing_cpu() {
    failed_checkpoint_load_changes_nothing(&Device::Cpu);
}

#[test]
fn failed_checkpoint_load_changes_nothing_gpu() {
    let Some(device) = gpu() else { return };
    failed_checkpoint_load_changes_nothing(&device);
}

#[test]
fn checkpoints_and_state_dicts_are_told_apart() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let opt = adam(model.parameters(), 0.01);
    let weights = scratch("weights_only.safetensors");
    let ckpt = scratch("full.safetensors");
    state_dict::save(&model, &weights).unwrap();
    checkpoint::save(&ckpt, &model, &opt, 0).unwrap();
    assert!(!checkpoint::is_checkpoint(&weights).unwrap());
    assert!(checkpoint::is_checkpoint(&ckpt).unwrap());

    let mut fresh_opt = adam(model.parameters(), 0.01);
    let msg = invalid(checkpoint::load(&weights, &model, &mut fresh_opt));
    assert!(msg.contains("is not a wgrad checkpoint"), "{msg}");

    // A checkpoint's weights load into a bare model (its optim.* skipped).
    let other = mlp(2, &device);
    state_dict::load(&other, &ckpt).unwrap();
    assert_eq!(bits(&other), bits(&model));
    // An optimizer-only file is no state_dict.
    let optim_file = scratch("optim_only.safetensors");
    checkpoint::save_optimizer(&opt, &optim_file).unwrap();
    let msg = invalid(state_dict::load(&other, &optim_file));
    assert!(msg.contains("missing tensor(s): '0.weight'"), "{msg}");
}

/// Rewrites the safetensors file at `path` (metadata kept), passing each
/// tensor's `(name, dtype, data)` through `f`, which returns the new dtype
/// and bytes.
fn rewrite(
    path: &std::path::Path,
    f: impl Fn(&str, safetensors::Dtype, &[u8]) -> (safetensors::Dtype, Vec<u8>),
) {
    let bytes = std::fs::read(path).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let tensors: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let (dtype, data) = f(&name, view.dtype(), view.data());
            (name, dtype, view.shape().to_vec(), data)
        })
        .collect();
    let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            let view = safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap();
            (n.as_str(), view)
        })
        .collect();
    safetensors::serialize_to_file(views, meta.metadata().clone(), path).unwrap();
}

fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Every F32 tensor of a checkpoint (model and optimizer state) stored as
/// F64 loads back to the same bits, and as BF16 to the BF16 values: the
/// optimizer's buffers are converted as the model's parameters are.
#[test]
fn checkpoint_with_f64_or_bf16_tensors_loads_converted() {
    let device = Device::Cpu;
    let path = scratch("converted.safetensors");
    let a = mlp(1, &device);
    let mut opt_a = adam(a.parameters(), 0.01);
    for step in 0..2 {
        train_step(&a, &mut opt_a, step, &device);
    }
    let want_state = opt_a.optimizer_state_dict().unwrap();
    let buffers = |sd: &wgrad_nn::OptimizerStateDict| -> Vec<(String, Vec<u32>)> {
        sd.state
            .iter()
            .flat_map(|ps| &ps.buffers)
            .map(|(n, t)| {
                let v = t.to_vec_f32().unwrap();
                (n.clone(), v.iter().map(|x| x.to_bits()).collect())
            })
            .collect()
    };

    // F64: widening each f32 is exact, so the load restores every bit.
    checkpoint::save(&path, &a, &opt_a, 2).unwrap();
    rewrite(&path, |_, dtype, data| match dtype {
        safetensors::Dtype::F32 => (
            safetensors::Dtype::F64,
            f32s(data)
                .flat_map(|x| f64::from(x).to_le_bytes())
                .collect(),
        ),
        other => (other, data.to_vec()),
    });
    let b = mlp(2, &device);
    let mut opt_b = adam(b.parameters(), 0.01);
    assert_eq!(checkpoint::load(&path, &b, &mut opt_b).unwrap(), 2);
    assert_eq!(bits(&b), bits(&a));
    let got = opt_b.optimizer_state_dict().unwrap();
    assert_eq!(buffers(&got), buffers(&want_state));
    assert!(got.state.iter().all(|ps| ps.step == Some(2)));

    // BF16 (truncated here): each value loads as exactly the BF16 value.
    checkpoint::save(&path, &a, &opt_a, 2).unwrap();
    rewrite(&path, |_, dtype, data| match dtype {
        safetensors::Dtype::F32 => (
            safetensors::Dtype::BF16,
            f32s(data)
                .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
                .collect(),
        ),
        other => (other, data.to_vec()),
    });
    let truncated = |v: Vec<(String, Vec<u32>)>| -> Vec<(String, Vec<u32>)> {
        v.into_iter()
            .map(|(n, b)| (n, b.into_iter().map(|x| x & 0xFFFF_0000).collect()))
            .collect()
    };
    let c = mlp(3, &device);
    let mut opt_c = adam(c.parameters(), 0.01);
    checkpoint::load(&path, &c, &mut opt_c).unwrap();
    let model_bits = |m: &Sequential| -> Vec<Vec<u32>> {
        bits(m)
            .into_iter()
            .map(|v| v.into_iter().map(|x| x & 0xFFFF_0000).collect())
            .collect()
    };
    assert_eq!(bits(&c), model_bits(&a));
    assert_eq!(
        buffers(&opt_c.optimizer_state_dict().unwrap()),
        truncated(buffers(&want_state))
    );

    // An optimizer file with F16 buffers loads through load_optimizer too.
    let opt_path = scratch("converted_optim.safetensors");
    checkpoint::save_optimizer(&opt_a, &opt_path).unwrap();
    rewrite(&opt_path, |_, dtype, data| match dtype {
        // Every buffer as 0.5 in F16.
        safetensors::Dtype::F32 => (
            safetensors::Dtype::F16,
            f32s(data).flat_map(|_| 0x3800u16.to_le_bytes()).collect(),
        ),
        other => (other, data.to_vec()),
    });
    let mut opt_d = adam(c.parameters(), 0.01);
    checkpoint::load_optimizer(&mut opt_d, &opt_path).unwrap();
    let loaded = buffers(&opt_d.optimizer_state_dict().unwrap());
    assert_eq!(loaded.len(), buffers(&want_state).len());
    assert!(
        loaded
            .iter()
            .all(|(_, v)| v.iter().all(|&x| x == 0.5f32.to_bits()))
    );
}

/// An optimizer buffer of a dtype that does not convert (here I32) is an
/// error naming the tensor and both dtypes; model and optimizer stay as
/// they were.
#[test]
fn checkpoint_with_an_unconvertible_buffer_changes_nothing() {
    let device = Device::Cpu;
    let path = scratch("unconvertible.safetensors");
    let a = mlp(1, &device);
    let mut opt_a = adam(a.parameters(), 0.01);
    train_step(&a, &mut opt_a, 0, &device);
    checkpoint::save(&path, &a, &opt_a, 1).unwrap();
    rewrite(&path, |name, dtype, data| {
        if name == "optim.state.1.exp_avg_sq" {
            (safetensors::Dtype::I32, data.to_vec())
        } else {
            (dtype, data.to_vec())
        }
    });
    let b = mlp(2, &device);
    let before = bits(&b);
    let mut opt_b = adam(b.parameters(), 0.01);
    let msg = invalid(checkpoint::load(&path, &b, &mut opt_b));
    assert!(msg.contains("unconvertible.safetensors"), "{msg}");
    assert!(
        msg.contains(
            "tensor 'optim.state.1.exp_avg_sq' has dtype I32, expected F32 (float32) like its parameter"
        ),
        "{msg}"
    );
    assert_eq!(bits(&b), before);
    assert!(opt_b.state().iter().all(Option::is_none));
    let msg = invalid(checkpoint::load_optimizer(&mut opt_b, &path));
    assert!(
        msg.contains("'optim.state.1.exp_avg_sq' has dtype I32"),
        "{msg}"
    );
    assert!(opt_b.state().iter().all(Option::is_none));
}
