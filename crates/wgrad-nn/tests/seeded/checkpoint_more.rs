//! Checkpoints of NAdam, RAdam, Adamax and Adadelta: resuming from a
//! checkpoint trains on bit for bit as the uninterrupted run, on either
//! device; the file holds PyTorch's buffer names (NAdam's `mu_product` an
//! F32 scalar); a state without `mu_product` is refused and changes nothing.

use wgrad_autograd::optim::{
    Adadelta, AdadeltaConfig, Adamax, AdamaxConfig, NAdam, NAdamConfig, Optimizer, ParamGroup,
    RAdam, RAdamConfig,
};
use wgrad_autograd::{DType, Device, Tensor};
use wgrad_nn::{Module, OptimizerCheckpoint, OptimizerConfig, checkpoint};
use wgrad_test_support::gpu;

use crate::checkpoint::{bits, invalid, mlp, resume_matches, scratch, train_step};

fn nadam(params: Vec<Tensor>, lr: f64) -> NAdam {
    let config = NAdamConfig {
        lr,
        weight_decay: 1e-2,
        decoupled_weight_decay: true,
        momentum_decay: 1e-2,
        ..Default::default()
    };
    NAdam::new(params, config).unwrap()
}

fn radam(params: Vec<Tensor>, lr: f64) -> RAdam {
    // Two groups; beta2 = 0.9 rectifies from step 6, so the resumed steps
    // cross the switch.
    let (first, rest) = params.split_at(2);
    let config = RAdamConfig {
        lr,
        betas: (0.8, 0.9),
        weight_decay: 1e-2,
        ..Default::default()
    };
    RAdam::with_groups(vec![
        ParamGroup::new(first.to_vec(), config),
        ParamGroup::new(
            rest.to_vec(),
            RAdamConfig {
                decoupled_weight_decay: true,
                ..config
            },
        ),
    ])
    .unwrap()
}

fn adamax(params: Vec<Tensor>, lr: f64) -> Adamax {
    let config = AdamaxConfig {
        lr,
        weight_decay: 1e-3,
        ..Default::default()
    };
    Adamax::new(params, config).unwrap()
}

fn adadelta(params: Vec<Tensor>, lr: f64) -> Adadelta {
    let config = AdadeltaConfig {
        lr,
        rho: 0.95,
        ..Default::default()
    };
    Adadelta::new(params, config).unwrap()
}

fn resume_all(device: &Device) {
    resume_matches(device, "nadam", nadam);
    resume_matches(device, "radam", radam);
    resume_matches(device, "adamax", adamax);
    resume_matches(device, "adadelta", adadelta);
}

#[test]
fn nadam_radam_adamax_adadelta_resume_bit_identical_cpu() {
    resume_all(&Device::Cpu);
}

#[test]
fn nadam_radam_adamax_adadelta_resume_bit_identical_gpu() {
    let Some(device) = gpu() else { return };
    resume_all(&device);
}

#[test]
fn state_dicts_have_pytorch_names_and_nadam_mu_product_is_a_scalar() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = nadam(model.parameters(), 0.01);
    for step in 0..3 {
        train_step(&model, &mut opt, step, &device);
    }
    let sd = opt.optimizer_state_dict().unwrap();
    assert!(matches!(sd.config, OptimizerConfig::NAdam(c) if c.decoupled_weight_decay));
    for (ps, s) in sd.state.iter().zip(opt.state()) {
        let s = s.as_ref().unwrap();
        assert_eq!(ps.step, Some(3));
        let names: Vec<&str> = ps.buffers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["exp_avg", "exp_avg_sq", "mu_product"]);
        let mu = &ps.buffers[2].1;
        assert_eq!((mu.rank(), mu.dtype()), (0, DType::F32));
        assert_eq!(f64::from(mu.item().unwrap()), s.mu_product);
        assert!(s.mu_product < 1.0);
    }
    // Through a file and back.
    let path = scratch("nadam_state.safetensors");
    checkpoint::save_optimizer(&opt, &path).unwrap();
    let mut fresh = nadam(model.parameters(), 0.5);
    checkpoint::load_optimizer(&mut fresh, &path).unwrap();
    for (a, b) in opt.state().iter().zip(fresh.state()) {
        let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
        assert_eq!((a.step, a.mu_product), (b.step, b.mu_product));
        assert_eq!(
            a.exp_avg_sq.to_vec_f32().unwrap(),
            b.exp_avg_sq.to_vec_f32().unwrap()
        );
    }
    let names = |o: &dyn OptimizerCheckpoint| -> Vec<String> {
        let sd = o.optimizer_state_dict().unwrap();
        sd.state[0].buffers.iter().map(|(n, _)| n.clone()).collect()
    };
    let stepped = |mut o: Box<dyn OptimizerCheckpoint>| {
        train_step(&model, o.as_mut(), 0, &device);
        names(o.as_ref())
    };
    assert_eq!(
        stepped(Box::new(radam(model.parameters(), 0.01))),
        ["exp_avg", "exp_avg_sq"]
    );
    assert_eq!(
        stepped(Box::new(adamax(model.parameters(), 0.01))),
        ["exp_avg", "exp_inf"]
    );
    assert_eq!(
        stepped(Box::new(adadelta(model.parameters(), 0.01))),
        ["square_avg", "acc_delta"]
    );
}

#[test]
fn nadam_state_without_mu_product_is_refused_and_changes_nothing() {
    let device = Device::Cpu;
    let model = mlp(1, &device);
    let mut opt = nadam(model.parameters(), 0.01);
    train_step(&model, &mut opt, 0, &device);
    let mut sd = opt.optimizer_state_dict().unwrap();
    sd.state[1].buffers.retain(|(n, _)| n != "mu_product");
    let mut fresh = nadam(model.parameters(), 0.01);
    let message = invalid(fresh.load_optimizer_state_dict(&sd));
    assert!(
        message.contains("parameter 1: missing buffer mu_product"),
        "{message}"
    );
    assert!(fresh.state().iter().all(Option::is_none));
    // Another optimizer's state is refused by type.
    let radam_sd = {
        let mut r = radam(model.parameters(), 0.01);
        train_step(&model, &mut r, 0, &device);
        r.optimizer_state_dict().unwrap()
    };
    let message = invalid(fresh.load_optimizer_state_dict(&radam_sd));
    assert!(message.contains("holds RAdam state"), "{message}");
    assert_eq!(bits(&model).len(), 4);
    assert_eq!(fresh.lr(), 0.01);
}
