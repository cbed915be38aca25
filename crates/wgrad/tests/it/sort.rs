//! Sorting, scans and random sampling (sort, argsort, topk, cumsum,
//! randint, randperm, bernoulli, multinomial): values against a reference,
//! GPU results equal to the CPU's (ties and NaN included, the multi-dispatch
//! global sort and the multi-block scan included), finite-difference
//! gradchecks, no readbacks, frequencies of the samplers and bad input.
//! PyTorch ground truth: `fixtures_sort.rs`.

use crate::common::{gpu, max_rel_err};
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::{DType, Device, Result, Tensor};
use wgrad_test_support::seed_lock;

fn f(data: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape, device).unwrap()
}

/// Deterministic values in `-levels/2..levels/2` (many ties when `levels` is small).
fn ties(n: usize, levels: u32, seed: u64) -> Vec<f32> {
    let t = Tensor::randint_with(0, levels as i32, &[n], seed, &Device::Cpu).unwrap();
    t.to_vec::<i32>()
        .unwrap()
        .into_iter()
        .map(|v| v as f32 - (levels / 2) as f32)
        .collect()
}

/// Stable reference sort of one row (NaN largest).
fn reference(row: &[f32], descending: bool) -> (Vec<f32>, Vec<i32>) {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    let key = |x: f32| if x.is_nan() { f32::INFINITY } else { x };
    let rank = |x: f32| u8::from(x.is_nan());
    idx.sort_by(|&a, &b| {
        let (x, y) = (row[a], row[b]);
        let o = rank(x)
            .cmp(&rank(y))
            .then(key(x).partial_cmp(&key(y)).unwrap());
        if descending { o.reverse() } else { o }
    });
    (
        idx.iter().map(|&i| row[i]).collect(),
        idx.iter().map(|&i| i as i32).collect(),
    )
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter()
        .map(|x| if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() })
        .collect()
}

#[test]
fn sort_is_stable_with_nan_largest_on_both_devices() {
    let row = [
        3.0,
        f32::NAN,
        -1.0,
        3.0,
        0.0,
        -0.0,
        f32::NEG_INFINITY,
        -1.0,
        f32::INFINITY,
        f32::NAN,
    ];
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        for descending in [false, true] {
            let x = f(&row, &[row.len()], device);
            let (v, i) = x.sort(0, descending).unwrap();
            let (rv, ri) = reference(&row, descending);
            assert_eq!(
                bits(&v.to_vec_f32().unwrap()),
                bits(&rv),
                "{device} {descending}"
            );
            assert_eq!(i.to_vec::<i32>().unwrap(), ri, "{device} {descending}");
            assert_eq!(i.dtype(), DType::I32);
        }
    }
}

/// (name, shape, dim, descending, transposed input): sorts whose CPU and
/// GPU results must be identical.
fn sort_cases() -> Vec<(&'static str, Vec<usize>, isize, bool, bool)> {
    vec![
        ("rows", vec![5, 7], -1, false, false),
        ("descending", vec![5, 7], 1, true, false),
        ("dim 0", vec![64, 3], 0, false, false),
        ("middle dim", vec![2, 33, 4], 1, true, false),
        ("transposed", vec![6, 9], -1, false, true),
        ("tile", vec![3, 2048], -1, false, false),
        ("global", vec![3, 3000], -1, true, false),
        ("global stages", vec![2, 10_000], 1, false, false),
        ("global strided", vec![5000, 2], 0, false, false),
        ("one element", vec![4, 1], -1, false, false),
        ("many short rows", vec![1000, 5], -1, false, false),
        ("short rows descending", vec![300, 17], 1, true, false),
        ("short strided rows", vec![33, 700], 0, false, false),
        ("empty", vec![0, 4], -1, false, false),
        ("empty dim", vec![3, 0], -1, false, false),
    ]
}

