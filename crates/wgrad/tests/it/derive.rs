//! `#[derive(Module)]` in a crate that names the facade: a user's model as
//! the README would write it, with `use wgrad::nn::Module` and the prelude.

use wgrad::nn::{Dropout, Linear, Module};
use wgrad::optim::{Optimizer, Sgd, SgdConfig};
use wgrad::prelude::*;

#[derive(Module)]
struct Mlp {
    fc1: Linear,
    drop: Dropout,
    fc2: Linear,
    hidden: usize,
    training: bool,
}

impl Mlp {
    fn new(hidden: usize, device: &Device) -> Result<Self> {
        Ok(Mlp {
            fc1: Linear::new(2, hidden, true, device)?,
            drop: Dropout::new(0.25)?,
            fc2: Linear::new(hidden, 1, true, device)?,
            hidden,
            training: true,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.drop.forward(&self.fc1.forward(x)?.tanh()?)?;
        self.fc2.forward(&h)
    }
}

#[test]
fn a_derived_model_trains_through_the_facade() {
    let device = Device::Cpu;
    manual_seed(3);
    let mut model = Mlp::new(8, &device).unwrap();
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
    assert_eq!(model.num_parameters(), 2 * 8 + 8 + 8 + 1);
    assert_eq!(model.hidden, 8);
    model.eval();
    assert!(!model.is_training() && !model.drop.is_training());
    model.train(true);

    let x = Tensor::from_vec(
        vec![0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        &[4, 2],
        &device,
    )
    .unwrap();
    let y = Tensor::from_vec(vec![0.0f32, 1.0, 1.0, 0.0], &[4, 1], &device).unwrap();
    let mut opt = Sgd::new(model.parameters(), SgdConfig::new(0.1)).unwrap();
    let loss = |m: &Mlp| -> f32 {
        let _guard = no_grad();
        let d = m.forward(&x).unwrap().sub(&y).unwrap();
        d.mul(&d).unwrap().mean_all().unwrap().item().unwrap()
    };
    model.eval();
    let before = loss(&model);
    model.train(true);
    for _ in 0..50 {
        opt.zero_grad();
        let d = model.forward(&x).unwrap().sub(&y).unwrap();
        d.mul(&d).unwrap().mean_all().unwrap().backward().unwrap();
        opt.step().unwrap();
    }
    model.eval();
    assert!(loss(&model) < before, "training did not lower the loss");
    // Module::forward is the inherent forward.
    let via_trait = Module::forward(&model, &x).unwrap().to_vec_f32().unwrap();
    assert_eq!(via_trait, model.forward(&x).unwrap().to_vec_f32().unwrap());
}
