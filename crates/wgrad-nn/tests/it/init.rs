//! `wgrad_nn::init`: fans, gains, and the ranges/spreads of every fill.

use wgrad_autograd::{DType, Device, Error, Tensor};
use wgrad_nn::init::{self, FanMode, Nonlinearity};

const CPU: Device = Device::Cpu;

fn stats(t: &Tensor) -> (f32, f32, f32) {
    let v = t.to_vec_f32().unwrap();
    let n = v.len() as f32;
    let mean = v.iter().sum::<f32>() / n;
    let std = (v.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / n).sqrt();
    let max_abs = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    (mean, std, max_abs)
}

#[test]
fn fans_and_gains_follow_torch() {
    assert_eq!(init::calculate_fan_in_and_fan_out(&[8, 4]).unwrap(), (4, 8));
    // Conv weight [out, in, kh, kw]: receptive field 3 * 3.
    assert_eq!(
        init::calculate_fan_in_and_fan_out(&[8, 4, 3, 3]).unwrap(),
        (36, 72)
    );
    let e = init::calculate_fan_in_and_fan_out(&[5])
        .unwrap_err()
        .to_string();
    assert!(e.contains("[5]"), "{e}");
    assert_eq!(init::calculate_gain(Nonlinearity::Linear, None), 1.0);
    assert_eq!(init::calculate_gain(Nonlinearity::Sigmoid, None), 1.0);
    assert_eq!(init::calculate_gain(Nonlinearity::Tanh, None), 5.0 / 3.0);
    assert_eq!(init::calculate_gain(Nonlinearity::Relu, None), 2f32.sqrt());
    assert_eq!(init::calculate_gain(Nonlinearity::Selu, None), 0.75);
    assert!(
        (init::calculate_gain(Nonlinearity::LeakyRelu, None) - (2.0f32 / 1.0001).sqrt()).abs()
            < 1e-7
    );
    // a = sqrt(5) (nn.Linear's default) gives gain sqrt(1/3).
    assert!(
        (init::calculate_gain(Nonlinearity::LeakyRelu, Some(5f32.sqrt())) - (1.0f32 / 3.0).sqrt())
            .abs()
            < 1e-7
    );
}

#[test]
fn kaiming_fills_have_he_scale() {
    let w = Tensor::zeros(&[64, 100], &CPU).unwrap();
    init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu).unwrap();
    // bound = sqrt(2) * sqrt(3 / 100)
    let bound = (6.0f32 / 100.0).sqrt();
    let (mean, std, max_abs) = stats(&w);
    assert!(
        max_abs <= bound && max_abs > 0.95 * bound,
        "{max_abs} vs {bound}"
    );
    assert!(
        mean.abs() < 0.01 && (std - bound / 3f32.sqrt()).abs() < 0.05 * bound,
        "{mean} {std}"
    );
    // fan_out uses the 64 rows.
    init::kaiming_uniform_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu).unwrap();
    let bound = (6.0f32 / 64.0).sqrt();
    let (_, _, max_abs) = stats(&w);
    assert!(
        max_abs <= bound && max_abs > 0.95 * bound,
        "{max_abs} vs {bound}"
    );
    init::kaiming_normal_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu).unwrap();
    let (mean, std, _) = stats(&w);
    let want = (2.0f32 / 100.0).sqrt();
    assert!(
        mean.abs() < 0.01 && (std - want).abs() < 0.05 * want,
        "{mean} {std} vs {want}"
    );
    // Zero-element tensors are left alone (torch warns and returns).
    init::kaiming_uniform_(
        &Tensor::zeros(&[0, 3], &CPU).unwrap(),
        0.0,
        FanMode::FanIn,
        Nonlinearity::Relu,
    )
    .unwrap();
}

#[test]
fn xavier_fills_have_glorot_scale() {
    let w = Tensor::zeros(&[60, 40], &CPU).unwrap();
    init::xavier_uniform_(&w, 1.0).unwrap();
    let bound = (6.0f32 / 100.0).sqrt();
    let (_, std, max_abs) = stats(&w);
    assert!(
        max_abs <= bound && max_abs > 0.95 * bound,
        "{max_abs} vs {bound}"
    );
    assert!((std - bound / 3f32.sqrt()).abs() < 0.05 * bound, "{std}");
    init::xavier_normal_(&w, 2.0).unwrap();
    let want = 2.0 * (2.0f32 / 100.0).sqrt();
    let (mean, std, _) = stats(&w);
    assert!(
        mean.abs() < 0.02 && (std - want).abs() < 0.05 * want,
        "{mean} {std} vs {want}"
    );
}

#[test]
fn simple_fills_and_their_errors() {
    let w = Tensor::zeros(&[3, 4], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    init::ones_(&w).unwrap();
    assert_eq!(w.to_vec_f32().unwrap(), vec![1.0; 12]);
    // Filling keeps the tensor a grad-requiring leaf.
    assert!(w.requires_grad() && w.is_leaf());
    init::constant_(&w, 2.5).unwrap();
    assert_eq!(w.to_vec_f32().unwrap(), vec![2.5; 12]);
    init::zeros_(&w).unwrap();
    assert_eq!(w.to_vec_f32().unwrap(), vec![0.0; 12]);
    init::uniform_(&w, 2.0, 3.0).unwrap();
    assert!(
        w.to_vec_f32()
            .unwrap()
            .iter()
            .all(|&x| (2.0..3.0).contains(&x))
    );
    init::normal_(&w, 10.0, 0.0).unwrap();
    assert_eq!(w.to_vec_f32().unwrap(), vec![10.0; 12]);
    assert!(init::uniform_(&w, 1.0, 0.0).is_err());
    assert!(init::normal_(&w, 0.0, -1.0).is_err());
    let i = Tensor::full(&[2], 0.0, DType::I32, &CPU).unwrap();
    assert!(matches!(init::ones_(&i), Err(Error::DTypeMismatch { .. })));
}
