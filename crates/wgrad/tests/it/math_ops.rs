//! Math ops of the transformer issue beyond the unary selectors (which the
//! `UnaryOp::ALL` loops cover): `clamp_tensor`, `logsumexp`, `prod`, `std`,
//! `norm`, `max_dim`/`min_dim`, `argmax_all`/`argmin_all`. Finite-difference
//! gradchecks on the CPU, GPU-vs-CPU parity of values and gradients, edge
//! cases (0-d, empty, NaN, infinities, non-contiguous views, zeros in prod,
//! ties) and bad input. PyTorch ground truth: `fixtures_ops.rs`.

use crate::common::{gpu, max_rel_err};
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::{DType, Device, Result, Tensor, UnaryOp};

fn f(data: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape, device).unwrap()
}

fn leaf(data: &[f32], shape: &[usize], device: &Device) -> Tensor {
    f(data, shape, device).with_requires_grad(true).unwrap()
}

/// Deterministic values in about [-2, 2), distinct and away from 0.
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let k = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed * 97)
                % 4000;
            let v = k as f32 / 1000.0 - 2.0;
            if v.abs() < 0.05 { v + 0.1 } else { v }
        })
        .collect()
}

type Case = (
    &'static str,
    Vec<Vec<usize>>,
    fn(&[Tensor]) -> Result<Tensor>,
);

/// Every differentiable case: name, input shapes, the function.
fn cases() -> Vec<Case> {
    vec![
        ("clamp both", vec![vec![3, 4], vec![4], vec![3, 1]], |x| {
            x[0].clamp_tensor(
                Some(&x[1].mul_scalar(0.3)?),
                Some(&x[2].abs()?.add_scalar(0.2)?),
            )
        }),
        ("clamp min", vec![vec![3, 4], vec![3, 4]], |x| {
            x[0].clamp_tensor(Some(&x[1]), None)
        }),
        ("clamp max", vec![vec![2, 3], vec![3]], |x| {
            x[0].clamp_tensor(None, Some(&x[1]))
        }),
        ("logsumexp rows", vec![vec![3, 5]], |x| {
            x[0].logsumexp(&[1], false)
        }),
        ("logsumexp all", vec![vec![2, 3, 2]], |x| {
            x[0].logsumexp(&[], false)
        }),
        ("logsumexp keepdim", vec![vec![2, 3, 4]], |x| {
            x[0].logsumexp(&[0, 2], true)
        }),
        ("prod rows", vec![vec![3, 4]], |x| x[0].prod(&[1], false)),
        ("prod all", vec![vec![2, 3]], |x| x[0].prod(&[], false)),
        ("prod dim0 keepdim", vec![vec![3, 2, 2]], |x| {
            x[0].prod(&[0], true)
        }),
        ("std", vec![vec![3, 5]], |x| x[0].std(&[1], 1, false)),
        ("std all c0", vec![vec![4, 3]], |x| x[0].std(&[], 0, false)),
        ("norm 2", vec![vec![3, 4]], |x| x[0].norm(2.0, &[1], false)),
        ("norm 2 all", vec![vec![2, 3]], |x| {
            x[0].norm(2.0, &[], true)
        }),
        ("norm 1", vec![vec![3, 4]], |x| x[0].norm(1.0, &[0], false)),
        ("norm inf", vec![vec![3, 4]], |x| {
            x[0].norm(f32::INFINITY, &[1], false)
        }),
        ("norm -inf", vec![vec![3, 4]], |x| {
            x[0].norm(f32::NEG_INFINITY, &[1], true)
        }),
        ("norm 3", vec![vec![3, 4]], |x| x[0].norm(3.0, &[1], false)),
        ("norm 0.5", vec![vec![3, 4]], |x| {
            x[0].norm(0.5, &[-1], false)
        }),
        ("norm -1.5", vec![vec![2, 3]], |x| {
            x[0].norm(-1.5, &[1], false)
        }),
        ("max_dim", vec![vec![3, 4]], |x| {
            Ok(x[0].max_dim(1, false)?.0)
        }),
        ("min_dim keepdim", vec![vec![3, 4]], |x| {
            Ok(x[0].min_dim(0, true)?.0)
        }),
        ("transposed logsumexp", vec![vec![4, 3]], |x| {
            x[0].t()?.logsumexp(&[1], false)
        }),
        ("transposed prod", vec![vec![4, 3]], |x| {
            x[0].t()?.prod(&[0], false)
        }),
        ("transposed norm", vec![vec![4, 3]], |x| {
            x[0].t()?.norm(2.0, &[1], false)
        }),
    ]
}

fn make_inputs(shapes: &[Vec<usize>], device: &Device) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n = s.iter().product();
            leaf(&values(n, i as u32 + 1), s, device)
        })
        .collect()
}

