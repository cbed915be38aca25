//! Losses on the CPU against values worked out by hand (the same numbers
//! torch.nn.functional gives), reductions, label smoothing, ignore_index,
//! error cases, and gradcheck of every loss.

use wgrad_autograd::gradcheck::{GradcheckOptions, gradcheck};
use wgrad_autograd::{DType, Device, Error, Tensor};
use wgrad_nn::Reduction;
use wgrad_nn::loss::{
    CrossEntropyOptions, binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss,
    nll_loss, nll_loss_with, smooth_l1_loss,
};
use wgrad_test_support::assert_close;

const CPU: Device = Device::Cpu;

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &CPU).unwrap()
}

fn labels(values: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &CPU).unwrap()
}

fn leaf(values: &[f32], shape: &[usize]) -> Tensor {
    t(values, shape).with_requires_grad(true).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

fn ce(reduction: Reduction, label_smoothing: f32, ignore_index: i32) -> CrossEntropyOptions {
    CrossEntropyOptions {
        reduction,
        label_smoothing,
        ignore_index,
    }
}

// Logits [[1, 2, 3], [1, 0, -1]]: log(e + e^2 + e^3) = 3.4076059644, and
// row 1 is row 0 shifted by -2, so -logp = [2.4076, 1.4076, 0.4076] and
// [0.4076, 1.4076, 2.4076]. With targets [2, 1] the losses are 0.4076 and 1.4076.
const LOGITS: [f32; 6] = [1., 2., 3., 1., 0., -1.];
const CE_ROWS: [f32; 2] = [0.407_606, 1.407_606];

#[test]
fn cross_entropy_matches_hand_values() {
    let x = leaf(&LOGITS, &[2, 3]);
    let y = labels(&[2, 1], &[2]);
    assert_close(
        &values(&cross_entropy(&x, &y, ce(Reduction::None, 0.0, -100)).unwrap()),
        &CE_ROWS,
        1e-6,
        "none",
    );
    assert_close(
        &values(&cross_entropy(&x, &y, ce(Reduction::Sum, 0.0, -100)).unwrap()),
        &[1.815_212],
        1e-6,
        "sum",
    );
    let mean = cross_entropy(&x, &y, CrossEntropyOptions::default()).unwrap();
    assert_eq!(mean.shape(), Vec::<usize>::new());
    assert_close(&[mean.item().unwrap()], &[0.907_606], 1e-6, "mean");
    // d mean / d logits = (softmax - onehot) / N; softmax(row 0) = [0.0900, 0.2447, 0.6652].
    mean.backward().unwrap();
    let want = [
        0.045_015_29,
        0.122_364_24,
        -0.167_379_52,
        0.332_620_48,
        -0.377_635_76,
        0.045_015_29,
    ];
    assert_close(&values(&x.grad().unwrap()), &want, 1e-6, "grad");
}

#[test]
fn cross_entropy_label_smoothing() {
    // loss = 0.9 * nll + 0.1 / 3 * sum(-logp); sum(-logp) = 4.2228179 in both rows.
    let x = leaf(&LOGITS, &[2, 3]);
    let y = labels(&[2, 1], &[2]);
    let per = cross_entropy(&x, &y, ce(Reduction::None, 0.1, -100)).unwrap();
    assert_close(&values(&per), &[0.507_606, 1.407_606], 1e-6, "smoothed");
    let mean = cross_entropy(&x, &y, ce(Reduction::Mean, 0.1, -100)).unwrap();
    assert_close(&[mean.item().unwrap()], &[0.957_606], 1e-6, "smoothed mean");
    // Gradient: (softmax - 0.9 * onehot - 0.1 / 3) / N.
    mean.backward().unwrap();
    let want = [
        0.028_348_62,
        0.105_697_57,
        -0.134_046_2,
        0.315_953_81,
        -0.344_302_43,
        0.028_348_62,
    ];
    assert_close(&values(&x.grad().unwrap()), &want, 1e-6, "smoothed grad");
    // Full smoothing is the uniform target: loss = mean(-logp) = 4.2228 / 3.
    let full = cross_entropy(&x, &y, ce(Reduction::None, 1.0, -100)).unwrap();
    assert_close(&values(&full), &[1.407_606, 1.407_606], 1e-6, "uniform");
}

#[test]
fn cross_entropy_ignore_index() {
    let x = leaf(&LOGITS, &[2, 3]);
    let y = labels(&[2, -100], &[2]);
    assert_close(
        &values(&cross_entropy(&x, &y, ce(Reduction::None, 0.0, -100)).unwrap()),
        &[0.407_606, 0.0],
        1e-6,
        "none",
    );
    assert_close(
        &values(&cross_entropy(&x, &y, ce(Reduction::Sum, 0.0, -100)).unwrap()),
        &[0.407_606],
        1e-6,
        "sum",
    );
    // Mean divides by the one counted target, not by N = 2.
    let mean = cross_entropy(&x, &y, CrossEntropyOptions::default()).unwrap();
    assert_close(&[mean.item().unwrap()], &[0.407_606], 1e-6, "mean");
    mean.backward().unwrap();
    let g = values(&x.grad().unwrap());
    assert_close(
        &g,
        &[0.090_030_57, 0.244_728_47, -0.334_759_04, 0.0, 0.0, 0.0],
        1e-6,
        "grad",
    );
    // A custom ignore_index (here class 1), also with smoothing: the ignored
    // row gets no loss and no smoothing term.
    let y = labels(&[2, 1], &[2]);
    let m = cross_entropy(&x, &y, ce(Reduction::Mean, 0.1, 1)).unwrap();
    assert_close(&[m.item().unwrap()], &[0.507_606], 1e-6, "custom ignore");
    // Everything ignored: the mean is 0/0 = NaN, as in torch.
    let none = labels(&[-100, -100], &[2]);
    assert!(
        cross_entropy(&x, &none, CrossEntropyOptions::default())
            .unwrap()
            .item()
            .unwrap()
            .is_nan()
    );
}

#[test]
fn cross_entropy_shapes_like_torch() {
    // [C] with a 0-d target.
    let x = t(&LOGITS[..3], &[3]);
    let loss = cross_entropy(&x, &labels(&[0], &[]), ce(Reduction::None, 0.0, -100)).unwrap();
    assert_eq!(loss.shape(), Vec::<usize>::new());
    assert_close(&values(&loss), &[2.407_606], 1e-6, "1-D");
    // [N, C, d]: logits[0, c, j] = LOGITS row j, targets [[2, 1]].
    let x = t(&[1., 1., 2., 0., 3., -1.], &[1, 3, 2]);
    let loss = cross_entropy(
        &x,
        &labels(&[2, 1], &[1, 2]),
        ce(Reduction::None, 0.0, -100),
    )
    .unwrap();
    assert_eq!(loss.shape(), vec![1, 2]);
    assert_close(&values(&loss), &CE_ROWS, 1e-6, "K-dim");
    let mean = cross_entropy(
        &x,
        &labels(&[2, 1], &[1, 2]),
        CrossEntropyOptions::default(),
    )
    .unwrap();
    assert_close(&[mean.item().unwrap()], &[0.907_606], 1e-6, "K-dim mean");
    // Probability targets: one-hot rows give the index result; smoothing mixes in 1/C.
    let x = t(&LOGITS, &[2, 3]);
    let p = t(&[0., 0., 1., 0., 1., 0.], &[2, 3]);
    assert_close(
        &values(&cross_entropy(&x, &p, ce(Reduction::None, 0.0, -100)).unwrap()),
        &CE_ROWS,
        1e-6,
        "soft",
    );
    assert_close(
        &values(&cross_entropy(&x, &p, ce(Reduction::None, 0.1, -100)).unwrap()),
        &[0.507_606, 1.407_606],
        1e-6,
        "soft smoothed",
    );
    let half = t(&[0.5, 0., 0.5, 0., 0., 1.], &[2, 3]);
    assert_close(
        &values(&cross_entropy(&x, &half, ce(Reduction::Mean, 0.0, -100)).unwrap()),
        &[(1.407_606 + 2.407_606) / 2.0],
        1e-6,
        "soft mean",
    );
}

#[test]
fn cross_entropy_errors() {
    let x = t(&LOGITS, &[2, 3]);
    // Out-of-range class (CPU: immediately).
    let e = cross_entropy(&x, &labels(&[3, 0], &[2]), CrossEntropyOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 3,
                size: 3,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(
        cross_entropy(&x, &labels(&[-1, 0], &[2]), CrossEntropyOptions::default()),
        Err(Error::IndexOutOfRange { index: -1, .. })
    ));
    // Target shape must be the logits' without the class dim.
    let e = cross_entropy(
        &x,
        &labels(&[0, 0, 0], &[3]),
        CrossEntropyOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { .. }) && e.to_string().contains("[2, 3]"),
        "{e}"
    );
    assert!(
        cross_entropy(
            &t(&[1.0], &[]),
            &labels(&[0], &[]),
            CrossEntropyOptions::default()
        )
        .is_err()
    );
    // Dtype: U32 targets are neither indices nor probabilities.
    let u = Tensor::from_vec(vec![0u32, 1], &[2], &CPU).unwrap();
    assert!(matches!(
        cross_entropy(&x, &u, CrossEntropyOptions::default()),
        Err(Error::DTypeMismatch { .. })
    ));
    // Smoothing range.
    assert!(
        cross_entropy(&x, &labels(&[0, 0], &[2]), ce(Reduction::Mean, 1.5, -100))
            .unwrap_err()
            .to_string()
            .contains("label_smoothing")
    );
}

