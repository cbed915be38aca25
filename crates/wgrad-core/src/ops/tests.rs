//! Unit tests of the op selectors: codes, `ALL` lists, reference
//! semantics and derivatives.

use super::*;

#[test]
fn all_lists_every_variant_in_code_order() {
    // A new variant gets the next code; forgetting it in ALL leaves a gap
    // or a short list, and the `match` in code() forces it a code.
    for (i, op) in BinaryOp::ALL.iter().enumerate() {
        assert_eq!(op.code(), i as u32, "{}", op.name());
    }
    for (i, op) in CompareOp::ALL.iter().enumerate() {
        assert_eq!(op.code(), i as u32, "{}", op.name());
    }
    for (i, op) in UnaryOp::ALL.iter().enumerate() {
        assert_eq!(op.code(), i as u32, "{}", op.name());
    }
}

/// Exhaustive matches: a new variant stops this test compiling until it
/// is placed here; as the last variant it must then also end `ALL`
/// (and `all_lists_every_variant_in_code_order` checks the codes).
#[test]
fn all_ends_with_the_last_variant() {
    let binary_last = |op: BinaryOp| match op {
        BinaryOp::Remainder => true,
        BinaryOp::Minimum
        | BinaryOp::FloorDiv
        | BinaryOp::Add
        | BinaryOp::Sub
        | BinaryOp::Mul
        | BinaryOp::Div
        | BinaryOp::Pow
        | BinaryOp::Maximum => false,
    };
    assert!(BinaryOp::ALL.last().is_some_and(|&op| binary_last(op)));
    let compare_last = |op: CompareOp| match op {
        CompareOp::Ge => true,
        CompareOp::Eq | CompareOp::Ne | CompareOp::Lt | CompareOp::Le | CompareOp::Gt => false,
    };
    assert!(CompareOp::ALL.last().is_some_and(|&op| compare_last(op)));
    // UnaryOp::code() is itself an exhaustive match; its highest code
    // (the last variant's) must be ALL's last slot.
    assert_eq!(UnaryOp::ALL.len(), UnaryOp::GeluTanh.code() as usize + 1);
}

#[test]
fn erf_matches_known_values() {
    for (x, want) in [
        (0.0, 0.0),
        (0.5, 0.520_499_9),
        (1.0, 0.842_700_8),
        (-2.0, -0.995_322_3),
        (1e-3, 1.128_379_e-3),
        (-0.3, -0.328_626_76),
        (10.0, 1.0),
        (f32::NEG_INFINITY, -1.0),
    ] {
        // Relative near 0 (the Taylor branch), absolute elsewhere.
        assert!(
            (erf(x) - want).abs() <= 2e-7 * want.abs().max(1e-3),
            "erf({x}) = {} want {want}",
            erf(x)
        );
    }
}

/// Every op (`UnaryOp::ALL`, so a new variant is covered without a
/// list to edit), parameterised variants with parameters that exercise
/// them, plus one-sided clamps.
fn all_ops() -> Vec<UnaryOp> {
    let mut ops: Vec<UnaryOp> = UnaryOp::ALL
        .into_iter()
        .map(|op| match op {
            UnaryOp::LeakyRelu { .. } => UnaryOp::LeakyRelu { slope: 0.1 },
            UnaryOp::Clamp { .. } => UnaryOp::Clamp {
                min: Some(-0.5),
                max: Some(1.5),
            },
            UnaryOp::Softplus { .. } => UnaryOp::Softplus {
                beta: 2.0,
                threshold: 3.0,
            },
            UnaryOp::Elu { .. } => UnaryOp::Elu { alpha: 0.7 },
            UnaryOp::Hardtanh { .. } => UnaryOp::Hardtanh {
                min: -0.5,
                max: 2.0,
            },
            op => op,
        })
        .collect();
    ops.extend([
        UnaryOp::Softplus {
            beta: 1.0,
            threshold: 20.0,
        },
        UnaryOp::Elu { alpha: 1.0 },
        UnaryOp::Clamp {
            min: None,
            max: Some(0.25),
        },
        UnaryOp::Clamp {
            min: Some(-1.0),
            max: None,
        },
    ]);
    ops
}