#[test]
fn sort_on_gpu_equals_cpu_and_reference() {
    let gpu = gpu();
    for (i, (name, shape, dim, descending, transposed)) in sort_cases().into_iter().enumerate() {
        let n: usize = shape.iter().product();
        let mut data = ties(n, 50, i as u64);
        if n > 3 {
            data[1] = f32::NAN;
            data[n - 2] = -f32::NAN;
        }
        let make = |device: &Device| {
            let x = f(&data, &shape, device);
            if transposed { x.t().unwrap() } else { x }
        };
        let (cv, ci) = make(&Device::Cpu).sort(dim, descending).unwrap();
        let cv = cv.to_vec_f32().unwrap();
        let ci = ci.to_vec::<i32>().unwrap();
        // Reference over the last-dim cases.
        if dim == -1 && !transposed && n > 0 {
            let len = *shape.last().unwrap();
            for (r, row) in data.chunks(len).enumerate() {
                let (rv, ri) = reference(row, descending);
                assert_eq!(bits(&cv[r * len..(r + 1) * len]), bits(&rv), "{name}");
                assert_eq!(&ci[r * len..(r + 1) * len], &ri[..], "{name}");
            }
        }
        if let Some(device) = &gpu {
            let (gv, gi) = make(device).sort(dim, descending).unwrap();
            assert_eq!(bits(&gv.to_vec_f32().unwrap()), bits(&cv), "{name}: values");
            assert_eq!(gi.to_vec::<i32>().unwrap(), ci, "{name}: indices");
        }
    }
}

#[test]
fn long_row_sort_is_stable_on_gpu() {
    let Some(device) = gpu() else { return };
    // 40_000 elements in 7 distinct values: every run of ties must keep order.
    let data = ties(40_000, 7, 99);
    let x = f(&data, &[40_000], &device);
    for descending in [false, true] {
        let idx = x.argsort(-1, descending).unwrap().to_vec::<i32>().unwrap();
        let (_, want) = reference(&data, descending);
        assert_eq!(idx, want, "descending {descending}");
    }
}

#[test]
fn sort_i32_and_0d() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        let x = Tensor::from_vec(vec![5i32, -7, 5, i32::MIN, i32::MAX, 0], &[6], device).unwrap();
        let (v, i) = x.sort(-1, true).unwrap();
        assert_eq!(
            v.to_vec::<i32>().unwrap(),
            [i32::MAX, 5, 5, 0, -7, i32::MIN]
        );
        assert_eq!(i.to_vec::<i32>().unwrap(), [4, 0, 2, 5, 1, 3]);
        let s = Tensor::from_vec(vec![2.5f32], &[], device).unwrap();
        let (v, i) = s.sort(-1, false).unwrap();
        assert_eq!(
            (v.shape().to_vec(), v.to_vec_f32().unwrap()),
            (vec![], vec![2.5])
        );
        assert_eq!(i.to_vec::<i32>().unwrap(), [0]);
        let (v, _) = s.topk(1, 0, true, true).unwrap();
        assert_eq!(v.to_vec_f32().unwrap(), [2.5]);
    }
}

#[test]
fn topk_takes_the_first_k_of_the_sort() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        let x = f(&[1.0, 9.0, f32::NAN, 4.0, 9.0, -2.0], &[2, 3], device);
        let (v, i) = x.topk(2, -1, true, true).unwrap();
        assert_eq!(
            bits(&v.to_vec_f32().unwrap()),
            bits(&[f32::NAN, 9.0, 9.0, 4.0])
        );
        assert_eq!(i.to_vec::<i32>().unwrap(), [2, 1, 1, 0]);
        let (v, i) = x.topk(1, 0, false, true).unwrap();
        assert_eq!(v.shape().to_vec(), vec![1, 3]);
        assert_eq!(v.to_vec_f32().unwrap(), [1.0, 9.0, -2.0]);
        assert_eq!(i.to_vec::<i32>().unwrap(), [0, 0, 1]);
    }
}

#[test]
fn bad_input_names_the_op_and_sizes() {
    let x = f(&[1.0; 6], &[2, 3], &Device::Cpu);
    let e = x.topk(4, -1, true, true).unwrap_err().to_string();
    assert!(
        e.starts_with("topk") && e.contains("k = 4") && e.contains("size 3"),
        "{e}"
    );
    let e = x.sort(2, false).unwrap_err().to_string();
    assert!(e.starts_with("sort") && e.contains("axis 2"), "{e}");
    let e = x.cumsum(-3).unwrap_err().to_string();
    assert!(e.starts_with("cumsum"), "{e}");
    let m = Tensor::from_vec(vec![1u32, 0], &[2], &Device::Cpu).unwrap();
    assert!(
        m.sort(0, false)
            .unwrap_err()
            .to_string()
            .starts_with("sort")
    );
    let e = Tensor::randint_with(3, 3, &[2], 0, &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("randint") && e.contains("low = 3"), "{e}");
    let e = x.multinomial_with(4, false, 0).unwrap_err().to_string();
    assert!(
        e.starts_with("multinomial") && e.contains("num_samples = 4"),
        "{e}"
    );
    let e = f(&[1.0; 8], &[2, 2, 2], &Device::Cpu)
        .multinomial_with(1, true, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("multinomial") && e.contains("[2, 2, 2]"),
        "{e}"
    );
}