#[test]
fn gradcheck_math_ops_on_cpu() {
    let mut failures = Vec::new();
    for (name, shapes, func) in cases() {
        let inputs = make_inputs(&shapes, &Device::Cpu);
        let report = gradcheck(func, &inputs, GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(e) = report.check() {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpu_values_and_gradients_match_cpu() {
    let Some(gpu) = gpu() else { return };
    for (name, shapes, func) in cases() {
        let run = |device: &Device| -> (Vec<f32>, Vec<Vec<f32>>) {
            let inputs = make_inputs(&shapes, device);
            let out = func(&inputs).unwrap_or_else(|e| panic!("{name} on {device}: {e}"));
            let w = Tensor::rand_with(&out.shape(), 0.5, 1.5, 7, device).unwrap();
            out.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
            let grads = inputs
                .iter()
                .map(|t| t.grad().unwrap().to_vec_f32().unwrap())
                .collect();
            (out.to_vec_f32().unwrap(), grads)
        };
        let (cv, cg) = run(&Device::Cpu);
        let (gv, gg) = run(&gpu);
        assert!(max_rel_err(&gv, &cv) < 1e-4, "{name}: {gv:?} vs {cv:?}");
        for (g, c) in gg.iter().zip(&cg) {
            assert!(max_rel_err(g, c) < 1e-4, "{name} grad: {g:?} vs {c:?}");
        }
    }
}

/// Devices to run the value tests on: the CPU, and the GPU when present.
fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn vals(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

#[test]
fn clamp_tensor_gradients_follow_torch_on_ties_nan_and_crossed_bounds() {
    let nan = f32::NAN;
    for d in devices() {
        // torch 2.15: clamp(x, lo, hi).sum().backward() on each column.
        let x = leaf(&[1.0, 2.0, 3.0, 0.5, 5.0, 2.0, 2.0, nan, 1.0], &[9], &d);
        let lo = leaf(&[1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 2.0, 2.0], &[9], &d);
        let hi = leaf(&[3.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0, nan], &[9], &d);
        let y = x.clamp_tensor(Some(&lo), Some(&hi)).unwrap();
        let got = vals(&y);
        let want = [1.0, 2.0, 3.0, 1.0, 3.0, 2.0, 1.0, nan, nan];
        for (g, w) in got.iter().zip(want) {
            assert!(g == &w || (g.is_nan() && w.is_nan()), "{got:?} on {d}");
        }
        y.sum_all().unwrap().backward().unwrap();
        let g = |t: &Tensor| vals(&t.grad().unwrap());
        assert_eq!(
            g(&x),
            [0.5, 1.0, 0.5, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0],
            "x on {d}"
        );
        assert_eq!(
            g(&lo),
            [0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "lo on {d}"
        );
        assert_eq!(
            g(&hi),
            [0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0],
            "hi on {d}"
        );

        // One bound: maximum's rule (ties halve, NaN sends it to both).
        let x = leaf(&[1.0, 0.5, 2.0, nan], &[4], &d);
        let lo = leaf(&[1.0, 1.0, 1.0, 0.0], &[4], &d);
        x.clamp_tensor(Some(&lo), None)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(g(&x), [0.5, 0.0, 1.0, 1.0], "x (min only) on {d}");
        assert_eq!(g(&lo), [0.5, 1.0, 0.0, 1.0], "lo (min only) on {d}");
    }
}

#[test]
fn clamp_tensor_broadcasts_and_rejects_bad_input() {
    let d = Device::Cpu;
    let x = f(&[-2.0, 0.0, 2.0, 4.0], &[2, 2], &d);
    let lo = f(&[-1.0], &[1], &d);
    let hi = f(&[1.0, 3.0], &[2], &d);
    let y = x.clamp_tensor(Some(&lo), Some(&hi)).unwrap();
    assert_eq!(y.shape().to_vec(), vec![2, 2]);
    assert_eq!(vals(&y), [-1.0, 0.0, 1.0, 3.0]);
    let e = x.clamp_tensor(None, None).unwrap_err().to_string();
    assert!(e.contains("clamp") && e.contains("min and max"), "{e}");
    let bad = f(&[0.0, 0.0, 0.0], &[3], &d);
    assert!(x.clamp_tensor(Some(&bad), None).is_err());
    let ints = Tensor::full(&[2], 0.0, DType::I32, &d).unwrap();
    let e = x.clamp_tensor(Some(&ints), None).unwrap_err().to_string();
    assert!(e.contains("clamp"), "{e}");
}

#[test]
fn logsumexp_edge_cases() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    for d in devices() {
        let x = f(
            &[-inf, -inf, inf, 1.0, nan, 1.0, 1000.0, 1000.0],
            &[4, 2],
            &d,
        );
        let got = vals(&x.logsumexp(&[1], false).unwrap());
        assert_eq!(got[0], -inf, "on {d}");
        assert_eq!(got[1], inf, "on {d}");
        assert!(got[2].is_nan(), "on {d}");
        // No overflow: 1000 + ln 2.
        assert!(
            (got[3] - (1000.0 + std::f32::consts::LN_2)).abs() < 1e-3,
            "on {d}"
        );
        // Empty reductions give -inf; empty kept dims give an empty result.
        let empty = f(&[], &[2, 0], &d);
        assert_eq!(vals(&empty.logsumexp(&[1], false).unwrap()), [-inf, -inf]);
        assert_eq!(
            empty.logsumexp(&[0], true).unwrap().shape().to_vec(),
            vec![1, 0]
        );
        // 0-d: itself.
        let s = f(&[0.5], &[], &d);
        assert_eq!(vals(&s.logsumexp(&[], false).unwrap()), [0.5]);
    }
    let x = f(&[1.0, 2.0], &[2], &Device::Cpu);
    let e = x.logsumexp(&[1], false).unwrap_err().to_string();
    assert!(e.contains("logsumexp") && e.contains("axis 1"), "{e}");
}

#[test]
fn prod_values_and_gradients_with_zeros() {
    for d in devices() {
        // torch: x.prod(1).sum().backward() on [[1, 0, 3], [0, 0, 2], [2, 3, 4]].
        let x = leaf(&[1.0, 0.0, 3.0, 0.0, 0.0, 2.0, 2.0, 3.0, 4.0], &[3, 3], &d);
        let y = x.prod(&[1], false).unwrap();
        assert_eq!(vals(&y), [0.0, 0.0, 24.0], "on {d}");
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(
            vals(&x.grad().unwrap()),
            [0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 12.0, 8.0, 6.0],
            "on {d}"
        );
        // Empty products are 1; NaN propagates; 0-d is itself.
        let empty = f(&[], &[2, 0], &d);
        assert_eq!(vals(&empty.prod(&[1], false).unwrap()), [1.0, 1.0]);
        let n = f(&[2.0, f32::NAN], &[2], &d);
        assert!(vals(&n.prod(&[], false).unwrap())[0].is_nan());
        assert_eq!(vals(&f(&[3.0], &[], &d).prod(&[], false).unwrap()), [3.0]);
        // A long row (the GPU splits it into chunks and a second pass).
        // 2858 factors of -1 (i % 7 == 0) and a 3 at the end: +3.
        let mut long: Vec<f32> = (0..20_000)
            .map(|i| if i % 7 == 0 { -1.0 } else { 1.0 })
            .collect();
        long[19_998] = 3.0;
        let p = vals(&f(&long, &[20_000], &d).prod(&[0], false).unwrap());
        assert_eq!(p, [3.0], "on {d}");
    }
}

#[test]
fn std_and_norm_edge_cases() {
    for d in devices() {
        // Constant rows: std 0 with gradient 0 (not NaN), as torch.
        let x = leaf(&[2.0, 2.0, 2.0], &[3], &d);
        let s = x.std(&[], 1, false).unwrap();
        assert_eq!(vals(&s), [0.0]);
        s.backward().unwrap();
        assert_eq!(vals(&x.grad().unwrap()), [0.0; 3], "on {d}");
        // The zero vector: norm 0, gradient 0 for p = 2 and general p.
        for p in [2.0, 1.5, 0.5, -1.0] {
            let z = leaf(&[0.0, 0.0, 0.0], &[3], &d);
            let n = z.norm(p, &[], false).unwrap();
            assert_eq!(vals(&n), [0.0], "p {p} on {d}");
            n.backward().unwrap();
            assert_eq!(vals(&z.grad().unwrap()), [0.0; 3], "p {p} on {d}");
        }
        // torch.linalg.vector_norm([0, 1, 2], 1.5) and its gradient.
        let x = leaf(&[0.0, 1.0, 2.0], &[3], &d);
        let n = x.norm(1.5, &[], false).unwrap();
        n.backward().unwrap();
        let g = vals(&x.grad().unwrap());
        assert!(
            max_rel_err(&g, &[0.0, 0.639_2, 0.904_0]) < 1e-3,
            "{g:?} on {d}"
        );
        // p = 0 counts non-zeros; inf ties share the gradient.
        let x = f(&[0.0, 1.0, -2.0, 0.0], &[4], &d);
        assert_eq!(vals(&x.norm(0.0, &[], false).unwrap()), [2.0]);
        // ... and, as in PyTorch, has a zero gradient.
        let x = leaf(&[0.0, 1.0, -2.0, 0.0], &[2, 2], &d);
        let n = x.norm(0.0, &[1], true).unwrap();
        assert!(n.requires_grad());
        n.sum_all().unwrap().backward().unwrap();
        assert_eq!(vals(&x.grad().unwrap()), [0.0; 4], "on {d}");
        let x = leaf(&[1.0, -3.0, 3.0], &[3], &d);
        x.norm(f32::INFINITY, &[], false)
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(vals(&x.grad().unwrap()), [0.0, -0.5, 0.5], "on {d}");
        // A NaN makes the +-inf norm NaN, and its gradient, unlike amax's,
        // goes to the NaN times sign(NaN) = 0: zeros everywhere
        // (torch.linalg.vector_norm([[1, -2], [nan, 3]], +-inf, dim=(0, 1))).
        for p in [f32::INFINITY, f32::NEG_INFINITY] {
            let x = leaf(&[1.0, -2.0, f32::NAN, 3.0], &[2, 2], &d);
            let n = x.norm(p, &[-2, 1], false).unwrap();
            assert!(vals(&n)[0].is_nan(), "p {p} on {d}");
            n.backward().unwrap();
            assert_eq!(vals(&x.grad().unwrap()), [0.0; 4], "p {p} on {d}");
        }
        // Empty: the 2-norm of nothing is 0; std of one element is NaN.
        assert_eq!(
            vals(&f(&[], &[0], &d).norm(2.0, &[], false).unwrap()),
            [0.0]
        );
        assert!(vals(&f(&[1.0], &[1], &d).std(&[], 1, false).unwrap())[0].is_nan());
    }
    let x = f(&[1.0, 2.0], &[2], &Device::Cpu);
    let e = x.norm(f32::NAN, &[], false).unwrap_err().to_string();
    assert!(e.contains("norm") && e.contains("NaN"), "{e}");
    let e = x.norm(2.0, &[3], false).unwrap_err().to_string();
    assert!(e.contains("norm") && e.contains("axis 3"), "{e}");
    let e = x.std(&[-2], 1, false).unwrap_err().to_string();
    assert!(e.contains("std") && e.contains("-2"), "{e}");
    let ints = Tensor::full(&[2], 1.0, DType::I32, &Device::Cpu).unwrap();
    assert!(
        ints.norm(2.0, &[], false)
            .unwrap_err()
            .to_string()
            .contains("norm")
    );
}

/// `got` equals `want` element for element: NaN where NaN, infinities and
/// the sign of zeros exactly, finite values to `1e-6` relative.
fn assert_same(what: &str, got: &[f32], want: &[f32]) {
    let same = got.len() == want.len()
        && got.iter().zip(want).all(|(&g, &w)| {
            (g.is_nan() && w.is_nan())
                || (g == w && g.is_sign_negative() == w.is_sign_negative())
                || (w.is_finite() && w != 0.0 && ((g - w) / w).abs() < 1e-6)
        });
    assert!(same, "{what}: {got:?}, PyTorch {want:?}");
}

/// `var`/`std` with `correction >= n`: the value and gradient of
/// `y.sum().backward()`, as PyTorch 2.15 gives them. The value divides by
/// `max(n - correction, 0)` (inf, or NaN for a constant row). Over all
/// elements the variance's gradient is `g * inf`, NaN where `x` equals the
/// mean; over a named dim PyTorch's `2 / (n - correction)` is not clamped,
/// so `correction = n + 1` gives a finite gradient (std's is `0 * that`).
#[test]
fn var_and_std_with_correction_past_the_count_follow_torch() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    type Reduce = fn(&Tensor) -> Result<Tensor>;
    // Name, input, shape, the reduction, PyTorch's value and gradient.
    type Case<'a> = (
        &'a str,
        &'a [f32],
        &'a [usize],
        Reduce,
        &'a [f32],
        &'a [f32],
    );
    let cases: [Case; 11] = [
        (
            "var c3",
            &[1.0, 2.0, 4.0],
            &[3],
            |x| x.var(&[], 3, false),
            &[inf],
            &[inf; 3],
        ),
        (
            "var c5",
            &[1.0, 2.0, 4.0],
            &[3],
            |x| x.var(&[], 5, false),
            &[inf],
            &[inf; 3],
        ),
        (
            "var const",
            &[3.0; 3],
            &[3],
            |x| x.var(&[], 5, false),
            &[nan],
            &[nan; 3],
        ),
        (
            "var at mean",
            &[1.0, 2.0, 3.0],
            &[3],
            |x| x.var(&[], 3, false),
            &[inf],
            &[inf, nan, inf],
        ),
        (
            "std c3",
            &[1.0, 2.0, 4.0],
            &[3],
            |x| x.std(&[], 3, false),
            &[inf],
            &[nan; 3],
        ),
        (
            "std const",
            &[3.0; 3],
            &[3],
            |x| x.std(&[], 5, false),
            &[nan],
            &[nan; 3],
        ),
        (
            "var 0-d",
            &[5.0],
            &[],
            |x| x.var(&[0], 1, false),
            &[nan],
            &[nan],
        ),
        (
            "var dim c4",
            &[1.0, 2.0, 4.0, 3.0, 3.0, 3.0],
            &[2, 3],
            |x| x.var(&[1], 4, false),
            &[inf, nan],
            &[2.666_666_5, 0.666_666_5, -3.333_333_5, -0.0, -0.0, -0.0],
        ),
        (
            "var dim c4 keepdim",
            &[1.0, 2.0, 4.0, 3.0, 3.0, 3.0],
            &[2, 3],
            |x| x.var(&[-1], 4, true),
            &[inf, nan],
            &[2.666_666_5, 0.666_666_5, -3.333_333_5, -0.0, -0.0, -0.0],
        ),
        (
            "var dim c3",
            &[1.0, 2.0, 4.0, 3.0, 3.0, 3.0],
            &[2, 3],
            |x| x.var(&[1], 3, false),
            &[inf, nan],
            &[-inf, -inf, inf, nan, nan, nan],
        ),
        (
            "std dim c4",
            &[1.0, 2.0, 4.0, 3.0, 3.0, 3.0],
            &[2, 3],
            |x| x.std(&[1], 4, false),
            &[inf, nan],
            &[0.0, 0.0, -0.0, nan, nan, nan],
        ),
    ];
    for d in devices() {
        for (name, data, shape, f, want_y, want_g) in cases {
            let x = leaf(data, shape, &d);
            let y = f(&x).unwrap();
            assert_same(&format!("{name} on {d}"), &vals(&y), want_y);
            y.sum_all().unwrap().backward().unwrap();
            assert_same(
                &format!("{name} gradient on {d}"),
                &vals(&x.grad().unwrap()),
                want_g,
            );
        }
        // The upstream gradient multiplies the inf: -2 gives -inf.
        let x = leaf(&[1.0, 2.0, 4.0], &[3], &d);
        let y = x.var(&[], 3, false).unwrap();
        y.backward_with(&f(&[-2.0], &[], &d)).unwrap();
        assert_same("var c3, g = -2", &vals(&x.grad().unwrap()), &[-inf; 3]);
    }
}

/// `x ** 0.5` is `sqrt` in PyTorch's pow kernel (and `x ** -0.5` `rsqrt`),
/// so at the signed zeros it and its gradient are sqrt's: torch 2.15
/// `torch.pow(torch.tensor([-0.0, 0.0], requires_grad=True), 0.5)` gives
/// `[-0.0, 0.0]` and the gradient `[-inf, inf]`, as `torch.sqrt` does;
/// `x ** -0.5` gives `[-inf, inf]` (gradient `[-inf, -inf]`); `x ** 1.5`
/// has the gradient `[-0.0, 0.0]` (`1.5 * sqrt(x)`).
#[test]
fn sqrt_and_pow_half_at_signed_zeros_follow_torch() {
    let inf = f32::INFINITY;
    type Op = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Op, [f32; 2], [f32; 2]); 4] = [
        ("pow 0.5", |x| x.pow_scalar(0.5), [-0.0, 0.0], [-inf, inf]),
        ("sqrt", |x| x.sqrt(), [-0.0, 0.0], [-inf, inf]),
        (
            "pow -0.5",
            |x| x.pow_scalar(-0.5),
            [-inf, inf],
            [-inf, -inf],
        ),
        ("pow 1.5", |x| x.pow_scalar(1.5), [0.0, 0.0], [-0.0, 0.0]),
    ];
    for d in devices() {
        for (name, op, want_y, want_g) in cases {
            let x = leaf(&[-0.0, 0.0], &[2], &d);
            let y = op(&x).unwrap();
            assert_same(&format!("{name} on {d}"), &vals(&y), &want_y);
            y.sum_all().unwrap().backward().unwrap();
            assert_same(
                &format!("{name} gradient on {d}"),
                &vals(&x.grad().unwrap()),
                &want_g,
            );
        }
        // Off the zeros the values stay pow's: NaN below 0 (and at -inf,
        // sqrt(-inf)), 0 for rsqrt(inf), as torch.
        let x = f(&[-inf, -1.0, 4.0, inf], &[4], &d);
        assert_same(
            &format!("pow 0.5 on {d}"),
            &vals(&x.pow_scalar(0.5).unwrap()),
            &[f32::NAN, f32::NAN, 2.0, inf],
        );
        assert_same(
            &format!("pow -0.5 on {d}"),
            &vals(&x.pow_scalar(-0.5).unwrap()),
            &[f32::NAN, f32::NAN, 0.5, 0.0],
        );
    }
}

#[test]
fn max_min_dim_pick_the_first_extreme_and_route_the_gradient() {
    let nan = f32::NAN;
    for d in devices() {
        let x = leaf(&[1.0, 3.0, 3.0, 0.0, 5.0, 5.0, -1.0, -1.0], &[2, 4], &d);
        let (v, i) = x.max_dim(1, false).unwrap();
        assert_eq!(vals(&v), [3.0, 5.0], "on {d}");
        assert_eq!(i.to_vec::<i32>().unwrap(), [1, 0], "on {d}");
        assert_eq!(i.dtype(), DType::I32);
        v.sum_all().unwrap().backward().unwrap();
        assert_eq!(
            vals(&x.grad().unwrap()),
            [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            "on {d}"
        );
        let (v, i) = x.min_dim(-1, true).unwrap();
        assert_eq!(v.shape().to_vec(), vec![2, 1]);
        assert_eq!(vals(&v), [0.0, -1.0]);
        assert_eq!(i.to_vec::<i32>().unwrap(), [3, 2], "on {d}");
        // NaN is the extreme; a transposed view reads through its strides.
        let y = f(&[1.0, nan, 2.0, 0.0], &[2, 2], &d).t().unwrap();
        let (v, i) = y.max_dim(0, false).unwrap();
        let v = vals(&v);
        assert!(v[0].is_nan() && v[1] == 2.0, "{v:?} on {d}");
        assert_eq!(i.to_vec::<i32>().unwrap(), [1, 0], "on {d}");
        // 0-d: the value and index 0.
        let s = f(&[4.0], &[], &d);
        let (v, i) = s.max_dim(0, false).unwrap();
        assert_eq!((vals(&v), i.to_vec::<i32>().unwrap()), (vec![4.0], vec![0]));
        assert!(i.shape().is_empty());
        // Over all elements, flattened row-major.
        let a = f(&[1.0, 3.0, 4.0, 0.0], &[2, 2], &d);
        let idx = |t: Tensor| t.to_vec::<i32>().unwrap();
        assert_eq!(idx(a.argmax_all().unwrap()), [2]);
        assert_eq!(idx(a.argmin_all().unwrap()), [3]);
        // The transpose flattens to [1, 4, 3, 0].
        assert_eq!(idx(a.t().unwrap().argmax_all().unwrap()), [1]);
        // Ties: the first.
        assert_eq!(
            idx(f(&[3.0, 1.0, 3.0], &[3], &d).argmax_all().unwrap()),
            [0]
        );
        assert!(a.argmax_all().unwrap().shape().is_empty());
    }
    let x = f(&[1.0, 2.0], &[2], &Device::Cpu);
    let e = x.max_dim(1, false).unwrap_err().to_string();
    assert!(e.contains("max") && e.contains("axis 1"), "{e}");
    assert!(f(&[], &[0], &Device::Cpu).argmax_all().is_err());
    let e = f(&[], &[2, 0], &Device::Cpu)
        .min_dim(1, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("min") && e.contains("empty"), "{e}");
}

#[test]
fn math_ops_never_read_back_on_the_gpu() {
    // A device of its own: other tests read back from the shared one meanwhile.
    let Some(dev) = wgrad_test_support::own_gpu() else {
        return;
    };
    let gpu = Device::Gpu(dev.clone());
    let x = leaf(&values(12, 3), &[3, 4], &gpu);
    let lo = f(&values(4, 5), &[4], &gpu);
    let before = dev.stats();
    let y = x
        .clamp_tensor(Some(&lo), None)
        .unwrap()
        .logsumexp(&[1], false)
        .unwrap()
        .add(&x.prod(&[1], false).unwrap())
        .unwrap()
        .add(&x.std(&[1], 1, false).unwrap())
        .unwrap()
        .add(&x.norm(3.0, &[1], false).unwrap())
        .unwrap()
        .add(&x.max_dim(1, false).unwrap().0)
        .unwrap();
    let upstream = Tensor::full(&y.shape(), 1.0, DType::F32, &gpu).unwrap();
    y.backward_with(&upstream).unwrap();
    assert_eq!(dev.stats().since(&before).readbacks, 0);
}

#[test]
fn log1p_and_expm1_keep_relative_precision_near_zero() {
    let xs = [1e-7f32, -1e-6, 3e-5, -1e-4, 1e-3, -0.3, 0.7, 5.0];
    for d in devices() {
        let x = f(&xs, &[xs.len()], &d);
        let l = vals(&x.log1p().unwrap());
        let e = vals(&x.expm1().unwrap());
        for (i, &v) in xs.iter().enumerate() {
            let v64 = f64::from(v);
            let (wl, we) = (v64.ln_1p(), v64.exp_m1());
            let rel = |got: f32, want: f64| ((f64::from(got) - want) / want).abs();
            // exp(x) - 1 would be off by up to 100% at 1e-7.
            assert!(rel(l[i], wl) < 2e-6, "log1p({v}) = {} on {d}", l[i]);
            assert!(rel(e[i], we) < 2e-6, "expm1({v}) = {} on {d}", e[i]);
        }
        let edge = vals(
            &f(
                &[-1.0, -2.0, f32::INFINITY, f32::NEG_INFINITY, 100.0],
                &[5],
                &d,
            )
            .expm1()
            .unwrap(),
        );
        assert!(max_rel_err(&edge[..2], &[(-1.0f32).exp_m1(), (-2.0f32).exp_m1()]) < 1e-6);
        assert_eq!(edge[2], f32::INFINITY, "on {d}");
        assert_eq!(edge[3], -1.0, "on {d}");
        assert_eq!(edge[4], f32::INFINITY, "on {d}");
        let edge = vals(
            &f(&[-1.0, -2.0, f32::INFINITY, 0.0], &[4], &d)
                .log1p()
                .unwrap(),
        );
        assert_eq!(edge[0], f32::NEG_INFINITY, "on {d}");
        assert!(edge[1].is_nan(), "on {d}");
        assert_eq!(edge[2], f32::INFINITY, "on {d}");
        assert_eq!(edge[3], 0.0, "on {d}");
    }
}

#[test]
fn gelu_with_picks_the_approximation_and_rejects_others() {
    for d in devices() {
        let x = f(&[-1.0, 0.5, 2.0], &[3], &d);
        let exact = vals(&x.gelu_with("none").unwrap());
        assert_eq!(exact, vals(&x.gelu().unwrap()));
        // torch.nn.functional.gelu(x, approximate='tanh')
        let tanh = vals(&x.gelu_with("tanh").unwrap());
        assert!(
            max_rel_err(&tanh, &[-0.158_808, 0.345_714, 1.954_598]) < 2e-6,
            "{tanh:?} on {d}"
        );
        // The parameterised methods reach their variants.
        let y = f(&[-2.0, 0.25, 3.0], &[3], &d);
        assert_eq!(vals(&y.hardtanh(-0.5, 2.0).unwrap()), [-0.5, 0.25, 2.0]);
        assert_eq!(vals(&y.elu(0.0).unwrap()), [0.0, 0.25, 3.0]);
        assert_eq!(vals(&y.softplus(1.0, 0.0).unwrap())[1..], [0.25, 3.0]);
    }
    let x = f(&[1.0], &[1], &Device::Cpu);
    let e = x.gelu_with("erf").unwrap_err().to_string();
    assert!(e.contains("gelu") && e.contains("erf"), "{e}");
}

#[test]
fn zero_d_inputs_take_axis_0_and_minus_1() {
    for d in devices() {
        let s = leaf(&[-1.5], &[], &d);
        for axes in [&[][..], &[0], &[-1]] {
            assert_eq!(vals(&s.logsumexp(axes, false).unwrap()), [-1.5]);
            assert_eq!(vals(&s.prod(axes, true).unwrap()), [-1.5]);
            assert_eq!(vals(&s.norm(2.0, axes, false).unwrap()), [1.5]);
            assert!(max_rel_err(&vals(&s.norm(3.0, axes, false).unwrap()), &[1.5]) < 1e-6);
            assert_eq!(vals(&s.std(axes, 0, false).unwrap()), [0.0]);
            assert!(vals(&s.std(axes, 1, false).unwrap())[0].is_nan());
        }
        assert!(s.prod(&[1], false).is_err());
        let y = s
            .prod(&[0], false)
            .unwrap()
            .add(&s.norm(2.0, &[], false).unwrap())
            .unwrap();
        y.backward().unwrap();
        assert_eq!(vals(&s.grad().unwrap()), [0.0], "1 + (-1) on {d}");
        assert_eq!(s.argmax_all().unwrap().to_vec::<i32>().unwrap(), [0]);
    }
}

/// The messages docs/ERRORS.md quotes.
#[test]
fn errors_name_the_op_and_the_bad_value() {
    let d = Device::Cpu;
    let x = f(&[1.0, 2.0], &[2], &d);
    let msg = |r: Result<Tensor>| r.unwrap_err().to_string();
    assert_eq!(
        msg(x.clamp_tensor(None, None)),
        "clamp: at least one of min and max must be given"
    );
    assert_eq!(
        msg(x.norm(f32::NAN, &[], false)),
        "norm: the order p must be a number, got NaN"
    );
    assert_eq!(
        msg(x.logsumexp(&[1], false)),
        "logsumexp: axis 1 is out of range for a tensor of rank 1 (valid: -1 to 0)"
    );
    assert_eq!(
        msg(f(&[], &[2, 0], &d).min_dim(1, false).map(|r| r.0)),
        "min: cannot reduce dim 1 of shape [2, 0]: it is empty"
    );
    assert_eq!(
        msg(x.gelu_with("erf")),
        "gelu: approximate must be 'none' or 'tanh', got \"erf\""
    );
    assert_eq!(
        msg(f(&[], &[0], &d).argmax_all()),
        "argmax: cannot reduce shape [0] over axes [0]: the reduction is empty"
    );
    let ints = Tensor::full(&[2], 1.0, DType::I32, &d).unwrap();
    assert_eq!(
        msg(ints.std(&[], 1, false)),
        "std: expected dtype float32, got int32"
    );
}

/// `torch.clamp` with a NaN bound gives NaN everywhere, with a zero
/// gradient, on both devices.
#[test]
fn clamp_with_a_nan_bound_is_nan() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let x = Tensor::from_vec(vec![1.0f32, -2.0, f32::NAN], &[3], &d).unwrap();
        x.requires_grad_(true).unwrap();
        for op in [
            UnaryOp::Clamp {
                min: Some(f32::NAN),
                max: None,
            },
            UnaryOp::Clamp {
                min: Some(0.0),
                max: Some(f32::NAN),
            },
        ] {
            let y = x.unary(op).unwrap();
            assert!(
                y.to_vec_f32().unwrap().iter().all(|v| v.is_nan()),
                "{op:?} on {d:?}"
            );
        }
        x.unary(UnaryOp::Clamp {
            min: Some(f32::NAN),
            max: None,
        })
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
        assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), [0.0, 0.0, 0.0]);
    }
}

