//! Reductions (sum, mean, max, min, var, argmax, argmin) and softmax /
//! log-softmax: parity with `wgrad_cpu::CpuTensor`, long reductions that
//! take the two-pass path, ties, NaN, and error messages.
//!
//! Tolerances: max/min/arg* must match exactly; sums, means and variances
//! within 1e-4 relative (`|got - want| / max(1, |want|)`: f32 tree sums in
//! a different order); softmax 1e-5 and log-softmax 1e-5 relative (GPU
//! `exp`/`log` are a few ulp off libm's).

use wgrad_test_support::{assert_close, shared_gpu};

use proptest::prelude::*;
use wgrad_core::DType;
use wgrad_cpu::CpuTensor;
use wgrad_gpu::{GpuDevice, GpuTensor};

/// Deterministic test data: `n` values from `seed`, uniform in [-4, 4), or
/// small integers (many ties) when `ints`, with an optional NaN.
fn data(n: usize, seed: u64, ints: bool, nan_at: Option<usize>) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = (state >> 40) as f32 / (1u64 << 24) as f32;
            if ints {
                (u * 7.0).floor() - 3.0
            } else {
                u * 8.0 - 4.0
            }
        })
        .collect();
    if let Some(i) = nan_at
        && n > 0
    {
        v[i % n] = f32::NAN;
    }
    v
}

/// The same values on both devices.
fn pair(gpu: &GpuDevice, values: Vec<f32>, shape: &[usize]) -> (CpuTensor, GpuTensor) {
    (
        CpuTensor::from_vec(values.clone(), shape).unwrap(),
        GpuTensor::from_vec(gpu, values, shape).unwrap(),
    )
}

/// How the tested tensor is viewed before reducing (to exercise strides,
/// offsets and stride-0 dims).
#[derive(Clone, Debug)]
enum View {
    Contiguous,
    /// Swap axes `a % rank` and `b % rank`.
    Transpose(usize, usize),
    /// Reverse all axes.
    Reverse,
    /// Base has `extra` more elements on axis `a % rank`; narrow from `start % (extra+1)`.
    Narrow(usize, usize, usize),
    /// Base has size 1 on axis `a % rank`, expanded to the target size.
    Expand(usize),
}

/// Builds `shape` (after the view) on both devices.
fn build(
    gpu: &GpuDevice,
    shape: &[usize],
    view: &View,
    seed: u64,
    ints: bool,
    nan_at: Option<usize>,
) -> (CpuTensor, GpuTensor) {
    let rank = shape.len();
    let mk = |base: &[usize]| {
        let n = base.iter().product();
        pair(gpu, data(n, seed, ints, nan_at), base)
    };
    match (view, rank) {
        (View::Contiguous, _) | (_, 0) => mk(shape),
        (View::Transpose(a, b), _) => {
            let (a, b) = (a % rank, b % rank);
            let mut base = shape.to_vec();
            base.swap(a, b);
            let (c, g) = mk(&base);
            let (a, b) = (a as isize, b as isize);
            (c.transpose(a, b).unwrap(), g.transpose(a, b).unwrap())
        }
        (View::Reverse, _) => {
            let base: Vec<usize> = shape.iter().rev().copied().collect();
            let (c, g) = mk(&base);
            let perm: Vec<isize> = (0..rank as isize).rev().collect();
            (c.permute(&perm).unwrap(), g.permute(&perm).unwrap())
        }
        (View::Narrow(a, start, extra), _) => {
            let a = a % rank;
            let mut base = shape.to_vec();
            base[a] += extra;
            let start = start % (extra + 1);
            let (c, g) = mk(&base);
            (
                c.narrow(a as isize, start, shape[a]).unwrap(),
                g.narrow(a as isize, start, shape[a]).unwrap(),
            )
        }
        (View::Expand(a), _) => {
            let a = a % rank;
            let mut base = shape.to_vec();
            base[a] = 1;
            let (c, g) = mk(&base);
            (c.expand(shape).unwrap(), g.expand(shape).unwrap())
        }
    }
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Contiguous),
        (0..4usize, 0..4usize).prop_map(|(a, b)| View::Transpose(a, b)),
        Just(View::Reverse),
        (0..4usize, 0..5usize, 1..4usize).prop_map(|(a, s, e)| View::Narrow(a, s, e)),
        (0..4usize).prop_map(View::Expand),
    ]
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![1 => Just(0usize), 2 => Just(1usize), 6 => 2..9usize, 1 => 30..70usize],
        0..=4,
    )
}