#[test]
fn nll_loss_picks_negative_log_probs() {
    let lp = leaf(&[-0.5, -1.0, -2.0, -0.1, -3.0, -2.5], &[2, 3]);
    let y = labels(&[1, 0], &[2]);
    assert_close(
        &values(&nll_loss(&lp, &y, Reduction::None).unwrap()),
        &[1.0, 0.1],
        1e-6,
        "none",
    );
    assert_close(
        &values(&nll_loss(&lp, &y, Reduction::Sum).unwrap()),
        &[1.1],
        1e-6,
        "sum",
    );
    let mean = nll_loss(&lp, &y, Reduction::Mean).unwrap();
    assert_close(&[mean.item().unwrap()], &[0.55], 1e-6, "mean");
    mean.backward().unwrap();
    assert_close(
        &values(&lp.grad().unwrap()),
        &[0., -0.5, 0., -0.5, 0., 0.],
        1e-6,
        "grad",
    );
    // -100 is ignored by default: no loss, no count, no fault.
    let y = labels(&[1, -100], &[2]);
    assert_close(
        &values(&nll_loss(&lp, &y, Reduction::None).unwrap()),
        &[1.0, 0.0],
        1e-6,
        "ignored none",
    );
    assert_close(
        &values(&nll_loss(&lp, &y, Reduction::Mean).unwrap()),
        &[1.0],
        1e-6,
        "ignored mean",
    );
    assert_close(
        &values(&nll_loss_with(&lp, &labels(&[1, 0], &[2]), Reduction::Mean, 0).unwrap()),
        &[1.0],
        1e-6,
        "custom ignore",
    );
    // nll_loss(log_softmax(x)) == cross_entropy(x).
    let x = t(&LOGITS, &[2, 3]);
    let via_nll = nll_loss(
        &x.log_softmax(1).unwrap(),
        &labels(&[2, 1], &[2]),
        Reduction::None,
    )
    .unwrap();
    assert_close(&values(&via_nll), &CE_ROWS, 1e-6, "nll of log_softmax");
    assert!(matches!(
        nll_loss(&lp, &labels(&[3, 0], &[2]), Reduction::Mean),
        Err(Error::IndexOutOfRange { index: 3, .. })
    ));
    assert!(matches!(
        nll_loss(&lp, &t(&[1.0, 0.0], &[2]), Reduction::Mean),
        Err(Error::DTypeMismatch {
            expected: DType::I32,
            ..
        })
    ));
}