/// Distinct values at least 0.25 apart (finite differences never reorder them).
fn spaced(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    let n: usize = shape.iter().product();
    let perm = Tensor::randperm_with(n, seed, &Device::Cpu).unwrap();
    let data: Vec<f32> = perm
        .to_vec::<i32>()
        .unwrap()
        .iter()
        .map(|&p| p as f32 * 0.25 - n as f32 * 0.125)
        .collect();
    f(&data, shape, device).with_requires_grad(true).unwrap()
}

type Case = (&'static str, Vec<usize>, fn(&Tensor) -> Result<Tensor>);

fn grad_cases() -> Vec<Case> {
    vec![
        ("sort", vec![3, 5], |x| Ok(x.sort(-1, false)?.0)),
        ("sort dim 0 descending", vec![4, 3], |x| {
            Ok(x.sort(0, true)?.0)
        }),
        ("sort transposed", vec![3, 4], |x| {
            Ok(x.t()?.sort(1, false)?.0)
        }),
        ("topk", vec![2, 6], |x| Ok(x.topk(3, -1, true, true)?.0)),
        ("topk smallest dim 0", vec![5, 2], |x| {
            Ok(x.topk(2, 0, false, true)?.0)
        }),
        ("cumsum", vec![3, 5], |x| x.cumsum(-1)),
        ("cumsum dim 0", vec![4, 3], |x| x.cumsum(0)),
        ("cumsum transposed", vec![3, 4], |x| x.t()?.cumsum(-1)),
        ("cumprod", vec![3, 5], |x| x.cumprod(-1)),
        ("cumprod through a zero", vec![4, 4], |x| x.cumprod(1)),
        ("cumprod dim 0 transposed", vec![3, 4], |x| {
            x.t()?.cumprod(0)
        }),
    ]
}

#[test]
fn gradcheck_sort_topk_scans_on_cpu() {
    for (i, (name, shape, op)) in grad_cases().into_iter().enumerate() {
        let x = spaced(&shape, i as u64, &Device::Cpu);
        let report = gradcheck(|xs| op(&xs[0]), &[x], GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        report.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

fn run(op: fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> (Vec<f32>, Vec<f32>) {
    let out = op(x).unwrap();
    let w: Vec<f32> = (0..out.numel())
        .map(|i| 0.5 + (i % 7) as f32 * 0.25)
        .collect();
    let upstream = Tensor::from_vec(w, &out.shape(), &out.device()).unwrap();
    out.backward_with(&upstream).unwrap();
    (
        out.to_vec_f32().unwrap(),
        x.grad().unwrap().to_vec_f32().unwrap(),
    )
}

#[test]
fn gradients_on_gpu_equal_cpu_without_readbacks() {
    // A device of its own: other tests read back from the shared one meanwhile.
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    let device = Device::Gpu(g.clone());
    for (i, (name, shape, op)) in grad_cases().into_iter().enumerate() {
        let cpu = run(op, &spaced(&shape, i as u64, &Device::Cpu));
        let x = spaced(&shape, i as u64, &device);
        let before = g.stats();
        let out = op(&x).unwrap();
        let upstream = Tensor::full(&out.shape(), 1.0, DType::F32, &device).unwrap();
        out.backward_with(&upstream).unwrap();
        assert_eq!(g.stats().since(&before).readbacks, 0, "{name}");
        x.zero_grad();
        let gpu = run(op, &x);
        assert!(
            max_rel_err(&gpu.0, &cpu.0) <= 1e-6,
            "{name}: {:?} vs {:?}",
            gpu.0,
            cpu.0
        );
        assert!(
            max_rel_err(&gpu.1, &cpu.1) <= 1e-6,
            "{name}: {:?} vs {:?}",
            gpu.1,
            cpu.1
        );
    }
}

#[test]
fn cumsum_on_gpu_equals_cpu_over_many_blocks() {
    let Some(device) = gpu() else { return };
    // Integer values: every partial sum is exact, so any summation order agrees.
    for (shape, dim) in [
        (vec![4, 5000], -1isize),
        (vec![1500, 3], 0),
        (vec![2, 3, 7], 1),
        (vec![1_100_000], 0),
        (vec![0, 3], 1),
        (vec![], 0),
    ] {
        let n: usize = shape.iter().product();
        let data = ties(n, 9, 5);
        let c = f(&data, &shape, &Device::Cpu)
            .cumsum(dim)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        let g = f(&data, &shape, &device)
            .cumsum(dim)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        assert_eq!(g, c, "{shape:?} dim {dim}");
        let ints: Vec<i32> = data.iter().map(|&v| v as i32).collect();
        let ci = Tensor::from_vec(ints.clone(), &shape, &Device::Cpu)
            .unwrap()
            .cumsum(dim)
            .unwrap();
        let gi = Tensor::from_vec(ints, &shape, &device)
            .unwrap()
            .cumsum(dim)
            .unwrap();
        assert_eq!(gi.dtype(), DType::I32);
        assert_eq!(gi.to_vec::<i32>().unwrap(), ci.to_vec::<i32>().unwrap());
    }
    // Real-valued rows: the GPU's tree sums within f32 rounding of the CPU's.
    let x = Tensor::rand_with(&[3, 70_000], 0.0, 1.0, 4, &Device::Cpu).unwrap();
    let c = x.cumsum(1).unwrap().to_vec_f32().unwrap();
    let g = x
        .to(&device)
        .unwrap()
        .cumsum(1)
        .unwrap()
        .to_vec_f32()
        .unwrap();
    assert!(max_rel_err(&g, &c) <= 1e-5, "{}", max_rel_err(&g, &c));
}

#[test]
fn randint_and_randperm_are_uniform_and_device_independent() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    let mut results = Vec::new();
    for device in &devices {
        let r = Tensor::randint_with(-3, 7, &[100_000], 11, device).unwrap();
        assert_eq!(r.dtype(), DType::I32);
        let v = r.to_vec::<i32>().unwrap();
        let mut counts = [0usize; 10];
        for &x in &v {
            assert!((-3..7).contains(&x));
            counts[(x + 3) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 - 10_000.0).abs() < 500.0, "{counts:?}");
        }
        let full = Tensor::randint_with(i32::MIN, i32::MAX, &[1000], 3, device).unwrap();
        let p = Tensor::randperm_with(5000, 7, device)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..5000).collect::<Vec<_>>());
        // Position of element 0 over many small permutations: uniform.
        let mut first = [0usize; 4];
        for seed in 0..2000 {
            let q = Tensor::randperm_with(4, seed, device)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            first[q[0] as usize] += 1;
        }
        for c in first {
            assert!((c as f64 - 500.0).abs() < 90.0, "{first:?}");
        }
        results.push((v, full.to_vec::<i32>().unwrap(), p));
    }
    if results.len() == 2 {
        assert!(results[0] == results[1], "CPU and GPU draws differ");
    }
    assert!(Tensor::randperm_with(0, 1, &Device::Cpu).unwrap().numel() == 0);
}

#[test]
fn manual_seed_makes_draws_reproducible() {
    let _guard = seed_lock();
    wgrad::manual_seed(5);
    let a = Tensor::randint(0, 100, &[50], &Device::Cpu)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    let b = Tensor::randperm(50, &Device::Cpu)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    wgrad::manual_seed(5);
    assert_eq!(
        Tensor::randint(0, 100, &[50], &Device::Cpu)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        a
    );
    assert_eq!(
        Tensor::randperm(50, &Device::Cpu)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        b
    );
    assert_ne!(
        Tensor::randint(0, 100, &[50], &Device::Cpu)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        a
    );
}

#[test]
fn bernoulli_frequencies_and_errors() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    let probs: Vec<f32> = (0..40_000)
        .map(|i| [0.0, 0.1, 0.5, 0.9, 1.0][i % 5])
        .collect();
    let mut draws = Vec::new();
    for device in &devices {
        let p = f(&probs, &[200, 200], device);
        let out = p.bernoulli_with(8).unwrap().to_vec_f32().unwrap();
        let mut ones = [0usize; 5];
        for (i, &o) in out.iter().enumerate() {
            assert!(o == 0.0 || o == 1.0);
            ones[i % 5] += o as usize;
        }
        assert_eq!(ones[0], 0);
        assert_eq!(ones[4], 8000);
        for (k, want) in [(1, 0.1), (2, 0.5), (3, 0.9)] {
            let got = ones[k] as f64 / 8000.0;
            assert!((got - want).abs() < 0.02, "{device} p={want}: {got}");
        }
        draws.push(out);
        let bad = f(&[0.5, 1.5], &[2], device);
        let e = bad
            .bernoulli_with(1)
            .and_then(|t| t.to_vec_f32())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("bernoulli") && e.contains("element 1"),
            "{device}: {e}"
        );
        // The fault is reported once; the device works on.
        assert!(
            f(&[0.5], &[1], device)
                .bernoulli_with(1)
                .unwrap()
                .to_vec_f32()
                .is_ok()
        );
    }
    if draws.len() == 2 {
        assert!(draws[0] == draws[1], "CPU and GPU draws differ");
    }
}

