//! The losses added for line-for-line ports (huber_loss, kl_div,
//! binary_cross_entropy, binary_cross_entropy_with_logits with weight and
//! pos_weight) against values and gradients printed by PyTorch 2.15 for
//! the same inputs, on the CPU and the GPU.

use wgrad::nn::loss::{
    BceOptions, Reduction, binary_cross_entropy, binary_cross_entropy_with_logits_with, huber_loss,
    kl_div,
};
use wgrad::{Device, Result, Tensor};

use crate::common::gpu;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn t(v: &[f32], shape: &[usize], d: &Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape, d).unwrap()
}

const X: [f32; 6] = [0.2, -1.5, 3.0, 0.9, 0.1, -0.3];

fn close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 2e-6 + 2e-5 * w.abs(),
            "{what}: {got:?} vs {want:?}"
        );
    }
}

/// The loss of `f(x)` and its gradient with respect to `x`.
fn loss_and_grad(
    x: &[f32],
    d: &Device,
    f: impl Fn(&Tensor) -> Result<Tensor>,
) -> (Vec<f32>, Vec<f32>) {
    let x = t(x, &[2, 3], d);
    x.requires_grad_(true).unwrap();
    let loss = f(&x).unwrap();
    loss.backward().unwrap();
    (
        loss.to_vec_f32().unwrap(),
        x.grad().unwrap().to_vec_f32().unwrap(),
    )
}

#[test]
fn new_losses_match_pytorch() {
    for d in devices() {
        let target = t(&[0.0, -1.0, 1.0, 2.0, 0.5, -0.2], &[2, 3], &d);
        let (l, g) = loss_and_grad(&X, &d, |x| huber_loss(x, &target, 0.5, Reduction::Mean));
        close("huber", &l, &[0.255]);
        close(
            "huber grad",
            &g,
            &[
                0.0333333, -0.0833333, 0.0833333, -0.0833333, -0.0666667, -0.0166667,
            ],
        );

        let probs = t(&[0.0, 0.3, 0.7, 0.5, 0.25, 0.25], &[2, 3], &d);
        let (l, g) = loss_and_grad(&X, &d, |x| {
            kl_div(&x.log_softmax(-1)?, &probs, Reduction::BatchMean, false)
        });
        close("kl batchmean", &l, &[0.4143901]);
        close(
            "kl grad",
            &g,
            &[
                0.028365, -0.1448182, 0.1164531, 0.0356289, 0.0033413, -0.0389702,
            ],
        );
        let log_t = t(&[0.2, 0.3, 0.5, 0.5, 0.25, 0.25], &[2, 3], &d)
            .log()
            .unwrap();
        let (l, g) = loss_and_grad(&X, &d, |x| {
            kl_div(&x.log_softmax(-1)?, &log_t, Reduction::Sum, true)
        });
        close("kl log_target", &l, &[0.9699914]);
        close(
            "kl log_target grad",
            &g,
            &[
                -0.1432699, -0.2896363, 0.4329063, 0.0712578, 0.0066827, -0.0779405,
            ],
        );

        let tb = t(&[0.0, 1.0, 1.0, 1.0, 0.0, 0.3], &[2, 3], &d);
        let w = t(&[1.0, 2.0, 0.5], &[3], &d);
        let opts = BceOptions {
            weight: Some(&w),
            ..BceOptions::default()
        };
        let (l, g) = loss_and_grad(&[0.2, 0.7, 0.99, 0.5, 0.05, 0.6], &d, |p| {
            binary_cross_entropy(p, &tb, opts)
        });
        close("bce", &l, &[0.355763]);
        close(
            "bce grad",
            &g,
            &[
                0.2083333, -0.4761905, -0.0841751, -0.3333333, 0.3508772, 0.1041667,
            ],
        );

        let pw = t(&[1.5, 0.5, 3.0], &[3], &d);
        let opts = BceOptions {
            weight: Some(&w),
            pos_weight: Some(&pw),
            ..BceOptions::default()
        };
        let (l, g) = loss_and_grad(&[0.2, -1.5, 3.0, 0.9, 0.1, -30.0], &d, |z| {
            binary_cross_entropy_with_logits_with(z, &tb, opts)
        });
        close("bce logits", &l, &[3.0121596]);
        close(
            "bce logits grad",
            &g,
            &[
                0.091639, -0.1362624, -0.0118565, -0.0722626, 0.1749931, -0.075,
            ],
        );

        // Saturated probabilities: PyTorch's log clamp at -100, and a finite
        // (zero) gradient where the probability is exactly 0 or 1.
        let q = t(&[0.0, 1.0, 0.3], &[3], &d);
        q.requires_grad_(true).unwrap();
        let none = BceOptions {
            reduction: Reduction::None,
            ..BceOptions::default()
        };
        let l = binary_cross_entropy(&q, &t(&[1.0, 0.0, 0.0], &[3], &d), none).unwrap();
        close(
            "bce saturated",
            &l.to_vec_f32().unwrap(),
            &[100.0, 100.0, 0.35667497],
        );
        l.sum_all().unwrap().backward().unwrap();
        assert!(
            q.grad()
                .unwrap()
                .to_vec_f32()
                .unwrap()
                .iter()
                .all(|g| g.is_finite())
        );
    }
}

