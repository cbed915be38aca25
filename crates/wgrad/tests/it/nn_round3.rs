//! What the third randomized comparison with PyTorch 2.15
//! (`tests/pytorch_diff/gen_nn.py`) found, each case checked here on the
//! CPU and the GPU against values PyTorch printed: CELU with a negative
//! alpha, Hardswish's gradient at infinity, PReLU's channel rule below 2-D,
//! InstanceNorm's and GroupNorm's single-value errors, Unflatten of an
//! empty input, negative pads in the reflect/replicate/circular modes, an
//! adaptive max pool to size 0, and `F.hardtanh`'s and `Softshrink`'s
//! argument errors.

// The expected values are PyTorch's, printed in full (f64) precision.
#![allow(clippy::excessive_precision)]

use crate::common::{check_close, gpu};
use wgrad::nn::{
    CELU, CircularPad1d, GroupNorm, Hardshrink, Hardsigmoid, Hardswish, InstanceNorm1d, Module,
    PReLU, ReflectionPad2d, ReplicationPad2d, Softshrink, Threshold, Unflatten,
};
use wgrad::{Device, PadMode, Tensor};

fn devices() -> Vec<Device> {
    let mut out = vec![Device::Cpu];
    out.extend(gpu());
    out
}

fn leaf(v: &[f32], shape: &[usize], d: &Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape, d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn grad_of(x: &Tensor) -> Vec<f32> {
    x.grad().expect("a gradient").to_vec::<f32>().unwrap()
}

/// PyTorch's celu(x, alpha) is elu(x, alpha, input_scale = 1 / alpha): the
/// branch follows x's sign, also for a negative alpha (wgrad's
/// alpha * elu(x / alpha) flipped it).
#[test]
fn celu_negative_alpha() {
    for d in devices() {
        let x = leaf(&[-2.0, -0.5, 0.0, 0.5, 3.0], &[5], &d);
        let y = CELU::new(-0.7).unwrap().forward(&x).unwrap();
        let want = [-11.48819637298584, -0.7299089431762695, 0.0, 0.5, 3.0];
        check_close("celu(-0.7)", &y.to_vec::<f32>().unwrap(), &want, 1e-5).unwrap();
        y.sum_all().unwrap().backward().unwrap();
        let want = [17.41170883178711, 2.042726993560791, 1.0, 1.0, 1.0];
        check_close("celu(-0.7) grad", &grad_of(&x), &want, 1e-5).unwrap();
    }
}

/// The masked-out middle branch gave inf * 0 = NaN at x = +inf.
#[test]
fn hardswish_gradient_at_infinity() {
    for d in devices() {
        let x = leaf(
            &[f32::INFINITY, f32::NEG_INFINITY, 3.0, -3.0, 1.0],
            &[5],
            &d,
        );
        Hardswish::new()
            .forward(&x)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let want = [1.0, 0.0, 1.0, 0.0, 1.0 / 6.0 * 2.0 + 0.5];
        check_close("hardswish grad", &grad_of(&x), &want, 1e-6).unwrap();
        // NaN in, NaN gradient out (PyTorch's vectorized kernel; the clamp
        // of the middle branch used to block it to 0).
        let x = leaf(&[f32::NAN, 1.0], &[2], &d);
        let y = Hardswish::new().forward(&x).unwrap();
        assert!(y.to_vec::<f32>().unwrap()[0].is_nan());
        y.sum_all().unwrap().backward().unwrap();
        let g = grad_of(&x);
        assert!(
            g[0].is_nan() && (g[1] - (2.0 / 6.0 + 0.5)).abs() < 1e-6,
            "{g:?}"
        );
    }
}

/// Below 2-D the input has one channel (PyTorch's rule), so several slopes
/// are an error there rather than lined up with dim 0.
#[test]
fn prelu_channels_below_2d() {
    for d in devices() {
        let act = PReLU::new(3, 0.25, &d).unwrap();
        let err = act
            .forward(&Tensor::zeros(&[3], &d).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("channel size = 1"), "{err}");
        assert!(act.forward(&Tensor::zeros(&[], &d).unwrap()).is_err());
        assert_eq!(
            act.forward(&Tensor::zeros(&[2, 3], &d).unwrap())
                .unwrap()
                .shape(),
            [2, 3]
        );
        let one = PReLU::new(1, 0.25, &d).unwrap();
        assert_eq!(
            one.forward(&Tensor::zeros(&[3], &d).unwrap())
                .unwrap()
                .shape(),
            [3]
        );
    }
}

/// A slope's gradient is the sum of g * x over the non-positive elements
/// only: +inf contributes nothing (not inf * 0 = NaN), x = 0 gets the
/// slope, as PyTorch 2.15 gives ([-2.], [1, 0.25, 0.25, 1]).
#[test]
fn prelu_weight_gradient_ignores_positive_infinity() {
    for d in devices() {
        let act = PReLU::new(1, 0.25, &d).unwrap();
        let x = leaf(&[f32::INFINITY, -2.0, 0.0, 3.0], &[4], &d);
        let y = act.forward(&x).unwrap();
        y.sum_all().unwrap().backward().unwrap();
        let gw = act.weight.grad().unwrap().to_vec_f32().unwrap();
        assert_eq!(gw, [-2.0], "{d:?}");
        let gx = x.grad().unwrap().to_vec_f32().unwrap();
        assert_eq!(gx, [1.0, 0.25, 0.25, 1.0], "{d:?}");
        let out = y.to_vec_f32().unwrap();
        assert_eq!(out, [f32::INFINITY, -0.5, 0.0, 3.0], "{d:?}");
    }
}

/// Without running statistics evaluation normalises by the input's own, so
/// PyTorch's single-element check holds in eval mode too; GroupNorm's
/// [N * C / G, G, *] check likewise, and an empty batch still works.
#[test]
fn single_value_norms_are_errors() {
    for d in devices() {
        let mut inorm = InstanceNorm1d::new(3, 1e-5, true, &d).unwrap();
        inorm.train(false);
        assert!(
            inorm
                .forward(&Tensor::zeros(&[2, 3, 1], &d).unwrap())
                .is_err()
        );
        let gn = GroupNorm::new(3, 3, 1e-5, false, &d).unwrap();
        let err = gn
            .forward(&Tensor::zeros(&[1, 3], &d).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 1 value"), "{err}");
        assert_eq!(
            gn.forward(&Tensor::zeros(&[2, 3], &d).unwrap())
                .unwrap()
                .shape(),
            [2, 3]
        );
        assert_eq!(
            gn.forward(&Tensor::zeros(&[0, 3, 2], &d).unwrap())
                .unwrap()
                .shape(),
            [0, 3, 2]
        );
    }
}

/// The -1 comes from the dim's own size, which an input with no elements
/// still has.
#[test]
fn unflatten_free_size_of_empty_input() {
    for d in devices() {
        let x = Tensor::zeros(&[1, 0], &d).unwrap();
        let y = Unflatten::new(-2, &[-1, 1]).forward(&x).unwrap();
        assert_eq!(y.shape(), [1, 1, 0]);
        let y = Unflatten::new(1, &[-1, 2]).forward(&Tensor::zeros(&[2, 0], &d).unwrap());
        assert_eq!(y.unwrap().shape(), [2, 0, 2]);
        // Ambiguous in PyTorch too: any size times 0 is 0.
        assert!(
            Unflatten::new(1, &[-1, 0])
                .forward(&Tensor::zeros(&[2, 0], &d).unwrap())
                .is_err()
        );
    }
}

/// Negative pads crop in every mode: reflect and replicate pad from the
/// whole dim and then crop; circular crops first and wraps what is left.
#[test]
fn negative_pads_in_every_mode() {
    for d in devices() {
        let x = leaf(
            &(0..12).map(|v| v as f32).collect::<Vec<_>>(),
            &[1, 3, 4],
            &d,
        );
        let cases: [(PadMode, [f32; 15]); 3] = [
            (
                PadMode::Circular,
                [
                    1., 2., 3., 1., 2., 5., 6., 7., 5., 6., 9., 10., 11., 9., 10.,
                ],
            ),
            (
                PadMode::Reflect,
                [
                    1., 2., 3., 2., 1., 5., 6., 7., 6., 5., 9., 10., 11., 10., 9.,
                ],
            ),
            (
                PadMode::Replicate,
                [
                    1., 2., 3., 3., 3., 5., 6., 7., 7., 7., 9., 10., 11., 11., 11.,
                ],
            ),
        ];
        for (mode, want) in cases {
            let y = x.pad(&[-1, 2], mode).unwrap();
            check_close(
                &format!("{mode:?}"),
                &y.to_vec::<f32>().unwrap(),
                &want,
                0.0,
            )
            .unwrap();
        }
        let x4 = x.unsqueeze(0).unwrap();
        let y = ReflectionPad2d::with_sides([1, -2, -1, 1])
            .forward(&x4)
            .unwrap();
        let want = [5., 4., 5., 9., 8., 9., 5., 4., 5.];
        check_close("reflection2d", &y.to_vec::<f32>().unwrap(), &want, 0.0).unwrap();
        let y = ReplicationPad2d::with_sides([1, -2, -1, 1])
            .forward(&x4)
            .unwrap();
        let want = [4., 4., 5., 8., 8., 9., 8., 8., 9.];
        check_close("replication2d", &y.to_vec::<f32>().unwrap(), &want, 0.0).unwrap();
        // The gradient of a circular crop-and-wrap: column 1 appears twice.
        let y = CircularPad1d::with_sides([-1, 1]).forward(&x).unwrap();
        assert_eq!(y.shape(), [1, 3, 4]);
        y.sum_all().unwrap().backward().unwrap();
        let want = [0., 2., 1., 1., 0., 2., 1., 1., 0., 2., 1., 1.];
        check_close("circular grad", &grad_of(&x), &want, 0.0).unwrap();
        // Still errors: an empty reflect output, a circular wrap longer than
        // what is left.
        assert!(x.pad(&[-2, -2], PadMode::Reflect).is_err());
        assert!(x.pad(&[-3, 2], PadMode::Circular).is_err());
        assert_eq!(
            x.pad(&[-2, -2], PadMode::Circular).unwrap().shape(),
            [1, 3, 0]
        );
    }
}

/// PyTorch's adaptive pools take an output size of 0 (an empty output).
#[test]
fn adaptive_max_pool_to_nothing() {
    for d in devices() {
        let x = leaf(&[1.0; 8], &[1, 2, 4], &d);
        let y = x.adaptive_max_pool1d(0).unwrap();
        assert_eq!(y.shape(), [1, 2, 0]);
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(grad_of(&x), [0.0; 8]);
        let y = x.unsqueeze(0).unwrap().adaptive_max_pool2d([2, 0]).unwrap();
        assert_eq!(y.shape(), [1, 1, 2, 0]);
    }
}

/// Bad hyperparameters PyTorch refuses: `F.hardtanh` with min above max
/// (the module already refused it), a negative `Softshrink` lambda.
#[test]
fn bad_activation_settings_are_errors() {
    for d in devices() {
        let x = Tensor::zeros(&[3], &d).unwrap();
        let err = x.hardtanh(0.5, -1.0).unwrap_err().to_string();
        assert!(err.contains("cannot be greater than max_val"), "{err}");
        assert!(x.hardtanh(0.5, 0.5).is_ok());
        let err = Softshrink::new(-0.5).forward(&x).unwrap_err().to_string();
        assert!(err.contains("lambda must be in range"), "{err}");
        assert!(Softshrink::new(0.0).forward(&x).is_ok());
    }
}

/// Hardsigmoid, Threshold and the shrinks at the infinities and NaN, as PyTorch gives
/// them (`F.hardsigmoid`, `F.threshold(x, 0.39, -2.0)`): their constant
/// branches were `x * 0 + c`, NaN at an infinite x; and NaN's gradient
/// through hardsigmoid is 0 (only the open interval (-3, 3) passes it).
#[test]
fn hardsigmoid_and_threshold_at_infinity_and_nan() {
    let same = |what: &str, got: &[f32], want: &[f32]| {
        let ok = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|(g, w)| g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-6);
        assert!(ok, "{what}: got {got:?}, want {want:?}");
    };
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    for d in devices() {
        let x = leaf(&[inf, -inf, nan, 1.0, 3.0, -3.0], &[6], &d);
        let y = Hardsigmoid::new().forward(&x).unwrap();
        same(
            "hardsigmoid",
            &y.to_vec::<f32>().unwrap(),
            &[1.0, 0.0, nan, 2.0 / 3.0, 1.0, 0.0],
        );
        y.sum_all().unwrap().backward().unwrap();
        same(
            "hardsigmoid grad",
            &grad_of(&x),
            &[0.0, 0.0, 0.0, 1.0 / 6.0, 0.0, 0.0],
        );

        let x = leaf(&[inf, -inf, nan, 1.0, 0.39, 0.2], &[6], &d);
        let y = Threshold::new(0.39, -2.0).forward(&x).unwrap();
        same(
            "threshold",
            &y.to_vec::<f32>().unwrap(),
            &[inf, -2.0, nan, 1.0, -2.0, -2.0],
        );
        y.sum_all().unwrap().backward().unwrap();
        same(
            "threshold grad",
            &grad_of(&x),
            &[1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
        );

        // The shrinks pass NaN's value but not its gradient (PyTorch's
        // vectorized kernels: `|x| > lambd` is false for NaN).
        for (name, m) in [
            (
                "hardshrink",
                Box::new(Hardshrink::new(0.5)) as Box<dyn Module>,
            ),
            ("softshrink", Box::new(Softshrink::new(0.5))),
        ] {
            let x = leaf(&[nan, 2.0, 0.2], &[3], &d);
            let y = m.forward(&x).unwrap();
            assert!(y.to_vec::<f32>().unwrap()[0].is_nan(), "{name}");
            y.sum_all().unwrap().backward().unwrap();
            same(&format!("{name} grad"), &grad_of(&x), &[0.0, 1.0, 0.0]);
        }
    }
}

/// PyTorch's `x.diagonal()` is a view, so `x.diagonal().fill_(v)` writes
/// `x`; wgrad's is a copy, so the write is refused rather than silently
/// missing `x` (found comparing in-place writes through views with
/// PyTorch 2.15). `diag` and `trace` return copies in PyTorch too and stay
/// writable; an empty diagonal has nothing to write.
#[test]
fn writes_through_diagonal_are_refused_not_lost() {
    for d in devices() {
        let x = Tensor::zeros(&[3, 3], &d).unwrap();
        let err = x
            .diagonal(0, 0, 1)
            .unwrap()
            .fill_(1.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("diagonal returns a copy"), "{err}");
        let view = x.diagonal(1, 0, 1).unwrap().narrow(0, 0, 1).unwrap();
        assert!(view.add_scalar_(5.0).is_err());
        assert_eq!(x.to_vec_f32().unwrap(), [0.0; 9], "{d:?}");
        let copy = x.diag(0).unwrap();
        copy.fill_(2.0).unwrap();
        assert_eq!(copy.to_vec_f32().unwrap(), [2.0; 3]);
        assert_eq!(x.to_vec_f32().unwrap(), [0.0; 9], "{d:?}");
        x.diagonal(5, 0, 1).unwrap().fill_(1.0).unwrap();
        // Reading and differentiating the diagonal are unchanged.
        let m = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &d);
        let diag = m.diagonal(0, 0, 1).unwrap();
        assert_eq!(diag.to_vec_f32().unwrap(), [1.0, 4.0]);
        diag.sum_all().unwrap().backward().unwrap();
        assert_eq!(
            m.grad().unwrap().to_vec_f32().unwrap(),
            [1.0, 0.0, 0.0, 1.0]
        );
    }
}