#[test]
fn multinomial_frequencies_match_the_weights() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    let w = [1.0, 0.0, 3.0, 4.0, 2.0, 2.0, 0.0, 4.0];
    let mut all = Vec::new();
    for device in &devices {
        let weights = f(&w, &[2, 4], device);
        let s = weights.multinomial_with(20_000, true, 3).unwrap();
        assert_eq!(
            (s.shape().to_vec(), s.dtype()),
            (vec![2, 20_000], DType::I32)
        );
        let v = s.to_vec::<i32>().unwrap();
        for (r, row) in v.chunks(20_000).enumerate() {
            let total: f32 = w[r * 4..r * 4 + 4].iter().sum();
            for c in 0..4 {
                let got = row.iter().filter(|&&x| x == c as i32).count() as f64 / 20_000.0;
                let want = f64::from(w[r * 4 + c] / total);
                assert!(
                    (got - want).abs() < 0.015,
                    "{device} row {r} cat {c}: {got} vs {want}"
                );
            }
        }
        // Without replacement: distinct, never a zero weight, and the first
        // pick follows the weights.
        let mut first = [0usize; 4];
        let mut picks = Vec::new();
        for seed in 0..1000 {
            let d = weights
                .multinomial_with(3, false, seed)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            for row in d.chunks(3) {
                let mut s = row.to_vec();
                s.sort_unstable();
                s.dedup();
                assert_eq!(s.len(), 3, "{row:?}");
            }
            assert!(!d[..3].contains(&1) && !d[3..].contains(&2), "{d:?}");
            first[d[0] as usize] += 1;
            picks.extend(d);
        }
        for (c, want) in [(0, 0.125), (2, 0.375), (3, 0.5)] {
            let got = first[c] as f64 / 1000.0;
            assert!((got - want).abs() < 0.05, "{device} first pick {c}: {got}");
        }
        let one = f(&[0.0, 5.0], &[2], device)
            .multinomial_with(3, true, 1)
            .unwrap();
        assert_eq!(one.to_vec::<i32>().unwrap(), [1, 1, 1]);
        all.push((v, picks));
    }
    if all.len() == 2 {
        assert!(all[0].0 == all[1].0, "with replacement: CPU and GPU differ");
        let same = all[0]
            .1
            .iter()
            .zip(&all[1].1)
            .filter(|(a, b)| a == b)
            .count();
        assert!(
            same as f64 >= 0.99 * all[0].1.len() as f64,
            "without: {same}"
        );
    }
}