/// The target's gradient where the target is 0 (log_target false): PyTorch
/// computes `xlogy(t, t) - t * input`, whose `t`-gradient `log(t) + t / t`
/// is NaN there. torch 2.15, `F.kl_div(x, t, reduction=r)` with
/// `x = [-1, -2, -0.5]`, `t = [0, 0.5, 0]` both requiring grad:
/// loss 0.6534264 (sum), `t.grad = [nan, 2.3068528, nan]`,
/// `x.grad = [-0, -0.5, -0]`; "batchmean" over 3 rows (shape [3, 1])
/// divides both by 3.
#[test]
fn kl_div_target_gradient_is_nan_where_the_target_is_0() {
    for d in devices() {
        for (reduction, shape, scale) in [
            (Reduction::Sum, vec![3], 1.0),
            (Reduction::None, vec![3], 1.0),
            (Reduction::BatchMean, vec![3, 1], 1.0 / 3.0),
        ] {
            let x = t(&[-1.0, -2.0, -0.5], &shape, &d);
            let target = t(&[0.0, 0.5, 0.0], &shape, &d);
            x.requires_grad_(true).unwrap();
            target.requires_grad_(true).unwrap();
            let loss = kl_div(&x, &target, reduction, false).unwrap();
            let l = loss.to_vec_f32().unwrap();
            if reduction == Reduction::None {
                close("kl none", &l, &[0.0, 0.6534264, 0.0]);
            } else {
                close("kl", &l, &[0.6534264 * scale]);
            }
            loss.sum_all().unwrap().backward().unwrap();
            let gt = target.grad().unwrap().to_vec_f32().unwrap();
            assert!(
                gt[0].is_nan() && gt[2].is_nan(),
                "{reduction:?} on {d}: {gt:?}"
            );
            close("kl target grad", &gt[1..2], &[2.3068528 * scale]);
            let gx = x.grad().unwrap().to_vec_f32().unwrap();
            close("kl input grad", &gx, &[-0.0, -0.5 * scale, -0.0]);
            assert!(gx[0].is_sign_negative() && gx[2].is_sign_negative());
        }
    }
}