/// Whether `x` is far enough from a kink of `op` (and inside its
/// domain) that a central difference with step `h` is meaningful.
fn smooth_at(op: UnaryOp, x: f32, h: f32) -> bool {
    let near = |k: f32| (x - k).abs() <= 2.0 * h;
    match op {
        UnaryOp::Abs | UnaryOp::Relu | UnaryOp::LeakyRelu { .. } => !near(0.0),
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt => x > 0.2,
        UnaryOp::Recip => x.abs() > 0.2,
        UnaryOp::Clamp { .. } | UnaryOp::Hardtanh { .. } => {
            let [lo, hi] = op.params();
            !near(lo) && !near(hi)
        }
        UnaryOp::Log1p => x > -0.8,
        UnaryOp::Sign | UnaryOp::Elu { .. } => !near(0.0),
        // Steps at the integers (floor, ceil) or the halves (round).
        UnaryOp::Floor | UnaryOp::Ceil => !near(x.round()),
        UnaryOp::Round => !near(x.floor() + 0.5),
        // PyTorch's switch to the linear regime is a (tiny) jump.
        UnaryOp::Softplus { beta, threshold } => !near(threshold / beta),
        _ => true,
    }
}

#[test]
fn derivative_matches_central_differences() {
    // The function is f32, so the step is moderate (rounding of f / h
    // would dominate a tiny one) and the tolerance relative.
    let h = 1e-2f32;
    let mut checked = 0;
    for op in all_ops() {
        for i in -40..=40 {
            let x = i as f32 * 0.137 + 0.011;
            if !smooth_at(op, x, h) {
                continue;
            }
            let fd = (op.apply(x + h) - op.apply(x - h)) / (2.0 * h);
            let d = op.derivative(x);
            // Truncation error is about h^2 / 6 times the third derivative.
            let scale = 1.0 + d.abs().max(op.apply(x).abs());
            assert!(
                (fd - d).abs() <= 2e-3 * scale,
                "{}'({x}) = {d}, finite difference {fd}",
                op.name()
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} points checked");
}

#[test]
fn derivative_kinks_follow_torch() {
    assert_eq!(UnaryOp::Relu.derivative(0.0), 0.0);
    assert_eq!(UnaryOp::Relu.derivative(1e-30), 1.0);
    assert_eq!(UnaryOp::Abs.derivative(0.0), 0.0);
    assert_eq!(UnaryOp::Abs.derivative(-3.0), -1.0);
    let leaky = UnaryOp::LeakyRelu { slope: 0.2 };
    assert_eq!(leaky.derivative(0.0), 0.2);
    assert_eq!(leaky.derivative(-5.0), 0.2);
    assert_eq!(leaky.derivative(5.0), 1.0);
    let clamp = UnaryOp::Clamp {
        min: Some(-1.0),
        max: Some(2.0),
    };
    // torch.clamp's backward (2.15, scalar bounds): grad strictly inside.
    for (x, want) in [
        (-1.5, 0.0),
        (-1.0, 0.0),
        (0.0, 1.0),
        (2.0, 0.0),
        (2.5, 0.0),
        (f32::NAN, 0.0),
    ] {
        assert_eq!(clamp.derivative(x), want, "clamp'({x})");
    }
    let open = UnaryOp::Clamp {
        min: None,
        max: None,
    };
    assert_eq!(open.derivative(-1e30), 1.0);
}

#[test]
fn derivative_known_values() {
    // Closed forms evaluated in f64 (= torch.autograd.grad in float64).
    let cases = [
        (UnaryOp::Gelu, 1.0, 1.083_315_5),
        (UnaryOp::Gelu, -0.5, 0.132_504_88),
        (UnaryOp::Silu, 1.0, 0.927_670_5),
        (UnaryOp::Sigmoid, 0.0, 0.25),
        (UnaryOp::Tanh, 0.5, 0.786_447_7),
        (UnaryOp::Rsqrt, 4.0, -0.062_5),
        (UnaryOp::Sqrt, 4.0, 0.25),
        (UnaryOp::Log, 2.0, 0.5),
        (UnaryOp::Recip, 2.0, -0.25),
        (UnaryOp::Cos, 1.0, -0.841_470_96),
        (UnaryOp::Exp, 1.0, std::f32::consts::E),
        (UnaryOp::Square, -3.0, -6.0),
        (UnaryOp::Neg, 7.0, -1.0),
        // torch.autograd.grad of the new ops in float64.
        (UnaryOp::Log1p, 0.5, 0.666_666_7),
        (UnaryOp::Expm1, 0.5, 1.648_721_3),
        (UnaryOp::Mish, 0.5, 0.886_424_4),
        (UnaryOp::Mish, -1.5, -0.064_097_82),
        (UnaryOp::GeluTanh, 1.0, 1.082_964),
        (UnaryOp::GeluTanh, -0.5, 0.132_630_1),
        (UnaryOp::Elu { alpha: 2.0 }, 0.0, 2.0),
        (UnaryOp::Elu { alpha: 2.0 }, -1.0, 0.735_758_9),
        (
            UnaryOp::Softplus {
                beta: 2.0,
                threshold: 20.0,
            },
            0.25,
            0.622_459_3,
        ),
        (UnaryOp::Sign, 3.0, 0.0),
        (UnaryOp::Round, 0.3, 0.0),
    ];
    for (op, x, want) in cases {
        let d = op.derivative(x);
        // erf (A&S 7.1.26) is good to 1.5e-7; the rest to f32 rounding.
        assert!(
            (d - want).abs() <= 1e-6,
            "{}'({x}) = {d}, want {want}",
            op.name()
        );
    }
}

#[test]
fn derivative_tails_stay_finite_and_accurate() {
    // Naive 1 - tanh^2 and s * (1 - s) round to exactly 0 here.
    let t = UnaryOp::Tanh.derivative(12.0);
    assert!((t / 1.510_053_8e-10 - 1.0).abs() < 1e-4, "tanh'(12) = {t}");
    let s = UnaryOp::Sigmoid.derivative(30.0);
    assert!((s / 9.357_623e-14 - 1.0).abs() < 1e-4, "sigmoid'(30) = {s}");
    assert_eq!(UnaryOp::Sigmoid.derivative(-200.0), 0.0);
    assert_eq!(UnaryOp::Tanh.derivative(f32::INFINITY), 0.0);
    assert!(UnaryOp::Silu.derivative(-200.0).abs() < 1e-30);
    assert!((UnaryOp::Gelu.derivative(20.0) - 1.0).abs() < 1e-6);
}

#[test]
fn gelu_matches_torch() {
    // torch.nn.functional.gelu(torch.tensor([-1.0, 0.5, 2.0]))
    let want = [-0.158_655_25, 0.345_731_14, 1.954_499_8];
    for (x, w) in [-1.0f32, 0.5, 2.0].into_iter().zip(want) {
        assert!((UnaryOp::Gelu.apply(x) - w).abs() < 1e-6);
    }
}

#[test]
fn new_ops_match_torch_values() {
    // torch 2.15 (float32) on each input.
    let nan = f32::NAN;
    let cases: &[(UnaryOp, f32, f32)] = &[
        (UnaryOp::Log1p, 1e-10, 1e-10),
        (UnaryOp::Log1p, -1.0, f32::NEG_INFINITY),
        (UnaryOp::Expm1, 1e-10, 1e-10),
        (UnaryOp::Expm1, -1e-10, -1e-10),
        (UnaryOp::Expm1, f32::NEG_INFINITY, -1.0),
        (UnaryOp::Round, 0.5, 0.0),
        (UnaryOp::Round, 1.5, 2.0),
        (UnaryOp::Round, 2.5, 2.0),
        (UnaryOp::Round, -2.5, -2.0),
        (UnaryOp::Floor, -0.5, -1.0),
        (UnaryOp::Ceil, -0.5, -0.0),
        (UnaryOp::Sign, -0.0, 0.0),
        (UnaryOp::Sign, -2.0, -1.0),
        (UnaryOp::Mish, f32::INFINITY, f32::INFINITY),
        (UnaryOp::Mish, 1.0, 0.865_098_4),
        (UnaryOp::GeluTanh, 1.0, 0.841_192),
        (UnaryOp::GeluTanh, f32::INFINITY, f32::INFINITY),
        (UnaryOp::Elu { alpha: 1.0 }, -1.0, -0.632_120_56),
        (
            UnaryOp::Softplus {
                beta: 1.0,
                threshold: 20.0,
            },
            20.5,
            20.5,
        ),
        (
            UnaryOp::Softplus {
                beta: 1.0,
                threshold: 20.0,
            },
            0.0,
            std::f32::consts::LN_2,
        ),
        (
            UnaryOp::Hardtanh {
                min: -1.0,
                max: 1.0,
            },
            3.0,
            1.0,
        ),
    ];
    for &(op, x, want) in cases {
        let got = op.apply(x);
        assert!(
            got == want || (got - want).abs() <= 1e-6 * want.abs().max(1e-30),
            "{}({x}) = {got}, want {want}",
            op.name()
        );
    }
    // NaN in, NaN out, except sign (0, as torch.sign).
    for op in UnaryOp::ALL {
        if op == UnaryOp::Sign {
            assert_eq!(op.apply(nan).to_bits(), 0, "sign(NaN)");
            assert_eq!(op.apply(-0.0).to_bits(), 0, "sign(-0)");
            continue;
        }
        assert!(op.apply(nan).is_nan(), "{}(NaN)", op.name());
    }
    // -inf through mish and tanh-GELU is NaN in torch as well (-inf * 0).
    assert!(UnaryOp::Mish.apply(f32::NEG_INFINITY).is_nan());
    let ht = UnaryOp::Hardtanh {
        min: -1.0,
        max: 1.0,
    };
    assert_eq!(ht.derivative(1.0), 0.0);
    assert_eq!(ht.derivative(-1.0), 0.0);
    assert_eq!(ht.derivative(0.5), 1.0);
}