#[test]
fn multinomial_rejects_bad_rows_on_both_devices() {
    // The GPU reports bad rows as a device fault, read at the next sync of
    // that device: a device of its own, or a test syncing the shared one
    // meanwhile would be handed this test's fault (seen on an H100).
    let mut devices = vec![Device::Cpu];
    devices.extend(wgrad_test_support::own_gpu().map(Device::Gpu));
    for device in &devices {
        for (w, replacement, why) in [
            (vec![1.0, 1.0, 1.0, -1.0], true, "negative"),
            (vec![1.0, 1.0, 0.0, 0.0], true, "only zero"),
            (vec![1.0, 1.0, 1.0, f32::NAN], true, "NaN"),
            (vec![1.0, 1.0, 0.0, 1.0], false, "fewer non-zero"),
        ] {
            let e = f(&w, &[2, 2], device)
                .multinomial_with(2, replacement, 0)
                .and_then(|t| t.to_vec::<i32>())
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("multinomial") && e.contains(why) && e.contains("row 1"),
                "{device}: {e}"
            );
        }
    }
}

#[test]
fn samplers_read_nothing_back_on_gpu() {
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    let device = Device::Gpu(g.clone());
    let probs = Tensor::full(&[4, 300], 0.5, DType::F32, &device).unwrap();
    let before = g.stats();
    let outs = [
        Tensor::randint_with(0, 9, &[1000], 1, &device).unwrap(),
        Tensor::randperm_with(3000, 2, &device).unwrap(),
        probs.bernoulli_with(3).unwrap(),
        probs.multinomial_with(5, true, 4).unwrap(),
        probs.multinomial_with(5, false, 5).unwrap(),
        probs.cumsum(-1).unwrap(),
        probs.topk(3, 0, true, true).unwrap().0,
    ];
    assert_eq!(g.stats().since(&before).readbacks, 0);
    assert_eq!(outs[4].shape().to_vec(), vec![4, 5]);
    let e = Tensor::from_vec(vec![1i32, 0], &[2], &device)
        .unwrap()
        .bernoulli_with(0)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bernoulli"), "{e}");
    let e = Tensor::from_vec(vec![1i32, 0], &[2], &Device::Cpu)
        .unwrap()
        .bernoulli_with(0)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bernoulli"), "{e}");
}