/// The gradient at a NaN input, as PyTorch 2.15 computes it for tensors
/// of 16 or more elements (its vectorized kernels; the scalar tail differs
/// for hardtanh, 1, and elu, 1): relu 1 (it tests `x <= 0`), elu NaN,
/// hardtanh 0, leaky_relu(0.1) 0.1, clamp(-1, 1) 0, abs 0.
#[test]
fn gradients_at_a_nan_input_follow_torch() {
    let cases = [
        ("relu", UnaryOp::Relu, 1.0),
        ("elu", UnaryOp::Elu { alpha: 1.0 }, f32::NAN),
        (
            "hardtanh",
            UnaryOp::Hardtanh {
                min: -1.0,
                max: 1.0,
            },
            0.0,
        ),
        ("leaky_relu", UnaryOp::LeakyRelu { slope: 0.1 }, 0.1),
        (
            "clamp",
            UnaryOp::Clamp {
                min: Some(-1.0),
                max: Some(1.0),
            },
            0.0,
        ),
        ("abs", UnaryOp::Abs, 0.0),
    ];
    for d in devices() {
        for (name, op, want) in cases {
            // Dense 4-element operands take the GPU's vec4 path; 3 the strided one.
            for n in [3, 4, 32] {
                let x = leaf(&vec![f32::NAN; n], &[n], &d);
                let y = x.unary(op).unwrap();
                assert!(vals(&y).iter().all(|v| v.is_nan()), "{name}: forward");
                y.sum_all().unwrap().backward().unwrap();
                let g = vals(&x.grad().unwrap());
                assert!(
                    g.iter()
                        .all(|&v| (v - want).abs() < 1e-7 || (v.is_nan() && want.is_nan())),
                    "{name} on {d}: gradient {g:?}, PyTorch {want}"
                );
            }
        }
    }
}