#[test]
fn bad_loss_arguments_are_errors() {
    let d = Device::Cpu;
    let x = t(&X, &[2, 3], &d);
    let e = huber_loss(&x, &x, 0.0, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(e.contains("huber_loss") && e.contains("delta"), "{e}");
    let e = kl_div(&x, &t(&[0.0; 3], &[3], &d), Reduction::Sum, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("kl_div") && e.contains("[2, 3]") && e.contains("[3]"),
        "{e}"
    );
    let pw = t(&[1.0], &[1], &d);
    let opts = BceOptions {
        pos_weight: Some(&pw),
        ..BceOptions::default()
    };
    assert!(binary_cross_entropy(&x, &x, opts).is_err());
    let w = t(&[1.0; 12], &[2, 2, 3], &d);
    let opts = BceOptions {
        weight: Some(&w),
        ..BceOptions::default()
    };
    let probs = t(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], &[2, 3], &d);
    let e = binary_cross_entropy(&probs, &probs, opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("[2, 2, 3]"), "{e}");
    let e = wgrad::nn::loss::cross_entropy(
        &x,
        &Tensor::from_vec(vec![0i32, 1], &[2], &d).unwrap(),
        wgrad::nn::loss::CrossEntropyOptions {
            reduction: Reduction::BatchMean,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("batchmean"), "{e}");
}

/// `F.cross_entropy(x, y, weight=w)`: index targets (one ignored) with and
/// without label smoothing under every reduction, and probability targets,
/// against PyTorch 2.15's losses (summed) and gradients.
#[test]
fn weighted_cross_entropy_matches_pytorch() {
    use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy_weighted};
    let x: [f32; 12] = [
        0.2, -1.5, 3.0, 0.9, 0.1, -0.3, 1.0, 2.0, -1.0, 0.0, 0.5, 0.25,
    ];
    let cases: [(f32, Reduction, f32, [f32; 12]); 4] = [
        (
            0.0,
            Reduction::Mean,
            0.2705394,
            [
                0.0212738, 0.0038864, -0.0251601, -0.0535928, 0.0320853, 0.0215074, 0.1297482,
                -0.1473077, 0.0175595, 0.0, 0.0, 0.0,
            ],
        ),
        (
            0.0,
            Reduction::None,
            1.0821576,
            [
                0.0850951, 0.0155455, -0.1006406, -0.2143711, 0.1283413, 0.0860298, 0.518993,
                -0.5892309, 0.0702381, 0.0, 0.0, 0.0,
            ],
        ),
        (
            0.2,
            Reduction::Mean,
            0.59499,
            [
                0.0124677, -0.0295333, 0.0170656, -0.0131237, 0.0094471, 0.0036766, 0.112765,
                -0.1041539, -0.0086111, 0.0, 0.0, 0.0,
            ],
        ),
        (
            0.2,
            Reduction::Sum,
            2.379_96,
            [
                0.0498708, -0.1181333, 0.0682625, -0.0524948, 0.0377885, 0.0147064, 0.4510601,
                -0.4166155, -0.0344445, 0.0, 0.0, 0.0,
            ],
        ),
    ];
    for d in devices() {
        let w = t(&[0.5, 2.0, 1.5], &[3], &d);
        let y = Tensor::from_vec(vec![2i32, 0, 1, -100], &[4], &d).unwrap();
        for (ls, reduction, loss, grad) in cases {
            let xs = t(&x, &[4, 3], &d);
            xs.requires_grad_(true).unwrap();
            let opts = CrossEntropyOptions {
                reduction,
                label_smoothing: ls,
                ..Default::default()
            };
            let l = cross_entropy_weighted(&xs, &y, &w, opts)
                .unwrap()
                .sum_all()
                .unwrap();
            l.backward().unwrap();
            let what = format!("ls {ls} {reduction:?} on {d:?}");
            close(&what, &l.to_vec_f32().unwrap(), &[loss]);
            close(&what, &xs.grad().unwrap().to_vec_f32().unwrap(), &grad);
        }
        let q = t(
            &[0.1, 0.2, 0.7, 1.0, 0.0, 0.0, 0.3, 0.3, 0.4, 0.0, 0.5, 0.5],
            &[4, 3],
            &d,
        );
        let xs = t(&x, &[4, 3], &d);
        xs.requires_grad_(true).unwrap();
        let opts = CrossEntropyOptions {
            label_smoothing: 0.1,
            ..Default::default()
        };
        let l = cross_entropy_weighted(&xs, &q, &w, opts).unwrap();
        l.backward().unwrap();
        close(
            "probability targets",
            &l.to_vec_f32().unwrap(),
            &[1.6756473],
        );
        close(
            "probability targets grad",
            &xs.grad().unwrap().to_vec_f32().unwrap(),
            &[
                0.0056207, -0.1028235, 0.0972027, -0.0333582, 0.0207662, 0.012592, 0.0495553,
                0.0861067, -0.135662, 0.10443, -0.062621, -0.0418091,
            ],
        );
        let e = cross_entropy_weighted(&xs, &y, &t(&[1.0; 4], &[4], &d), Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cross_entropy") && e.contains("weight") && e.contains("[4]"),
            "{e}"
        );
    }
}

