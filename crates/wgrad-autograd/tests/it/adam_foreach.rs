//! Adam/AdamW's multi-tensor GPU step (several parameters per dispatch)
//! against the CPU's per-parameter step, where the batching could go
//! wrong: parameter groups with different hyper-parameters, parameters
//! that skip a step (their step counts differ), half parameters and
//! amsgrad (which take the per-parameter path) in the same optimizer.

use wgrad_autograd::optim::*;
use wgrad_autograd::{DType, Device, Tensor};
use wgrad_test_support::{assert_close, gpu};

fn param(n: usize, seed: usize, device: &Device) -> Tensor {
    let data: Vec<f32> = (0..n)
        .map(|i| (((i * 7 + seed * 13) % 17) as f32 - 8.0) / 8.0)
        .collect();
    Tensor::from_vec(data, &[n], device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

/// Six parameters in two AdamW groups (decay and no decay) stepped five
/// times on `loss = sum(p^2 * c)`; parameter 2 gets no gradient in the
/// first two steps and parameter 5 is BF16. Returns every parameter and
/// each one's step count.
fn run(device: &Device) -> (Vec<Vec<f32>>, Vec<Option<u64>>) {
    let params: Vec<Tensor> = [300, 7, 1, 64, 1000, 9]
        .iter()
        .enumerate()
        .map(|(i, &n)| param(n, i, device))
        .collect();
    let half = params[5]
        .cast(DType::BF16)
        .unwrap()
        .detach()
        .with_requires_grad(true)
        .unwrap();
    let params: Vec<Tensor> = params[..5].iter().cloned().chain([half]).collect();
    let decay = AdamWConfig {
        lr: 0.05,
        weight_decay: 0.1,
        ..Default::default()
    };
    let no_decay = AdamWConfig {
        lr: 0.02,
        weight_decay: 0.0,
        maximize: true,
        ..Default::default()
    };
    let mut opt = AdamW::with_groups(vec![
        ParamGroup::new(
            vec![params[0].clone(), params[1].clone(), params[2].clone()],
            decay,
        ),
        ParamGroup::new(params[3..].to_vec(), no_decay),
    ])
    .unwrap();
    for step in 0..5 {
        opt.zero_grad();
        let mut loss: Option<Tensor> = None;
        for (i, p) in params.iter().enumerate() {
            if i == 2 && step < 2 {
                continue;
            }
            let term = p
                .cast(DType::F32)
                .unwrap()
                .square()
                .unwrap()
                .mul_scalar(0.5 + i as f32)
                .unwrap()
                .sum_all()
                .unwrap();
            loss = Some(match loss {
                Some(l) => l.add(&term).unwrap(),
                None => term,
            });
        }
        loss.unwrap().backward().unwrap();
        opt.step().unwrap();
    }
    let values = params
        .iter()
        .map(|p| p.cast(DType::F32).unwrap().to_vec_f32().unwrap())
        .collect();
    let steps = opt
        .state()
        .iter()
        .map(|s| s.as_ref().map(|s| s.step))
        .collect();
    (values, steps)
}

#[test]
fn grouped_and_skipped_parameters_match_the_cpu() {
    let Some(dev) = gpu() else { return };
    let (want, want_steps) = run(&Device::Cpu);
    let (got, got_steps) = run(&dev);
    assert_eq!(
        want_steps,
        vec![Some(5), Some(5), Some(3), Some(5), Some(5), Some(5)]
    );
    assert_eq!(got_steps, want_steps);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // BF16 rounds each step's result: one BF16 ulp.
        let tol = if i == 5 { 1e-2 } else { 1e-5 };
        assert_close(g, w, tol, &format!("parameter {i}"));
    }
}