/// A NaN or infinite upstream gradient through the ops whose gradient
/// PyTorch selects (`where(mask, grad, 0)`, or zeros): an exact 0 where the
/// op blocks it, the gradient itself where it passes. PyTorch 2.15:
/// `relu(-1)`, `hardtanh(5)`, `clamp(5, -1, 1)`, `floor/sign/round(1.5)`
/// backward with `grad = nan` give 0; `relu(1)` gives nan; `abs(0)` (a
/// product, `grad * sign`) gives nan.
#[test]
fn blocked_gradients_are_exact_zeros_even_for_nan_upstream() {
    let clamp = UnaryOp::Clamp {
        min: Some(-1.0),
        max: Some(1.0),
    };
    let hardtanh = UnaryOp::Hardtanh {
        min: -1.0,
        max: 1.0,
    };
    let cases: [(&str, UnaryOp, f32, bool); 8] = [
        ("relu blocked", UnaryOp::Relu, -1.0, false),
        ("relu passing", UnaryOp::Relu, 1.0, true),
        ("hardtanh blocked", hardtanh, 5.0, false),
        ("clamp blocked", clamp, 5.0, false),
        ("floor", UnaryOp::Floor, 1.5, false),
        ("sign", UnaryOp::Sign, 1.5, false),
        ("round", UnaryOp::Round, 1.5, false),
        ("abs at 0", UnaryOp::Abs, 0.0, true),
    ];
    for d in devices() {
        for (name, op, xv, nan_passes) in cases {
            for n in [3, 4] {
                let x = leaf(&vec![xv; n], &[n], &d);
                let y = x.unary(op).unwrap();
                let g = f(&vec![f32::NAN; n], &[n], &d);
                y.backward_with(&g).unwrap();
                let got = vals(&x.grad().unwrap());
                for v in got {
                    if nan_passes {
                        assert!(v.is_nan(), "{name} on {d}: {v}, PyTorch nan");
                    } else {
                        assert!(v == 0.0, "{name} on {d}: {v}, PyTorch 0");
                    }
                }
            }
        }
    }
}