#[test]
fn mse_and_l1_losses() {
    let x = leaf(&[1., 2., 3.], &[3]);
    let y = t(&[1.5, 2., 2.], &[3]);
    assert_close(
        &values(&mse_loss(&x, &y, Reduction::None).unwrap()),
        &[0.25, 0., 1.],
        1e-6,
        "mse none",
    );
    assert_close(
        &values(&mse_loss(&x, &y, Reduction::Sum).unwrap()),
        &[1.25],
        1e-6,
        "mse sum",
    );
    let mean = mse_loss(&x, &y, Reduction::Mean).unwrap();
    assert_close(&[mean.item().unwrap()], &[1.25 / 3.0], 1e-6, "mse mean");
    mean.backward().unwrap();
    // 2 (x - y) / 3.
    assert_close(
        &values(&x.grad().unwrap()),
        &[-1. / 3., 0., 2. / 3.],
        1e-6,
        "mse grad",
    );
    assert_close(
        &values(&l1_loss(&x, &y, Reduction::Mean).unwrap()),
        &[0.5],
        1e-6,
        "l1 mean",
    );
    let e = mse_loss(&x, &t(&[1., 2.], &[2]), Reduction::Mean).unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { op: "mse_loss", .. }),
        "{e}"
    );
}

#[test]
fn smooth_l1_loss_switches_at_beta() {
    let x = t(&[0., 0.5, 3., -2.], &[4]);
    let y = t(&[0., 0., 0., 0.], &[4]);
    // beta 1: 0.5 d^2 for d < 1, d - 0.5 otherwise.
    assert_close(
        &values(&smooth_l1_loss(&x, &y, 1.0, Reduction::None).unwrap()),
        &[0., 0.125, 2.5, 1.5],
        1e-6,
        "beta 1",
    );
    assert_close(
        &values(&smooth_l1_loss(&x, &y, 1.0, Reduction::Mean).unwrap()),
        &[1.03125],
        1e-6,
        "beta 1 mean",
    );
    // beta 2: 0.5 d^2 / 2 below 2, d - 1 from 2 on.
    assert_close(
        &values(&smooth_l1_loss(&x, &y, 2.0, Reduction::None).unwrap()),
        &[0., 0.0625, 2.0, 1.0],
        1e-6,
        "beta 2",
    );
    // beta 0: L1.
    assert_close(
        &values(&smooth_l1_loss(&x, &y, 0.0, Reduction::Sum).unwrap()),
        &[5.5],
        1e-6,
        "beta 0",
    );
    assert!(smooth_l1_loss(&x, &y, -1.0, Reduction::Mean).is_err());
}