#[test]
fn topk_of_zero_and_empty_rows() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        let x = f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], device)
            .with_requires_grad(true)
            .unwrap();
        let (v, i) = x.topk(0, -1, true, true).unwrap();
        assert_eq!(
            (v.shape().to_vec(), i.shape().to_vec()),
            (vec![2, 0], vec![2, 0])
        );
        v.sum_all().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), [0.0; 6]);
        let e = f(&[], &[3, 0], device);
        let (v, _) = e.topk(0, 1, false, true).unwrap();
        assert_eq!(v.shape().to_vec(), vec![3, 0]);
        assert_eq!(e.cumsum(1).unwrap().shape().to_vec(), vec![3, 0]);
    }
}

#[test]
fn cumprod_on_gpu_equals_cpu_over_many_blocks() {
    let Some(device) = gpu() else { return };
    // Values in {-1, 0, 1}: every partial product is exact.
    for (shape, dim) in [(vec![3, 3000], -1isize), (vec![2500, 2], 0), (vec![], 0)] {
        let n: usize = shape.iter().product();
        let data = ties(n, 3, 8);
        let c = f(&data, &shape, &Device::Cpu).cumprod(dim).unwrap();
        let g = f(&data, &shape, &device).cumprod(dim).unwrap();
        assert_eq!(
            g.to_vec_f32().unwrap(),
            c.to_vec_f32().unwrap(),
            "{shape:?}"
        );
        let ints: Vec<i32> = data.iter().map(|&v| v as i32 + 2).collect();
        let ci = Tensor::from_vec(ints.clone(), &shape, &Device::Cpu).unwrap();
        let gi = Tensor::from_vec(ints, &shape, &device).unwrap();
        assert_eq!(
            gi.cumprod(dim).unwrap().to_vec::<i32>().unwrap(),
            ci.cumprod(dim).unwrap().to_vec::<i32>().unwrap(),
            "i32 {shape:?}"
        );
    }
    let x = Tensor::rand_with(&[2, 5000], 0.999, 1.001, 6, &Device::Cpu).unwrap();
    let c = x.cumprod(1).unwrap().to_vec_f32().unwrap();
    let g = x
        .to(&device)
        .unwrap()
        .cumprod(1)
        .unwrap()
        .to_vec_f32()
        .unwrap();
    assert!(max_rel_err(&g, &c) <= 1e-5, "{}", max_rel_err(&g, &c));
    // The gradient through zeros, without NaN.
    let x = f(&[2.0, 0.0, 3.0, 0.0, 5.0], &[5], &device)
        .with_requires_grad(true)
        .unwrap();
    x.cumprod(0).unwrap().sum_all().unwrap().backward().unwrap();
    // d/dx_k of sum_j prod_{i<=j} x_i.
    assert_eq!(
        x.grad().unwrap().to_vec_f32().unwrap(),
        [1.0, 8.0, 0.0, 0.0, 0.0]
    );
}