/// Axes from a bit mask, some written as negative; empty = all axes.
fn axes_of(mask: u8, negative: bool, rank: usize) -> Vec<isize> {
    (0..rank)
        .filter(|a| mask & (1 << a) != 0)
        .map(|a| {
            if negative && a % 2 == 1 {
                a as isize - rank as isize
            } else {
                a as isize
            }
        })
        .collect()
}

fn gpu_f32(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

fn cpu_f32(t: &CpuTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// Compares one f32 reduction result (or that both failed).
fn check_f32(
    what: &str,
    got: wgrad_core::Result<GpuTensor>,
    want: wgrad_core::Result<CpuTensor>,
    tol: f32,
) {
    match (got, want) {
        (Ok(g), Ok(w)) => {
            assert_eq!(g.shape(), w.shape(), "{what}: shape");
            assert_eq!(g.dtype(), DType::F32, "{what}: dtype");
            assert_close(&gpu_f32(&g), &cpu_f32(&w), tol, what);
        }
        (Err(_), Err(_)) => {}
        (g, w) => panic!("{what}: gpu {g:?} vs cpu {w:?}"),
    }
}

/// Compares one I32 result (or that both failed).
fn check_i32(what: &str, got: wgrad_core::Result<GpuTensor>, want: wgrad_core::Result<CpuTensor>) {
    match (got, want) {
        (Ok(g), Ok(w)) => {
            assert_eq!(g.shape(), w.shape(), "{what}: shape");
            assert_eq!(g.dtype(), DType::I32, "{what}: dtype");
            assert_eq!(
                g.to_vec_blocking::<i32>().unwrap(),
                w.to_vec::<i32>().unwrap(),
                "{what}"
            );
        }
        (Err(_), Err(_)) => {}
        (g, w) => panic!("{what}: gpu {g:?} vs cpu {w:?}"),
    }
}

/// Every axes-reduction of `(c, g)` over `axes`, compared.
fn check_reductions(c: &CpuTensor, g: &GpuTensor, axes: &[isize], keepdim: bool, tag: &str) {
    let w = |op: &str| format!("{op} {tag} axes {axes:?} keepdim {keepdim}");
    check_f32(&w("sum"), g.sum(axes, keepdim), c.sum(axes, keepdim), 1e-4);
    check_f32(
        &w("mean"),
        g.mean(axes, keepdim),
        c.mean(axes, keepdim),
        1e-4,
    );
    check_f32(&w("max"), g.max(axes, keepdim), c.max(axes, keepdim), 0.0);
    check_f32(&w("min"), g.min(axes, keepdim), c.min(axes, keepdim), 0.0);
    for correction in [0, 1] {
        check_f32(
            &w(&format!("var(correction {correction})")),
            g.var(axes, correction, keepdim),
            c.var(axes, correction, keepdim),
            1e-4,
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn reductions_match_cpu(
        shape in shape_strategy(),
        view in view_strategy(),
        mask in any::<u8>(),
        negative in any::<bool>(),
        keepdim in any::<bool>(),
        seed in any::<u64>(),
        ints in any::<bool>(),
        nan_at in prop::option::weighted(0.15, any::<usize>()),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (c, g) = build(&gpu, &shape, &view, seed, ints, nan_at);
        let axes = axes_of(mask, negative, shape.len());
        check_reductions(&c, &g, &axes, keepdim, &format!("{shape:?} {view:?}"));
    }

    #[test]
    fn arg_extremes_match_cpu(
        shape in shape_strategy().prop_filter("rank >= 1", |s| !s.is_empty()),
        view in view_strategy(),
        axis in 0..4usize,
        negative in any::<bool>(),
        keepdim in any::<bool>(),
        seed in any::<u64>(),
        ints in any::<bool>(),
        nan_at in prop::option::weighted(0.15, any::<usize>()),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (c, g) = build(&gpu, &shape, &view, seed, ints, nan_at);
        let rank = shape.len();
        let axis = (axis % rank) as isize - if negative { rank as isize } else { 0 };
        let what = format!("{shape:?} {view:?} axis {axis} keepdim {keepdim}");
        check_i32(&format!("argmax {what}"), g.argmax(axis, keepdim), c.argmax(axis, keepdim));
        check_i32(&format!("argmin {what}"), g.argmin(axis, keepdim), c.argmin(axis, keepdim));
    }

    #[test]
    fn softmax_matches_cpu(
        shape in shape_strategy().prop_filter("rank >= 1", |s| !s.is_empty()),
        view in view_strategy(),
        axis in 0..4usize,
        seed in any::<u64>(),
        nan_at in prop::option::weighted(0.1, any::<usize>()),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let (c, g) = build(&gpu, &shape, &view, seed, false, nan_at);
        let axis = (axis % shape.len()) as isize;
        let what = format!("{shape:?} {view:?} axis {axis}");
        check_f32(&format!("softmax {what}"), g.softmax(axis), c.softmax(axis), 1e-5);
        check_f32(&format!("log_softmax {what}"), g.log_softmax(axis), c.log_softmax(axis), 1e-5);
    }
}

/// Shapes long enough that reductions split rows into chunks and finish in
/// a second pass (contiguous rows, strided rows, and everything to a scalar).
#[test]
fn split_reductions_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let cases: &[(&[usize], &[isize])] = &[
        (&[3, 40_000], &[1]),
        (&[50_000, 4], &[0]),
        (&[200, 300], &[]),
        (&[2, 9_000, 3], &[0, 1]),
        (&[100_000], &[0]),
    ];
    for (i, &(shape, axes)) in cases.iter().enumerate() {
        let n = shape.iter().product();
        for ints in [false, true] {
            let (c, g) = pair(&gpu, data(n, 7 + i as u64, ints, None), shape);
            for keepdim in [false, true] {
                check_reductions(&c, &g, axes, keepdim, &format!("{shape:?} ints {ints}"));
            }
            for axis in 0..shape.len() as isize {
                let what = format!("{shape:?} ints {ints} axis {axis}");
                check_i32(
                    &format!("argmax {what}"),
                    g.argmax(axis, false),
                    c.argmax(axis, false),
                );
                check_i32(
                    &format!("argmin {what}"),
                    g.argmin(axis, true),
                    c.argmin(axis, true),
                );
            }
        }
    }
    // A transposed long reduction: rows are strided, row starts adjacent.
    let (c, g) = pair(&gpu, data(30_000 * 5, 99, false, None), &[30_000, 5]);
    let (c, g) = (c.transpose(0, 1).unwrap(), g.transpose(0, 1).unwrap());
    check_reductions(&c, &g, &[1], false, "transposed [5, 30000]");
    check_i32("argmax transposed", g.argmax(1, false), c.argmax(1, false));
}

/// prod on values near +-1 (so long products stay finite and nonzero),
/// over contiguous, strided and split rows, with zeros and a NaN.
#[test]
fn prod_matches_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let cases: &[(&[usize], &[isize], bool)] = &[
        (&[3, 5], &[1], false),
        (&[4, 3, 2], &[0, 2], false),
        (&[5, 7], &[0], true),
        (&[3, 40_000], &[1], false),
        (&[50_000, 4], &[0], false),
        (&[100_000], &[], false),
        (&[2, 9_000, 3], &[0, 1], true),
    ];
    for (i, &(shape, axes, transposed)) in cases.iter().enumerate() {
        let n = shape.iter().product();
        let mut v: Vec<f32> = data(n, 31 + i as u64, false, None)
            .into_iter()
            .map(|x| {
                if x < -3.9 {
                    -1.0 - x / 400.0
                } else {
                    1.0 + x / 400.0
                }
            })
            .collect();
        for variant in 0..3 {
            if variant == 1 {
                v[n / 2] = 0.0;
            }
            if variant == 2 {
                v[n / 3] = f32::NAN;
            }
            let (mut c, mut g) = pair(&gpu, v.clone(), shape);
            if transposed {
                c = c.transpose(0, -1).unwrap();
                g = g.transpose(0, -1).unwrap();
            }
            for keepdim in [false, true] {
                let what = format!("prod {shape:?} axes {axes:?} variant {variant}");
                check_f32(&what, g.prod(axes, keepdim), c.prod(axes, keepdim), 1e-3);
            }
        }
    }
    // Empty products are 1; a 0-d tensor is its own product.
    let e = GpuTensor::zeros(&gpu, &[0, 3], DType::F32).unwrap();
    assert_eq!(gpu_f32(&e.prod(&[0], false).unwrap()), vec![1.0; 3]);
    assert_eq!(e.prod(&[1], true).unwrap().shape(), &[0, 1]);
    let x = GpuTensor::from_vec(&gpu, vec![2.5f32], &[]).unwrap();
    assert_eq!(gpu_f32(&x.prod(&[], false).unwrap()), vec![2.5]);
    assert!(x.prod(&[1], false).is_err());
}

#[test]
fn long_reduction_to_scalar() {
    let Some(gpu) = shared_gpu() else { return };
    let n = 1 << 20;
    let (c, g) = pair(&gpu, data(n, 12345, false, None), &[n]);
    for (what, got, want) in [
        ("sum", g.sum(&[], false), c.sum(&[], false)),
        ("mean", g.mean(&[], false), c.mean(&[], false)),
        ("var", g.var(&[], 1, false), c.var(&[], 1, false)),
    ] {
        let (got, want) = (gpu_f32(&got.unwrap()), cpu_f32(&want.unwrap()));
        let rel = (got[0] - want[0]).abs() / want[0].abs().max(1.0);
        assert!(rel < 1e-4, "{what}: {} vs {} (rel {rel})", got[0], want[0]);
    }
    // Mean of [-4, 4) uniform is near 0, so check the variance's value too.
    let var = gpu_f32(&g.var(&[], 0, false).unwrap())[0];
    assert!((var - 64.0 / 12.0).abs() < 0.05, "var {var}");

    // 1 + 2 + ... exactly representable partial sums: a scalar with a
    // known answer independent of the CPU.
    let ones = GpuTensor::ones(&gpu, &[1 << 22], DType::F32).unwrap();
    assert_eq!(
        gpu_f32(&ones.sum(&[], false).unwrap()),
        vec![(1u32 << 22) as f32]
    );

    // The extreme at a known place, with an equal later copy (first wins).
    let mut v = data(n, 5, false, None);
    v[700_001] = 9.0;
    v[900_000] = 9.0;
    v[12] = -9.0;
    v[n - 1] = -9.0;
    let g = GpuTensor::from_vec(&gpu, v, &[n]).unwrap();
    assert_eq!(
        g.argmax(0, false)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![700_001]
    );
    assert_eq!(
        g.argmin(-1, true)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![12]
    );
    assert_eq!(gpu_f32(&g.max(&[], false).unwrap()), vec![9.0]);
    assert_eq!(gpu_f32(&g.min(&[0], false).unwrap()), vec![-9.0]);
}

#[test]
fn column_sum_of_a_wide_matrix() {
    // Summing the batch dim of [1024, 512]: 512 strided rows of 1024.
    let Some(gpu) = shared_gpu() else { return };
    let (c, g) = pair(&gpu, data(1024 * 512, 3, false, None), &[1024, 512]);
    check_reductions(&c, &g, &[0], false, "[1024, 512]");
    check_reductions(&c, &g, &[1], true, "[1024, 512]");
}

#[test]
fn argmax_ties_take_the_first_index() {
    let Some(gpu) = shared_gpu() else { return };
    let g = GpuTensor::from_vec(
        &gpu,
        vec![1.0f32, 3.0, 3.0, 0.0, 2.0, 2.0, 2.0, 2.0],
        &[2, 4],
    )
    .unwrap();
    let i32s = |t: GpuTensor| t.to_vec_blocking::<i32>().unwrap();
    assert_eq!(i32s(g.argmax(1, false).unwrap()), vec![1, 0]);
    assert_eq!(i32s(g.argmin(1, false).unwrap()), vec![3, 0]);
    assert_eq!(i32s(g.argmax(0, false).unwrap()), vec![1, 0, 0, 1]);
    let k = g.argmax(-1, true).unwrap();
    assert_eq!(k.shape(), &[2, 1]);
    // An expanded (stride-0) axis is all ties.
    let e = GpuTensor::from_vec(&gpu, vec![5.0f32, 6.0], &[2, 1])
        .unwrap()
        .expand(&[2, 300])
        .unwrap();
    assert_eq!(i32s(e.argmax(1, false).unwrap()), vec![0, 0]);
    // NaN is the extreme for both, and the first NaN wins.
    let n = GpuTensor::from_vec(&gpu, vec![1.0f32, f32::NAN, 7.0, f32::NAN], &[4]).unwrap();
    assert_eq!(i32s(n.argmax(0, false).unwrap()), vec![1]);
    assert_eq!(i32s(n.argmin(0, false).unwrap()), vec![1]);
    assert!(gpu_f32(&n.max(&[], false).unwrap())[0].is_nan());
    assert!(gpu_f32(&n.min(&[], false).unwrap())[0].is_nan());
}

#[test]
fn softmax_of_large_magnitudes_stays_finite() {
    let Some(gpu) = shared_gpu() else { return };
    let v: Vec<f32> = data(6 * 500, 11, false, None)
        .into_iter()
        .map(|x| x * 20.0) // about +-80: exp would overflow without the max shift
        .collect();
    let (c, g) = pair(&gpu, v, &[6, 500]);
    for axis in [0isize, 1, -1] {
        let s = gpu_f32(&g.softmax(axis).unwrap());
        assert!(s.iter().all(|x| x.is_finite()), "softmax axis {axis}");
        assert_close(&s, &cpu_f32(&c.softmax(axis).unwrap()), 1e-5, "softmax");
        let l = gpu_f32(&g.log_softmax(axis).unwrap());
        assert!(l.iter().all(|x| x.is_finite()), "log_softmax axis {axis}");
        assert_close(
            &l,
            &cpu_f32(&c.log_softmax(axis).unwrap()),
            1e-5,
            "log_softmax",
        );
    }
    // Rows sum to 1.
    let s = gpu_f32(&g.softmax(1).unwrap());
    for row in s.chunks(500) {
        let total: f32 = row.iter().sum();
        assert!((total - 1.0).abs() < 1e-4, "row sum {total}");
    }
    // A huge gap: log_softmax keeps the exact difference.
    let h = GpuTensor::from_vec(&gpu, vec![1000.0f32, 0.0, -1000.0], &[3]).unwrap();
    assert_eq!(gpu_f32(&h.softmax(0).unwrap()), vec![1.0, 0.0, 0.0]);
    assert_eq!(
        gpu_f32(&h.log_softmax(0).unwrap()),
        vec![0.0, -1000.0, -2000.0]
    );
    // -inf entries get probability 0.
    let m = GpuTensor::from_vec(&gpu, vec![f32::NEG_INFINITY, 0.0, 0.0], &[3]).unwrap();
    assert_eq!(gpu_f32(&m.softmax(0).unwrap()), vec![0.0, 0.5, 0.5]);
}

#[test]
fn long_softmax_rows() {
    let Some(gpu) = shared_gpu() else { return };
    let (c, g) = pair(&gpu, data(3 * 20_000, 4, false, None), &[3, 20_000]);
    check_f32("softmax long rows", g.softmax(1), c.softmax(1), 1e-5);
    check_f32(
        "log_softmax long rows",
        g.log_softmax(1),
        c.log_softmax(1),
        1e-5,
    );
    check_f32("softmax strided", g.softmax(0), c.softmax(0), 1e-5);
    // Long strided rows (split with neighbouring threads on neighbouring
    // rows), with a NaN row, a row of -inf and a row with some -inf.
    let mut v = data(20_000 * 4, 8, false, None);
    v[4 * 15_000] = f32::NAN;
    for i in 0..20_000 {
        v[4 * i + 1] = f32::NEG_INFINITY;
        if i % 3 == 0 {
            v[4 * i + 2] = f32::NEG_INFINITY;
        }
    }
    let (c, g) = pair(&gpu, v, &[20_000, 4]);
    for (what, got, want) in [
        ("softmax split strided", g.softmax(0), c.softmax(0)),
        (
            "log_softmax split strided",
            g.log_softmax(0),
            c.log_softmax(0),
        ),
    ] {
        let (got, want) = (gpu_f32(&got.unwrap()), cpu_f32(&want.unwrap()));
        assert_close(&got, &want, 1e-5, what);
        // Column 2 has a finite maximum: its -inf entries give no NaN.
        assert!(got.iter().skip(2).step_by(4).all(|x| !x.is_nan()), "{what}");
    }
}

#[test]
fn empty_reductions() {
    let Some(gpu) = shared_gpu() else { return };
    let g = GpuTensor::zeros(&gpu, &[0, 3], DType::F32).unwrap();
    let s = g.sum(&[0], false).unwrap();
    assert_eq!(s.shape(), &[3]);
    assert_eq!(gpu_f32(&s), vec![0.0; 3]);
    assert!(
        gpu_f32(&g.mean(&[0], true).unwrap())
            .iter()
            .all(|x| x.is_nan())
    );
    assert!(gpu_f32(&g.var(&[], 1, false).unwrap())[0].is_nan());
    assert_eq!(gpu_f32(&g.sum(&[], false).unwrap()), vec![0.0]);
    // Reducing the non-empty axis of an empty tensor is fine: no rows.
    assert_eq!(g.max(&[1], false).unwrap().shape(), &[0]);
    assert_eq!(g.argmax(1, true).unwrap().shape(), &[0, 1]);
    assert_eq!(g.softmax(0).unwrap().shape(), &[0, 3]);
    // A scalar reduces to itself.
    let x = GpuTensor::from_vec(&gpu, vec![2.5f32], &[]).unwrap();
    assert_eq!(gpu_f32(&x.sum(&[], false).unwrap()), vec![2.5]);
    assert_eq!(gpu_f32(&x.max(&[], true).unwrap()), vec![2.5]);
    // var with n <= correction divides by zero: 0/0 = NaN.
    let one = GpuTensor::from_vec(&gpu, vec![4.0f32], &[1]).unwrap();
    assert!(gpu_f32(&one.var(&[], 1, false).unwrap())[0].is_nan());
}

#[test]
fn errors_name_the_problem() {
    let Some(gpu) = shared_gpu() else { return };
    let g = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let msg = |e: wgrad_core::Error| e.to_string();

    let e = msg(g.sum(&[2], false).unwrap_err());
    assert!(
        e.contains("sum") && e.contains("axis 2") && e.contains("rank 2"),
        "{e}"
    );
    let e = msg(g.argmax(-3, false).unwrap_err());
    assert!(
        e.contains("argmax") && e.contains("-3") && e.contains("rank 2"),
        "{e}"
    );
    let e = msg(g.softmax(5).unwrap_err());
    assert!(
        e.contains("softmax") && e.contains('5') && e.contains("rank 2"),
        "{e}"
    );
    let e = msg(g.var(&[0, -2], 1, false).unwrap_err());
    assert!(e.contains("var") && e.contains("more than once"), "{e}");

    let empty = GpuTensor::zeros(&gpu, &[0, 3], DType::F32).unwrap();
    for e in [
        empty.max(&[0], false).unwrap_err(),
        empty.min(&[], true).unwrap_err(),
        empty.argmin(0, false).unwrap_err(),
    ] {
        let e = msg(e);
        assert!(e.contains("empty") && e.contains("[0, 3]"), "{e}");
    }
    let cpu_msg = msg(CpuTensor::zeros(&[0, 3], DType::F32)
        .unwrap()
        .max(&[0], false)
        .unwrap_err());
    assert_eq!(msg(empty.max(&[0], false).unwrap_err()), cpu_msg);

    let ints = GpuTensor::from_vec(&gpu, vec![1i32, 2], &[2]).unwrap();
    for e in [
        ints.sum(&[], false).unwrap_err(),
        ints.argmax(0, false).unwrap_err(),
        ints.var(&[], 0, false).unwrap_err(),
        ints.log_softmax(0).unwrap_err(),
    ] {
        assert!(
            matches!(e, wgrad_core::Error::DTypeMismatch { .. }),
            "{e:?}"
        );
        let e = msg(e);
        assert!(e.contains("float32") && e.contains("int32"), "{e}");
    }
}

/// Throughput of the reduce/softmax kernels on large tensors (not a check:
/// run with `--ignored --nocapture` on a real GPU). GB/s counts bytes read
/// once plus bytes written.
#[test]
#[ignore = "benchmark; run explicitly on a real GPU"]
fn bench_reductions() {
    let Some(gpu) = shared_gpu() else { return };
    eprintln!("adapter: {}", gpu.label());
    let mk = |shape: &[usize]| GpuTensor::rand(&gpu, shape, -1.0, 1.0, 1).unwrap();
    type Op = Box<dyn Fn(&GpuTensor) -> GpuTensor>;
    let cases: Vec<(&str, Vec<usize>, Op, usize)> = vec![
        (
            "sum [1024,4096] dim1",
            vec![1024, 4096],
            Box::new(|t| t.sum(&[1], false).unwrap()),
            1024,
        ),
        (
            "sum [1024,4096] dim0",
            vec![1024, 4096],
            Box::new(|t| t.sum(&[0], false).unwrap()),
            4096,
        ),
        (
            "sum [4096,4096] dim0",
            vec![4096, 4096],
            Box::new(|t| t.sum(&[0], false).unwrap()),
            4096,
        ),
        (
            "sum [4096,4096] T dim1",
            vec![4096, 4096],
            Box::new(|t| t.transpose(0, 1).unwrap().sum(&[1], false).unwrap()),
            4096,
        ),
        (
            "sum 64M -> scalar",
            vec![1 << 26],
            Box::new(|t| t.sum(&[], false).unwrap()),
            1,
        ),
        (
            "max 64M -> scalar",
            vec![1 << 26],
            Box::new(|t| t.max(&[], false).unwrap()),
            1,
        ),
        (
            "var 64M -> scalar (2 reads)",
            vec![1 << 26],
            Box::new(|t| t.var(&[], 1, false).unwrap()),
            1,
        ),
        (
            "argmax 64M",
            vec![1 << 26],
            Box::new(|t| t.argmax(0, false).unwrap()),
            1,
        ),
        (
            "mean [64,1024,1024] dims 0,2",
            vec![64, 1024, 1024],
            Box::new(|t| t.mean(&[0, 2], false).unwrap()),
            1024,
        ),
        (
            "argmax [4096,4096] dim1",
            vec![4096, 4096],
            Box::new(|t| t.argmax(1, false).unwrap()),
            4096,
        ),
        (
            "sum [1<<20, 16] dim1",
            vec![1 << 20, 16],
            Box::new(|t| t.sum(&[1], false).unwrap()),
            1 << 20,
        ),
        (
            "sum [16, 1<<20] dim0",
            vec![16, 1 << 20],
            Box::new(|t| t.sum(&[0], false).unwrap()),
            1 << 20,
        ),
        (
            "sum [1<<22, 4] dim1",
            vec![1 << 22, 4],
            Box::new(|t| t.sum(&[1], false).unwrap()),
            1 << 22,
        ),
        (
            "sum [4, 1<<22] dim0",
            vec![4, 1 << 22],
            Box::new(|t| t.sum(&[0], false).unwrap()),
            1 << 22,
        ),
        (
            "sum [1<<16, 256] dim1",
            vec![1 << 16, 256],
            Box::new(|t| t.sum(&[1], false).unwrap()),
            1 << 16,
        ),
        (
            "sum [256, 1<<16] dim0",
            vec![256, 1 << 16],
            Box::new(|t| t.sum(&[0], false).unwrap()),
            1 << 16,
        ),
        (
            "softmax [65536, 16] dim1",
            vec![1 << 16, 16],
            Box::new(|t| t.softmax(1).unwrap()),
            1 << 20,
        ),
        (
            "softmax [4096,4096] dim1",
            vec![4096, 4096],
            Box::new(|t| t.softmax(1).unwrap()),
            4096 * 4096,
        ),
        (
            "softmax [4096,4096] dim0",
            vec![4096, 4096],
            Box::new(|t| t.softmax(0).unwrap()),
            4096 * 4096,
        ),
        (
            "log_softmax [65536,1000] dim1",
            vec![65536, 1000],
            Box::new(|t| t.log_softmax(1).unwrap()),
            65536 * 1000,
        ),
        (
            "softmax [64, 1<<20] dim1",
            vec![64, 1 << 20],
            Box::new(|t| t.softmax(1).unwrap()),
            64 << 20,
        ),
    ];
    // Bring the clocks up before timing anything.
    let warm = mk(&[1 << 26]);
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs_f64() < 0.5 {
        warm.sum(&[], false).unwrap();
        gpu.synchronize().unwrap();
    }
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    for (name, shape, op, out_elems) in cases {
        if !name.contains(only.as_str()) {
            continue;
        }
        let x = mk(&shape);
        for _ in 0..5 {
            op(&x);
        }
        gpu.synchronize().unwrap();
        // Best of 5 batches of 50 (one synchronize per batch).
        let iters = 50;
        let mut secs = f64::INFINITY;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            for _ in 0..iters {
                op(&x);
            }
            gpu.synchronize().unwrap();
            secs = secs.min(start.elapsed().as_secs_f64() / f64::from(iters));
        }
        let bytes = (x.numel() + out_elems) as f64 * 4.0;
        eprintln!(
            "{name:34} {:9.3} ms {:8.1} GB/s",
            secs * 1e3,
            bytes / secs / 1e9
        );
    }
}