#[test]
fn bce_with_logits_is_stable() {
    // max(x, 0) - x t + log(1 + exp(-|x|)) at x = [0, 2, -1], t = [1, 0, 0.5]:
    // [ln 2, 2 + ln(1 + e^-2), 0.5 + ln(1 + e^-1)].
    let x = leaf(&[0., 2., -1.], &[3]);
    let y = t(&[1., 0., 0.5], &[3]);
    let per = binary_cross_entropy_with_logits(&x, &y, Reduction::None).unwrap();
    assert_close(
        &values(&per),
        &[std::f32::consts::LN_2, 2.126_928, 0.813_261_7],
        1e-6,
        "none",
    );
    let mean = binary_cross_entropy_with_logits(&x, &y, Reduction::Mean).unwrap();
    assert_close(&[mean.item().unwrap()], &[1.211_112_3], 1e-6, "mean");
    // Gradient (sigmoid(x) - t) / 3, exact also at x = 0.
    mean.backward().unwrap();
    assert_close(
        &values(&x.grad().unwrap()),
        &[-1. / 6., 0.293_599_03, -0.077_019_53],
        1e-6,
        "grad",
    );
    // Huge logits neither overflow nor lose the loss.
    let big = t(&[100., -100., 100.], &[3]);
    let tb = t(&[1., 0., 0.], &[3]);
    assert_close(
        &values(&binary_cross_entropy_with_logits(&big, &tb, Reduction::None).unwrap()),
        &[0., 0., 100.],
        1e-6,
        "huge",
    );
    assert!(binary_cross_entropy_with_logits(&x, &t(&[1.], &[1]), Reduction::Mean).is_err());
    // Infinite and confident logits as PyTorch 2.15 gives them: +inf
    // (t < 1) is an infinite loss and a gradient of 1 - t, -inf a NaN loss
    // and a gradient of -t; the tail keeps 9.3576e-14 at x = 30, t = 1.
    let inf = f32::INFINITY;
    let xs = leaf(&[inf, -inf, 30., -30., 30.], &[5]);
    let ts = t(&[0.25, 0.25, 0., 1., 1.], &[5]);
    let per = binary_cross_entropy_with_logits(&xs, &ts, Reduction::None).unwrap();
    let got = values(&per);
    assert_eq!(got[0], inf);
    assert!(got[1].is_nan());
    assert_close(&got[2..], &[30., 30., 9.357_623e-14], 1e-6, "confident");
    per.narrow(0, 0, 1)
        .unwrap()
        .add(&per.narrow(0, 2, 3).unwrap().sum_all().unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let g = values(&xs.grad().unwrap());
    assert_close(
        &[g[0], g[2], g[3]],
        &[0.75, 1., -1.],
        1e-6,
        "infinite grads",
    );
}

#[test]
fn reduction_default_is_mean() {
    assert_eq!(Reduction::default(), Reduction::Mean);
    let o = CrossEntropyOptions::default();
    assert_eq!(
        (o.reduction, o.label_smoothing, o.ignore_index),
        (Reduction::Mean, 0.0, -100)
    );
}

// ------------------------------------------------------------------ gradcheck

fn check(f: impl Fn(&[Tensor]) -> wgrad_autograd::Result<Tensor>, inputs: &[Tensor]) {
    let report = gradcheck(f, inputs, GradcheckOptions::default()).unwrap();
    assert!(report.checked > 0);
    report.check().unwrap();
}

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn_with(shape, 0.0, 1.5, seed, &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

#[test]
fn gradcheck_cross_entropy() {
    let y = labels(&[0, 3, -100, 2, 3], &[5]);
    for (reduction, ls) in [
        (Reduction::Mean, 0.0),
        (Reduction::Sum, 0.2),
        (Reduction::None, 0.1),
    ] {
        check(
            |a| cross_entropy(&a[0], &y, ce(reduction, ls, -100)),
            &[randn(&[5, 4], 1)],
        );
    }
    // A transposed (strided) logits view goes through the fused op too.
    check(
        |a| cross_entropy(&a[0].t()?, &y, CrossEntropyOptions::default()),
        &[randn(&[4, 5], 2)],
    );
    // K-dim and probability targets.
    let yk = labels(&[0, 2, 1, 1], &[2, 2]);
    check(
        |a| cross_entropy(&a[0], &yk, ce(Reduction::Mean, 0.1, -100)),
        &[randn(&[2, 3, 2], 3)],
    );
    let p = Tensor::rand_with(&[3, 4], 0.0, 1.0, 4, &CPU).unwrap();
    check(
        |a| cross_entropy(&a[0], &p, ce(Reduction::Mean, 0.1, -100)),
        &[randn(&[3, 4], 5)],
    );
}

#[test]
fn gradcheck_nll_loss() {
    let y = labels(&[1, -100, 0, 2], &[4]);
    check(
        |a| nll_loss(&a[0].log_softmax(1)?, &y, Reduction::Mean),
        &[randn(&[4, 3], 6)],
    );
}

#[test]
fn gradcheck_regression_and_binary_losses() {
    let target = Tensor::randn_with(&[3, 4], 0.0, 1.0, 7, &CPU).unwrap();
    check(
        |a| mse_loss(&a[0], &a[1], Reduction::Mean),
        &[randn(&[3, 4], 8), randn(&[3, 4], 9)],
    );
    // Points away from the kink at |d| = beta (finite differences straddle it).
    check(
        |a| smooth_l1_loss(&a[0], &target, 1.0, Reduction::Sum),
        &[t(
            &[
                0.3, -0.2, 2.0, -3.0, 0.5, 1.7, -0.6, 0.9, 2.2, 0.1, -1.4, 0.4,
            ],
            &[3, 4],
        )
        .add(&target)
        .unwrap()
        .detach()
        .with_requires_grad(true)
        .unwrap()],
    );
    let probs = Tensor::rand_with(&[3, 4], 0.0, 1.0, 10, &CPU).unwrap();
    check(
        |a| binary_cross_entropy_with_logits(&a[0], &probs, Reduction::Mean),
        &[randn(&[3, 4], 11)],
    );
    // At exactly x = 0 the gradient is sigmoid(0) - t (no kink from |x|).
    check(
        |a| binary_cross_entropy_with_logits(&a[0], &probs, Reduction::Sum),
        &[Tensor::zeros(&[3, 4], &CPU)
            .unwrap()
            .with_requires_grad(true)
            .unwrap()],
    );
}