/// `maximum`/`minimum` with a NaN operand give the whole gradient to both
/// sides (PyTorch masks out the loser, and NaN loses nothing), ties split
/// it; `clamp` with one bound passes an infinite x's gradient on the open
/// side. Values from PyTorch 2.15.
#[test]
fn maximum_minimum_nan_and_one_sided_clamp_gradients_follow_torch() {
    let nan = f32::NAN;
    for d in devices() {
        for max in [true, false] {
            let a = leaf(&[nan, 1.0, 2.0, 1.0, nan], &[5], &d);
            let b = leaf(&[1.0, nan, 2.0, 2.0, nan], &[5], &d);
            let y = if max { a.maximum(&b) } else { a.minimum(&b) }.unwrap();
            y.sum_all().unwrap().backward().unwrap();
            let (ga, gb) = (vals(&a.grad().unwrap()), vals(&b.grad().unwrap()));
            let (wa, wb) = if max {
                ([1.0, 1.0, 0.5, 0.0, 1.0], [1.0, 1.0, 0.5, 1.0, 1.0])
            } else {
                ([1.0, 1.0, 0.5, 1.0, 1.0], [1.0, 1.0, 0.5, 0.0, 1.0])
            };
            assert_eq!(ga, wa, "max {max} on {d}: a");
            assert_eq!(gb, wb, "max {max} on {d}: b");
            // Against a scalar: NaN keeps the gradient.
            let x = leaf(&[nan, 0.0, -1.0], &[3], &d);
            let y = if max {
                x.maximum_scalar(0.0)
            } else {
                x.minimum_scalar(0.0)
            }
            .unwrap();
            y.sum_all().unwrap().backward().unwrap();
            let want = if max {
                [1.0, 0.5, 0.0]
            } else {
                [1.0, 0.5, 1.0]
            };
            assert_eq!(vals(&x.grad().unwrap()), want, "max {max} scalar on {d}");
        }
        let inf = f32::INFINITY;
        for (min, max, v, want) in [
            (Some(0.0), None, inf, 1.0),
            (None, Some(0.0), -inf, 1.0),
            (None, Some(1.0), inf, 0.0),
            (Some(-1.0), Some(1.0), inf, 0.0),
        ] {
            let x = leaf(&[v, v, v, v], &[4], &d);
            x.clamp(min, max)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            assert!(
                vals(&x.grad().unwrap()).iter().all(|&g| g == want),
                "clamp({min:?}, {max:?}) at {v} on {d}: PyTorch {want}"
            );
        }
    }
}