/// Input and target on different devices: the error names the loss.
#[test]
fn losses_across_devices_name_the_loss() {
    let Some(g) = gpu() else { return };
    let x = t(&X, &[2, 3], &Device::Cpu);
    let y = t(&X, &[2, 3], &g);
    let e = huber_loss(&x, &y, 1.0, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(e.contains("huber_loss"), "{e}");
    let e = kl_div(&x, &y, Reduction::Sum, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("kl_div"), "{e}");
    let e = wgrad::nn::loss::mse_loss(&x, &y, Reduction::Mean)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mse_loss"), "{e}");
}

/// Finite differences agree with every new loss's gradient (CPU), away
/// from the kinks (huber's |d| = delta) and the probability clamps.
#[test]
fn new_losses_pass_gradcheck() {
    use wgrad::gradcheck::{GradcheckOptions, gradcheck};
    use wgrad::nn::loss::{CrossEntropyOptions, cross_entropy_weighted};
    let d = Device::Cpu;
    let target = t(&[0.0, -1.0, 1.0, 2.0, 0.5, -0.2], &[2, 3], &d);
    let probs = t(&[0.1, 0.3, 0.6, 0.5, 0.25, 0.25], &[2, 3], &d);
    let tb = t(&[0.0, 1.0, 1.0, 1.0, 0.0, 0.3], &[2, 3], &d);
    let w = t(&[1.0, 2.0, 0.5], &[3], &d);
    let pw = t(&[1.5, 0.5, 3.0], &[3], &d);
    let y = Tensor::from_vec(vec![2i32, -100], &[2], &d).unwrap();
    type Loss<'a> = Box<dyn Fn(&Tensor) -> Result<Tensor> + 'a>;
    let cases: Vec<(&str, Loss, [f32; 6])> = vec![
        (
            "huber",
            Box::new(|x| huber_loss(x, &target, 0.5, Reduction::Mean)),
            X,
        ),
        (
            "kl_div",
            Box::new(|x| kl_div(&x.log_softmax(-1)?, &probs, Reduction::BatchMean, false)),
            X,
        ),
        (
            "binary_cross_entropy",
            Box::new(|p| {
                let o = BceOptions {
                    weight: Some(&w),
                    ..BceOptions::default()
                };
                binary_cross_entropy(p, &tb, o)
            }),
            [0.2, 0.7, 0.9, 0.5, 0.15, 0.6],
        ),
        (
            "bce_with_logits",
            Box::new(|z| {
                let o = BceOptions {
                    weight: Some(&w),
                    pos_weight: Some(&pw),
                    ..BceOptions::default()
                };
                binary_cross_entropy_with_logits_with(z, &tb, o)
            }),
            X,
        ),
        (
            // The fused 'mean' over the samples not ignored.
            "cross_entropy mean, one sample ignored",
            Box::new(|x| {
                let o = CrossEntropyOptions {
                    label_smoothing: 0.1,
                    ..Default::default()
                };
                wgrad::nn::loss::cross_entropy(x, &y, o)
            }),
            X,
        ),
        (
            "cross_entropy_weighted",
            Box::new(|x| {
                let o = CrossEntropyOptions {
                    label_smoothing: 0.2,
                    ..Default::default()
                };
                cross_entropy_weighted(x, &y, &w, o)
            }),
            X,
        ),
    ];
    for (name, f, x0) in cases {
        let x = t(&x0, &[2, 3], &d).with_requires_grad(true).unwrap();
        let report = gradcheck(|xs| f(&xs[0]), &[x], GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        report.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// smooth_l1_loss and huber_loss where input - target is infinite: the
/// gradient is sign(d) (times delta), finite, as PyTorch 2.15's
/// `F.smooth_l1_loss([inf, -inf, 0.3, 2], 0, beta=1, reduction='sum')`
/// gives [1, -1, 0.3, 1] and `F.huber_loss(.., delta=2)` [2, -2, 0.3, 2].
#[test]
fn smooth_l1_and_huber_gradients_stay_finite_at_infinity() {
    use wgrad::nn::loss::smooth_l1_loss;
    let inf = f32::INFINITY;
    for d in devices() {
        let target = t(&[0.0; 4], &[4], &d);
        let x = t(&[inf, -inf, 0.3, 2.0], &[4], &d)
            .with_requires_grad(true)
            .unwrap();
        smooth_l1_loss(&x, &target, 1.0, Reduction::Sum)
            .unwrap()
            .backward()
            .unwrap();
        close(
            "smooth_l1",
            &x.grad().unwrap().to_vec_f32().unwrap(),
            &[1.0, -1.0, 0.3, 1.0],
        );
        let x = t(&[inf, -inf, 0.3, 2.0], &[4], &d)
            .with_requires_grad(true)
            .unwrap();
        huber_loss(&x, &target, 2.0, Reduction::Sum)
            .unwrap()
            .backward()
            .unwrap();
        close(
            "huber",
            &x.grad().unwrap().to_vec_f32().unwrap(),
            &[2.0, -2.0, 0.3, 2.0],
        );
    }
}

/// binary_cross_entropy_with_logits keeps its relative precision for
/// confident logits (the tail through log1p): PyTorch 2.15's
/// `F.binary_cross_entropy_with_logits([10, 15, -3, 0, 2.5], [1, 1, 0, .5, .3],
/// reduction='none')`.
#[test]
fn bce_with_logits_is_precise_for_confident_logits() {
    let want: [f32; 5] = [
        4.539_89e-5,
        3.059_023e-7,
        0.048_587_32,
        std::f32::consts::LN_2,
        1.828_889_7,
    ];
    for d in devices() {
        let x = t(&[10.0, 15.0, -3.0, 0.0, 2.5], &[5], &d);
        let y = t(&[1.0, 1.0, 0.0, 0.5, 0.3], &[5], &d);
        let o = BceOptions {
            reduction: Reduction::None,
            ..BceOptions::default()
        };
        let got = binary_cross_entropy_with_logits_with(&x, &y, o)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs() + 1e-12,
                "{g} vs PyTorch {w} on {d}"
            );
        }
    }
}

/// binary_cross_entropy refuses inputs outside [0, 1] (and NaN) with
/// PyTorch's message: on the CPU at once, on the GPU at the next readback
/// (a device check), never a meaningless loss.
#[test]
fn binary_cross_entropy_refuses_inputs_outside_the_unit_interval() {
    // A device of its own: the GPU's fault is the device's, and would
    // surface in whichever test reads back from a shared one next.
    let mut devices = vec![Device::Cpu];
    devices.extend(wgrad_test_support::own_gpu().map(Device::Gpu));
    for d in devices {
        let target = t(&[0.0, 1.0, 1.0], &[3], &d);
        for bad in [-0.5, 1.5, f32::NAN] {
            let x = t(&[0.2, bad, 0.9], &[3], &d);
            let o = BceOptions::default();
            let err = binary_cross_entropy(&x, &target, o)
                .and_then(|l| l.item())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("binary_cross_entropy") && err.contains("between 0 and 1"),
                "{bad} on {d}: {err}"
            );
        }
        // 0 and 1 themselves (saturated sigmoids) are fine.
        let x = t(&[0.0, 1.0, 0.5], &[3], &d);
        let loss = binary_cross_entropy(&x, &target, BceOptions::default())
            .unwrap()
            .item()
            .unwrap();
        assert!(loss.is_finite(), "{loss} on {d}");
    }
}
