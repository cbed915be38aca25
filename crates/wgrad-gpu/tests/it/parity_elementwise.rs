//! Parity of the elementwise family (unary, scalar arithmetic, comparisons,
//! `where_cond`, casts, and the pow edge cases of `binary`) against the CPU
//! reference `wgrad_cpu::CpuTensor`, over random shapes (broadcasting,
//! size-0 and size-1 dims), random values (with NaN, infinities, signed
//! zeros) and non-contiguous inputs (transposed, narrowed, expanded views).
//!
//! Tolerances: results that IEEE pins down (neg, abs, relu, clamp, square,
//! `+ - *`, max/min, comparisons, selection, casts) must match exactly;
//! division and reciprocal within 1e-6 (Vulkan allows 2.5 ulp); the
//! transcendental ops within 2e-5 relative error `|g-w| / max(1, |w|)`
//! (GPU exp/log/sin are a few ulp; pow compounds exp2(y log2 x) errors,
//! so 1e-4 there). NaN must appear exactly where the CPU has NaN.

use wgrad_test_support::{assert_close, own_gpu, shared_gpu};

use proptest::prelude::*;
use wgrad_core::{BinaryOp, CompareOp, DType, UnaryOp};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

// ---------------------------------------------------------------------------
// Helpers: deterministic values, view recipes applied identically on both
// devices, NaN-aware comparison.
// ---------------------------------------------------------------------------

/// SplitMix64: a cheap deterministic value stream per proptest seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Special f32 values mixed into random data.
const SPECIALS: [f32; 10] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    100.0,
    -100.0,
    1e-6,
];

/// `n` floats uniform in `[-range, range]`, about one in eight replaced by a special value.
fn f32_values(n: usize, seed: u64, range: f32) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            if rng.next().is_multiple_of(8) {
                SPECIALS[(rng.next() % SPECIALS.len() as u64) as usize]
            } else {
                (rng.unit() * 2.0 - 1.0) * range
            }
        })
        .collect()
}

/// Small integers (so that equal values occur), as f32 or i32 words.
fn small_ints(n: usize, seed: u64) -> Vec<i32> {
    let mut rng = Rng(seed);
    (0..n).map(|_| (rng.next() % 7) as i32 - 3).collect()
}

/// How an operand of a given logical shape is built.
#[derive(Clone, Copy, Debug)]
enum View {
    /// A fresh contiguous tensor.
    Plain,
    /// The transpose of a contiguous tensor with the last two dims swapped.
    Transposed,
    /// Rows 1..=n of a tensor 3 rows longer on axis 0 (an offset, unread ends).
    Narrowed,
    /// A tensor with every other dim of size 1, expanded (stride-0 dims).
    Expanded,
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Plain),
        Just(View::Transposed),
        Just(View::Narrowed),
        Just(View::Expanded),
    ]
}

/// Host data the base tensor is built from.
#[derive(Clone, Copy, Debug)]
enum Data {
    F32 { range: f32 },
    IntsAsF32,
    I32Small,
    I32Wide,
    U32Wide,
    Mask,
}

fn host<T: bytemuck::Pod>(words: Vec<u32>) -> Vec<T> {
    bytemuck::pod_collect_to_vec(&words)
}

/// A CPU and a GPU tensor with the same contents and the same kind of view,
/// both of logical shape `shape`.
fn operand(
    gpu: &GpuDevice,
    shape: &[usize],
    view: View,
    data: Data,
    seed: u64,
) -> (CpuTensor, GpuTensor) {
    let rank = shape.len();
    let base_shape: Vec<usize> = match view {
        View::Transposed if rank >= 2 => {
            let mut s = shape.to_vec();
            s.swap(rank - 1, rank - 2);
            s
        }
        View::Narrowed if rank >= 1 => {
            let mut s = shape.to_vec();
            s[0] += 3;
            s
        }
        View::Expanded => shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if i % 2 == 0 { 1 } else { d })
            .collect(),
        _ => shape.to_vec(),
    };
    let n: usize = base_shape.iter().product();
    let mut rng = Rng(seed ^ 0x5eed);
    let words: Vec<u32> = match data {
        Data::F32 { range } => f32_values(n, seed, range)
            .into_iter()
            .map(f32::to_bits)
            .collect(),
        Data::IntsAsF32 => {
            let mut v: Vec<u32> = small_ints(n, seed)
                .into_iter()
                .map(|x| (x as f32).to_bits())
                .collect();
            if let Some(first) = v.first_mut() {
                *first = f32::NAN.to_bits();
            }
            v
        }
        Data::I32Small => small_ints(n, seed).into_iter().map(|x| x as u32).collect(),
        Data::I32Wide | Data::U32Wide => (0..n)
            .map(|_| match rng.next() % 4 {
                0 => [0u32, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 16_777_217]
                    [(rng.next() % 6) as usize],
                _ => rng.next() as u32,
            })
            .collect(),
        Data::Mask => (0..n)
            .map(|_| [0u32, 1, 7][(rng.next() % 3) as usize])
            .collect(),
    };
    let (mut cpu, mut dev) = match data {
        Data::F32 { .. } | Data::IntsAsF32 => (
            CpuTensor::from_vec(host::<f32>(words.clone()), &base_shape).unwrap(),
            GpuTensor::from_vec(gpu, host::<f32>(words), &base_shape).unwrap(),
        ),
        Data::I32Small | Data::I32Wide => (
            CpuTensor::from_vec(host::<i32>(words.clone()), &base_shape).unwrap(),
            GpuTensor::from_vec(gpu, host::<i32>(words), &base_shape).unwrap(),
        ),
        Data::U32Wide | Data::Mask => (
            CpuTensor::from_vec(words.clone(), &base_shape).unwrap(),
            GpuTensor::from_vec(gpu, words, &base_shape).unwrap(),
        ),
    };
    match view {
        View::Transposed if rank >= 2 => {
            cpu = cpu.transpose(-1, -2).unwrap();
            dev = dev.transpose(-1, -2).unwrap();
        }
        View::Narrowed if rank >= 1 => {
            cpu = cpu.narrow(0, 1, shape[0]).unwrap();
            dev = dev.narrow(0, 1, shape[0]).unwrap();
        }
        View::Expanded => {
            cpu = cpu.expand(shape).unwrap();
            dev = dev.expand(shape).unwrap();
        }
        _ => {}
    }
    assert_eq!(cpu.shape(), shape);
    assert_eq!(dev.shape(), shape);
    (cpu, dev)
}

/// Shapes of rank 0..=4 with dims biased toward small sizes, 1 and 0.
fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![1 => Just(0usize), 3 => Just(1usize), 8 => 2usize..6],
        0..=4,
    )
}

/// A shape that broadcasts to `out`: some dims set to 1 (bit mask), and
/// `drop` leading dims removed.
fn broadcast_operand_shape(out: &[usize], ones: u8, drop: usize) -> Vec<usize> {
    out.iter()
        .enumerate()
        .skip(drop.min(out.len()))
        .map(|(i, &d)| if ones & (1 << i) != 0 { 1 } else { d })
        .collect()
}

/// Asserts NaN positions and infinities agree exactly, naming the element,
/// then `assert_close` for the finite values.
fn assert_close_nan(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.is_nan(),
            w.is_nan(),
            "{what}: element {i}: got {g}, want {w}\n got: {got:?}\nwant: {want:?}"
        );
        if w.is_infinite() || g.is_infinite() {
            assert_eq!(g, w, "{what}: element {i}");
        }
    }
    assert_close(got, want, tol, what);
}

fn f32s(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

/// The tolerance of a unary op against the CPU reference; ops not named
/// here (new ones included) get the transcendental tolerance.
fn unary_tolerance(op: UnaryOp) -> f32 {
    const EXACT: f32 = 0.0;
    const DIV: f32 = 1e-6;
    const TRANSCENDENTAL: f32 = 2e-5;
    match op {
        UnaryOp::Neg
        | UnaryOp::Abs
        | UnaryOp::Relu
        | UnaryOp::Square
        | UnaryOp::LeakyRelu { .. }
        | UnaryOp::Clamp { .. }
        | UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Hardtanh { .. } => EXACT,
        UnaryOp::Sqrt | UnaryOp::Recip => DIV,
        _ => TRANSCENDENTAL,
    }
}

/// Every unary op (`UnaryOp::ALL`, so a new op is covered without editing
/// a list), plus the parameter values worth testing on their own.
fn every_unary() -> Vec<(UnaryOp, f32)> {
    let parameterised = [
        UnaryOp::LeakyRelu { slope: 0.01 },
        UnaryOp::LeakyRelu { slope: -1.5 },
        UnaryOp::Clamp {
            min: Some(-0.5),
            max: Some(2.0),
        },
        UnaryOp::Clamp {
            min: None,
            max: Some(0.25),
        },
        UnaryOp::Clamp {
            min: Some(1.0),
            max: None,
        },
        // Crossed bounds: x.max(lo).min(hi) gives hi everywhere (but NaN).
        UnaryOp::Clamp {
            min: Some(3.0),
            max: Some(-3.0),
        },
        UnaryOp::Softplus {
            beta: 0.5,
            threshold: 2.0,
        },
        UnaryOp::Softplus {
            beta: 3.0,
            threshold: 20.0,
        },
        UnaryOp::Elu { alpha: 0.3 },
        UnaryOp::Hardtanh {
            min: -0.25,
            max: 2.0,
        },
    ];
    UnaryOp::ALL
        .into_iter()
        .chain(parameterised)
        .map(|op| (op, unary_tolerance(op)))
        .collect()
}

fn binary_tol(op: BinaryOp) -> f32 {
    match op {
        BinaryOp::Div => 1e-6,
        BinaryOp::Pow => 1e-4,
        _ => 0.0,
    }
}

// ---------------------------------------------------------------------------
// Checks, each comparing one op family on one configuration (panicking on a
// mismatch; proptest reports and shrinks panics like failed assertions).
// ---------------------------------------------------------------------------

fn check_unary(gpu: &GpuDevice, shape: &[usize], view: View, range: f32, seed: u64) {
    let (cpu, dev) = operand(gpu, shape, view, Data::F32 { range }, seed);
    for (op, tol) in every_unary() {
        let want = cpu.unary(op).unwrap();
        let got = dev.unary(op).unwrap();
        assert_eq!(got.shape(), want.shape());
        assert!(got.is_contiguous());
        assert_close_nan(
            &f32s(&got),
            &want.to_vec::<f32>().unwrap(),
            tol,
            &format!("{op:?} on {shape:?} {view:?}"),
        );
    }
}

fn check_binary_scalar(gpu: &GpuDevice, shape: &[usize], view: View, scalar: f32, seed: u64) {
    let (cpu, dev) = operand(gpu, shape, view, Data::F32 { range: 4.0 }, seed);
    for op in BinaryOp::ALL {
        for left in [false, true] {
            let want = cpu.binary_scalar(op, scalar, left).unwrap();
            let got = dev.binary_scalar(op, scalar, left).unwrap();
            assert_eq!(got.shape(), want.shape());
            assert_close_nan(
                &f32s(&got),
                &want.to_vec::<f32>().unwrap(),
                binary_tol(op),
                &format!("{op:?} scalar {scalar} left={left} on {shape:?} {view:?}"),
            );
        }
    }
    // The named forms put the scalar on the right.
    assert_close_nan(
        &f32s(&dev.sub_scalar(scalar).unwrap()),
        &cpu.sub_scalar(scalar).unwrap().to_vec::<f32>().unwrap(),
        0.0,
        "sub_scalar",
    );
}

fn check_binary(gpu: &GpuDevice, a: (&[usize], View), b: (&[usize], View), seed: u64) {
    let (ca, ga) = operand(gpu, a.0, a.1, Data::F32 { range: 3.0 }, seed);
    let (cb, gb) = operand(gpu, b.0, b.1, Data::F32 { range: 3.0 }, seed ^ 1);
    for op in BinaryOp::ALL {
        let want = ca.binary(&cb, op).unwrap();
        let got = ga.binary(&gb, op).unwrap();
        assert_eq!(got.shape(), want.shape());
        assert_close_nan(
            &f32s(&got),
            &want.to_vec::<f32>().unwrap(),
            binary_tol(op),
            &format!("{op:?} {a:?} with {b:?}"),
        );
    }
}

fn check_compare(gpu: &GpuDevice, a: (&[usize], View), b: (&[usize], View), int: bool, seed: u64) {
    let data = if int { Data::I32Small } else { Data::IntsAsF32 };
    let (ca, ga) = operand(gpu, a.0, a.1, data, seed);
    let (cb, gb) = operand(gpu, b.0, b.1, data, seed ^ 1);
    for op in CompareOp::ALL {
        let want = ca.compare(&cb, op).unwrap();
        let got = ga.compare(&gb, op).unwrap();
        assert_eq!(got.dtype(), DType::U32);
        assert_eq!(got.shape(), want.shape());
        assert_eq!(
            got.to_vec_blocking::<u32>().unwrap(),
            want.to_vec::<u32>().unwrap(),
            "{op:?} {a:?} with {b:?} ({data:?})"
        );
    }
}

fn check_compare_scalar(
    gpu: &GpuDevice,
    shape: &[usize],
    view: View,
    data: Data,
    scalar: f32,
    seed: u64,
) {
    let (cpu, dev) = operand(gpu, shape, view, data, seed);
    for op in CompareOp::ALL {
        let want = cpu.compare_scalar(op, scalar).unwrap();
        let got = dev.compare_scalar(op, scalar).unwrap();
        assert_eq!(got.dtype(), DType::U32);
        assert_eq!(
            got.to_vec_blocking::<u32>().unwrap(),
            want.to_vec::<u32>().unwrap(),
            "{op:?} {scalar} on {shape:?} {view:?} ({data:?})"
        );
    }
}

fn check_where(
    gpu: &GpuDevice,
    m: (&[usize], View),
    a: (&[usize], View),
    b: (&[usize], View),
    seed: u64,
) {
    let (cm, gm) = operand(gpu, m.0, m.1, Data::Mask, seed);
    let (ca, ga) = operand(gpu, a.0, a.1, Data::F32 { range: 5.0 }, seed ^ 1);
    let (cb, gb) = operand(gpu, b.0, b.1, Data::F32 { range: 5.0 }, seed ^ 2);
    let want = CpuTensor::where_cond(&cm, &ca, &cb).unwrap();
    let got = GpuTensor::where_cond(&gm, &ga, &gb).unwrap();
    assert_eq!(got.shape(), want.shape());
    // Selection moves words: compare bit patterns (NaN payloads, -0.0).
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(
        bits(f32s(&got)),
        bits(want.to_vec::<f32>().unwrap()),
        "mask {m:?}, a {a:?}, b {b:?}"
    );
}

fn check_cast(gpu: &GpuDevice, shape: &[usize], view: View, seed: u64) {
    let sources = [
        (Data::F32 { range: 5e9 }, DType::F32),
        (Data::F32 { range: 3.0 }, DType::F32),
        (Data::I32Wide, DType::I32),
        (Data::U32Wide, DType::U32),
        (Data::Mask, DType::U32),
    ];
    for (data, from) in sources {
        let (cpu, dev) = operand(gpu, shape, view, data, seed);
        assert_eq!(dev.dtype(), from);
        for to in DType::ALL {
            let want = cpu.cast(to).unwrap();
            let got = dev.cast(to).unwrap();
            assert_eq!(got.dtype(), to);
            assert_eq!(got.shape(), want.shape());
            // Exact, compared as bit patterns (NaN only survives F32 -> F32).
            let (g, w): (Vec<u32>, Vec<u32>) = match to {
                DType::F32 => (
                    f32s(&got).into_iter().map(f32::to_bits).collect(),
                    want.to_vec::<f32>()
                        .unwrap()
                        .into_iter()
                        .map(f32::to_bits)
                        .collect(),
                ),
                DType::I32 => (
                    got.to_vec_blocking::<i32>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x as u32)
                        .collect(),
                    want.to_vec::<i32>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x as u32)
                        .collect(),
                ),
                DType::U32 => (
                    got.to_vec_blocking::<u32>().unwrap(),
                    want.to_vec::<u32>().unwrap(),
                ),
                DType::F16 => (
                    got.to_vec_blocking::<half::f16>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x.to_bits().into())
                        .collect(),
                    want.to_vec::<half::f16>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x.to_bits().into())
                        .collect(),
                ),
                DType::BF16 => (
                    got.to_vec_blocking::<half::bf16>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x.to_bits().into())
                        .collect(),
                    want.to_vec::<half::bf16>()
                        .unwrap()
                        .into_iter()
                        .map(|x| x.to_bits().into())
                        .collect(),
                ),
            };
            assert_eq!(g, w, "{from:?} -> {to:?} on {shape:?} {view:?} ({data:?})");
        }
    }
}

// ---------------------------------------------------------------------------
// Property tests (small shapes: the kernels' bounds-checked partial tiles).
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn unary_matches_cpu(
        shape in shape_strategy(),
        view in view_strategy(),
        range in prop_oneof![Just(1.0f32), Just(8.0f32), Just(30.0f32)],
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        check_unary(&gpu, &shape, view, range, seed);
    }

    #[test]
    fn binary_scalar_matches_cpu(
        shape in shape_strategy(),
        view in view_strategy(),
        scalar in prop_oneof![
            Just(2.0f32), Just(3.0f32), Just(-1.0f32), Just(0.5f32), Just(-2.5f32),
            Just(0.0f32), Just(f32::NAN), Just(f32::INFINITY), -4.0f32..4.0,
        ],
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        check_binary_scalar(&gpu, &shape, view, scalar, seed);
    }

    #[test]
    fn binary_broadcast_matches_cpu(
        out in shape_strategy(),
        (ones_a, drop_a, ones_b, drop_b) in (any::<u8>(), 0usize..3, any::<u8>(), 0usize..3),
        (view_a, view_b) in (view_strategy(), view_strategy()),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let sa = broadcast_operand_shape(&out, ones_a, drop_a);
        let sb = broadcast_operand_shape(&out, ones_b, drop_b);
        check_binary(&gpu, (&sa, view_a), (&sb, view_b), seed);
    }

    #[test]
    fn compare_matches_cpu(
        out in shape_strategy(),
        (ones_a, drop_a, ones_b, drop_b) in (any::<u8>(), 0usize..3, any::<u8>(), 0usize..3),
        (view_a, view_b) in (view_strategy(), view_strategy()),
        int in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let sa = broadcast_operand_shape(&out, ones_a, drop_a);
        let sb = broadcast_operand_shape(&out, ones_b, drop_b);
        check_compare(&gpu, (&sa, view_a), (&sb, view_b), int, seed);
    }

    #[test]
    fn compare_scalar_matches_cpu(
        shape in shape_strategy(),
        view in view_strategy(),
        data in prop_oneof![
            Just(Data::IntsAsF32), Just(Data::F32 { range: 3.0 }),
            Just(Data::I32Small), Just(Data::I32Wide),
        ],
        scalar in prop_oneof![
            Just(2.5f32), Just(2.0f32), Just(-1.0f32), Just(-0.5f32), Just(0.0f32),
            Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY),
            Just(3e9f32), Just(-3e9f32), Just(2_147_483_648.0f32), Just(-2_147_483_648.0f32),
            Just(16_777_216.0f32), Just(-2_147_483_904.0f32), -4.0f32..4.0,
        ],
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        check_compare_scalar(&gpu, &shape, view, data, scalar, seed);
    }

    #[test]
    fn where_cond_matches_cpu(
        out in shape_strategy(),
        (ones_m, drop_m) in (any::<u8>(), 0usize..3),
        (ones_a, drop_a, ones_b, drop_b) in (any::<u8>(), 0usize..3, any::<u8>(), 0usize..3),
        (view_m, view_a, view_b) in (view_strategy(), view_strategy(), view_strategy()),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let sm = broadcast_operand_shape(&out, ones_m, drop_m);
        let sa = broadcast_operand_shape(&out, ones_a, drop_a);
        let sb = broadcast_operand_shape(&out, ones_b, drop_b);
        check_where(&gpu, (&sm, view_m), (&sa, view_a), (&sb, view_b), seed);
    }

    #[test]
    fn cast_matches_cpu(
        shape in shape_strategy(),
        view in view_strategy(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        check_cast(&gpu, &shape, view, seed);
    }
}

/// Shapes of several thousand elements: the kernels' full tiles (2048
/// elements per workgroup, all loads before the stores) and a partial tile
/// after them, for every view kind, with broadcasting.
#[test]
fn full_tiles_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let big: &[usize] = &[3, 41, 37];
    let col: &[usize] = &[41, 1];
    let row: &[usize] = &[37];
    let views = [
        View::Plain,
        View::Transposed,
        View::Narrowed,
        View::Expanded,
    ];
    for (k, &view) in views.iter().enumerate() {
        let seed = 1000 + k as u64;
        let other = views[(k + 1) % views.len()];
        check_unary(&gpu, big, view, 8.0, seed);
        check_binary_scalar(&gpu, big, view, -2.0, seed);
        check_binary(&gpu, (big, view), (col, other), seed);
        check_compare(&gpu, (big, view), (row, other), k % 2 == 0, seed);
        check_compare(&gpu, (col, other), (big, view), k % 2 == 1, seed);
        check_compare_scalar(&gpu, big, view, Data::I32Wide, 16_777_216.0, seed);
        check_compare_scalar(&gpu, big, view, Data::F32 { range: 2.0 }, 0.5, seed);
        check_where(&gpu, (col, other), (big, view), (row, view), seed);
        check_where(&gpu, (big, view), (row, other), (big, other), seed);
        check_cast(&gpu, big, view, seed);
    }
}

/// The dense paths of `binary` and `unary` (`BINARY_VEC4`, `UNARY_VEC4`:
/// 16-byte loads when the operands are dense, of one shape, at offsets and
/// a length that are multiples of 4) against the CPU for every op, special
/// values included:
/// full tiles and a partial one, offsets of 4 elements on either side, and
/// the calls that stay on the strided kernel (an offset of 2, a length of
/// 3075).
#[test]
fn dense_elementwise_in_fours_matches_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    // 3078 * 4 elements: three full tiles of 1024 vectors and 6 more.
    let long: &[usize] = &[3078, 4];
    let cases: &[(&[usize], View, View)] = &[
        (long, View::Plain, View::Plain),
        (long, View::Narrowed, View::Plain),
        (long, View::Plain, View::Narrowed),
        (&[1537, 2], View::Narrowed, View::Plain),
        (&[1025, 3], View::Plain, View::Plain),
        (&[1, 4], View::Plain, View::Plain),
    ];
    for (k, &(shape, va, vb)) in cases.iter().enumerate() {
        check_binary(&gpu, (shape, va), (shape, vb), 7000 + k as u64);
        check_unary(&gpu, shape, va, 8.0, 7100 + k as u64);
    }
}

// ---------------------------------------------------------------------------
// Fixed cases: edge values, exactness claims, the recording model, errors.
// ---------------------------------------------------------------------------

/// C `pow` special cases (Rust's `powf`), for `binary` and `binary_scalar`.
#[test]
fn pow_edge_cases_follow_powf() {
    let Some(gpu) = shared_gpu() else { return };
    let inf = f32::INFINITY;
    let bases = [
        -8.0f32,
        -2.0,
        -1.0,
        -0.5,
        -0.0,
        0.0,
        0.5,
        1.0,
        2.0,
        3.0,
        inf,
        -inf,
        f32::NAN,
    ];
    let exps = [
        -3.0f32,
        -2.0,
        -1.0,
        -0.5,
        0.0,
        0.5,
        1.0,
        2.0,
        3.0,
        1e10,
        -1e10,
        3e9,
        inf,
        -inf,
        f32::NAN,
    ];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &bases {
        for &y in &exps {
            a.push(x);
            b.push(y);
        }
    }
    let want: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| x.powf(y)).collect();
    let ga = GpuTensor::from_slice(&gpu, &a, &[a.len()]).unwrap();
    let gb = GpuTensor::from_slice(&gpu, &b, &[b.len()]).unwrap();
    let got = f32s(&ga.pow(&gb).unwrap());
    for i in 0..a.len() {
        let (g, w) = (got[i], want[i]);
        assert!(
            (g.is_nan() && w.is_nan()) || g == w || ((g - w) / w).abs() < 1e-5,
            "pow({}, {}) = {g}, want {w}",
            a[i],
            b[i]
        );
        // Sign matters for odd integer exponents (e.g. (-0)^-1 = -inf).
        if !w.is_nan() {
            assert_eq!(
                g.is_sign_negative(),
                w.is_sign_negative(),
                "pow({}, {}) sign",
                a[i],
                b[i]
            );
        }
    }
    // The scalar kernel shares the function: scalar exponent and scalar base.
    // PyTorch's pow kernel takes the exponents 0.5 and -0.5 as sqrt and
    // rsqrt (sqrt(-0) = -0, rsqrt(-0) = -inf, both NaN at -inf).
    for &y in &exps {
        let got = f32s(&ga.pow_scalar(y).unwrap());
        for (i, &x) in a.iter().enumerate() {
            let w = match y {
                0.5 => x.sqrt(),
                -0.5 => 1.0 / x.sqrt(),
                _ => x.powf(y),
            };
            assert!(
                (got[i].is_nan() && w.is_nan()) || got[i] == w || ((got[i] - w) / w).abs() < 1e-5,
                "pow_scalar: {x}^{y} = {}, want {w}",
                got[i]
            );
            assert!(
                w.is_nan() || got[i].is_sign_negative() == w.is_sign_negative(),
                "pow_scalar: {x}^{y} = {}, want {w} (sign)",
                got[i]
            );
        }
        let got = f32s(&ga.binary_scalar(BinaryOp::Pow, y, true).unwrap());
        for (i, &x) in a.iter().enumerate() {
            let w = y.powf(x);
            assert!(
                (got[i].is_nan() && w.is_nan()) || got[i] == w || ((got[i] - w) / w).abs() < 1e-5,
                "scalar-left pow: {y}^{x} = {}, want {w}",
                got[i]
            );
        }
    }
}

/// Values where the builtins tend to go wrong: overflow of exp inside tanh
/// and sigmoid, large angles, log/sqrt outside their domain, NaN handling.
#[test]
fn unary_edge_values_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        1e-7,
        -3e-4,
        0.3,
        0.62,
        0.63,
        -0.63,
        9.5,
        -9.5,
        50.0,
        -50.0,
        89.0,
        -89.0,
        -104.0,
        1000.0,
        -1000.0,
        1e4,
        -1e4,
    ];
    let cpu = CpuTensor::from_vec(xs.clone(), &[xs.len()]).unwrap();
    let dev = GpuTensor::from_vec(&gpu, xs.clone(), &[xs.len()]).unwrap();
    for (op, tol) in every_unary() {
        let got = f32s(&dev.unary(op).unwrap());
        let want = cpu.unary(op).unwrap().to_vec::<f32>().unwrap();
        // sin/cos at |x| = 1e4 lose a few more bits in the angle reduction.
        let tol = if matches!(op, UnaryOp::Sin | UnaryOp::Cos) {
            2e-4
        } else {
            tol
        };
        assert_close_nan(&got, &want, tol, &format!("{op:?} on {xs:?}"));
        // A zero result keeps the CPU's sign (tanh(-0) = -0: 1 / y tells).
        for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
            if *w == 0.0 {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "{op:?}({x}): gpu {g:?}, cpu {w:?}"
                );
            }
        }
    }
    // relu, clamp and leaky_relu keep NaN, as in PyTorch.
    let nan = GpuTensor::from_vec(&gpu, vec![f32::NAN], &[1]).unwrap();
    assert!(f32s(&nan.relu().unwrap())[0].is_nan());
    assert!(f32s(&nan.clamp(Some(0.0), Some(1.0)).unwrap())[0].is_nan());
    assert!(f32s(&nan.leaky_relu(0.1).unwrap())[0].is_nan());
}

#[test]
fn named_unary_methods_select_their_op() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![-2.0f32, -0.5, 0.25, 1.5, 3.0];
    let cpu = CpuTensor::from_vec(xs.clone(), &[5]).unwrap();
    let dev = GpuTensor::from_vec(&gpu, xs, &[5]).unwrap();
    type Named = fn(&GpuTensor) -> wgrad_core::Result<GpuTensor>;
    let named: [(Named, UnaryOp); 15] = [
        (GpuTensor::neg, UnaryOp::Neg),
        (GpuTensor::abs, UnaryOp::Abs),
        (GpuTensor::exp, UnaryOp::Exp),
        (GpuTensor::log, UnaryOp::Log),
        (GpuTensor::sqrt, UnaryOp::Sqrt),
        (GpuTensor::rsqrt, UnaryOp::Rsqrt),
        (GpuTensor::sin, UnaryOp::Sin),
        (GpuTensor::cos, UnaryOp::Cos),
        (GpuTensor::tanh, UnaryOp::Tanh),
        (GpuTensor::sigmoid, UnaryOp::Sigmoid),
        (GpuTensor::relu, UnaryOp::Relu),
        (GpuTensor::gelu, UnaryOp::Gelu),
        (GpuTensor::silu, UnaryOp::Silu),
        (GpuTensor::square, UnaryOp::Square),
        (GpuTensor::recip, UnaryOp::Recip),
    ];
    for (f, op) in named {
        assert_close_nan(
            &f32s(&f(&dev).unwrap()),
            &cpu.unary(op).unwrap().to_vec::<f32>().unwrap(),
            2e-5,
            op.name(),
        );
    }
    assert_close_nan(
        &f32s(&dev.leaky_relu(0.2).unwrap()),
        &cpu.leaky_relu(0.2).unwrap().to_vec::<f32>().unwrap(),
        0.0,
        "leaky_relu",
    );
    assert_close_nan(
        &f32s(&dev.clamp(Some(-1.0), None).unwrap()),
        &cpu.clamp(Some(-1.0), None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        0.0,
        "clamp",
    );
}

#[test]
fn named_scalar_and_compare_methods_select_their_op() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![-2.0f32, -0.5, 1.0, 1.5, 3.0];
    let cpu = CpuTensor::from_vec(xs.clone(), &[5]).unwrap();
    let dev = GpuTensor::from_vec(&gpu, xs, &[5]).unwrap();
    let s = 1.0f32;
    let pairs = [
        (dev.add_scalar(s), cpu.add_scalar(s)),
        (dev.sub_scalar(s), cpu.sub_scalar(s)),
        (dev.mul_scalar(s), cpu.mul_scalar(s)),
        (dev.div_scalar(3.0), cpu.div_scalar(3.0)),
        (dev.pow_scalar(2.0), cpu.pow_scalar(2.0)),
        (dev.maximum_scalar(s), cpu.maximum_scalar(s)),
        (dev.minimum_scalar(s), cpu.minimum_scalar(s)),
    ];
    for (i, (g, w)) in pairs.into_iter().enumerate() {
        assert_close_nan(
            &f32s(&g.unwrap()),
            &w.unwrap().to_vec::<f32>().unwrap(),
            1e-6,
            &format!("scalar op #{i}"),
        );
    }
    let other = GpuTensor::from_vec(&gpu, vec![1.0f32], &[1]).unwrap();
    let other_cpu = CpuTensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let masks = [
        (dev.eq(&other), cpu.eq(&other_cpu)),
        (dev.ne(&other), cpu.ne(&other_cpu)),
        (dev.lt(&other), cpu.lt(&other_cpu)),
        (dev.le(&other), cpu.le(&other_cpu)),
        (dev.gt(&other), cpu.gt(&other_cpu)),
        (dev.ge(&other), cpu.ge(&other_cpu)),
        (dev.eq_scalar(s), cpu.eq_scalar(s)),
        (dev.ne_scalar(s), cpu.ne_scalar(s)),
        (dev.lt_scalar(s), cpu.lt_scalar(s)),
        (dev.le_scalar(s), cpu.le_scalar(s)),
        (dev.gt_scalar(s), cpu.gt_scalar(s)),
        (dev.ge_scalar(s), cpu.ge_scalar(s)),
    ];
    for (i, (g, w)) in masks.into_iter().enumerate() {
        assert_eq!(
            g.unwrap().to_vec_blocking::<u32>().unwrap(),
            w.unwrap().to_vec::<u32>().unwrap(),
            "compare op #{i}"
        );
    }
}

/// The scalar comparison of an I32 tensor is exact (as in f64), not a
/// comparison after rounding the integer to f32.
#[test]
fn int_scalar_comparison_is_exact() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![2i32, 3, 16_777_217, 16_777_216, i32::MAX, i32::MIN, -3];
    let dev = GpuTensor::from_vec(&gpu, xs.clone(), &[xs.len()]).unwrap();
    let cpu = CpuTensor::from_vec(xs, &[7]).unwrap();
    // 16777217 rounds to 16777216.0 in f32; exactly it is greater.
    assert_eq!(
        dev.gt_scalar(16_777_216.0)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        vec![0, 0, 1, 0, 1, 0, 0]
    );
    assert_eq!(
        dev.lt_scalar(2.5)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        vec![1, 0, 0, 0, 0, 1, 1]
    );
    // i32::MAX = 2147483647 < 2147483648.0, which f32 rounding would call equal.
    for s in [
        2_147_483_648.0f32,
        -2_147_483_648.0,
        16_777_216.0,
        -3.5,
        f32::NAN,
    ] {
        for op in CompareOp::ALL {
            assert_eq!(
                dev.compare_scalar(op, s)
                    .unwrap()
                    .to_vec_blocking::<u32>()
                    .unwrap(),
                cpu.compare_scalar(op, s).unwrap().to_vec::<u32>().unwrap(),
                "{op:?} {s}"
            );
        }
    }
}

/// Float comparisons in exact IEEE order, subnormals included: a GPU that
/// flushes subnormals to zero (NVIDIA) compared 1e-40 equal to 0 as floats,
/// so `x.bool()` (`x != 0`) was false there; the kernel now orders by bits.
#[test]
fn float_comparison_keeps_subnormals_and_signed_zeros_apart_as_the_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![
        1e-40f32,
        -1e-40,
        f32::from_bits(1),
        -f32::from_bits(1),
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    let n = xs.len();
    // Every pair: a is xs repeated, b each value n times.
    let a: Vec<f32> = (0..n * n).map(|i| xs[i % n]).collect();
    let b: Vec<f32> = (0..n * n).map(|i| xs[i / n]).collect();
    let (ca, cb) = (
        CpuTensor::from_vec(a.clone(), &[n * n]).unwrap(),
        CpuTensor::from_vec(b.clone(), &[n * n]).unwrap(),
    );
    let (ga, gb) = (
        GpuTensor::from_vec(&gpu, a, &[n * n]).unwrap(),
        GpuTensor::from_vec(&gpu, b, &[n * n]).unwrap(),
    );
    for op in CompareOp::ALL {
        assert_eq!(
            ga.compare(&gb, op)
                .unwrap()
                .to_vec_blocking::<u32>()
                .unwrap(),
            ca.compare(&cb, op).unwrap().to_vec::<u32>().unwrap(),
            "{op:?} over {xs:?}"
        );
        for s in [0.0f32, -0.0, 1e-40] {
            assert_eq!(
                ga.compare_scalar(op, s)
                    .unwrap()
                    .to_vec_blocking::<u32>()
                    .unwrap(),
                ca.compare_scalar(op, s).unwrap().to_vec::<u32>().unwrap(),
                "{op:?} {s} over {xs:?}"
            );
        }
    }
}

#[test]
fn cast_saturates_and_truncates_like_rust_as() {
    let Some(gpu) = shared_gpu() else { return };
    let xs = vec![
        -2.7f32,
        2.7,
        -0.5,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e9,
        -3e9,
        2_147_483_520.0,
        -2_147_483_648.0,
        4_294_967_040.0,
        5e9,
    ];
    let dev = GpuTensor::from_vec(&gpu, xs.clone(), &[xs.len()]).unwrap();
    let want_i: Vec<i32> = xs.iter().map(|&x| x as i32).collect();
    let want_u: Vec<u32> = xs.iter().map(|&x| x as u32).collect();
    assert_eq!(
        dev.cast(DType::I32)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        want_i
    );
    assert_eq!(
        dev.cast(DType::U32)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        want_u
    );
    let mask = GpuTensor::from_vec(&gpu, vec![0u32, 1, 1, 0], &[2, 2]).unwrap();
    assert_eq!(
        f32s(&mask.cast(DType::F32).unwrap()),
        vec![0.0, 1.0, 1.0, 0.0]
    );
    // Integers that f32 cannot hold round to nearest, ties to even.
    let big = vec![16_777_217i32, -16_777_219, i32::MAX, i32::MIN];
    let got = f32s(
        &GpuTensor::from_vec(&gpu, big.clone(), &[4])
            .unwrap()
            .cast(DType::F32)
            .unwrap(),
    );
    assert_eq!(got, big.iter().map(|&x| x as f32).collect::<Vec<_>>());
}

#[test]
fn cast_to_same_dtype_is_a_clone() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::from_vec(&gpu, vec![1.5f32, 2.5, 3.5, 4.5], &[2, 2])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let c = t.cast(DType::F32).unwrap();
    assert_eq!(c.buffer().id(), t.buffer().id());
    assert_eq!(c.layout(), t.layout());
    assert_eq!(f32s(&c), vec![1.5, 3.5, 2.5, 4.5]);
}

/// Every op records exactly one dispatch, uploads nothing (the scalar rides
/// in the immediates) and does not submit.
#[test]
fn ops_record_one_dispatch_and_upload_nothing() {
    let Some(gpu) = own_gpu() else { return };
    let x = GpuTensor::from_vec(&gpu, vec![1.0f32; 300], &[3, 100])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let m = GpuTensor::from_vec(&gpu, vec![1u32; 3], &[3]).unwrap();
    let i = GpuTensor::from_vec(&gpu, vec![1i32; 3], &[3]).unwrap();
    gpu.synchronize().unwrap();
    let before = gpu.stats();
    let y = x.exp().unwrap();
    let y = y.mul_scalar(2.0).unwrap();
    let y = y.binary_scalar(BinaryOp::Sub, 1.0, true).unwrap();
    let c = y.lt_scalar(0.0).unwrap();
    let c2 = y.ge(&x).unwrap();
    let w = GpuTensor::where_cond(&m, &y, &x).unwrap();
    let k = i.cast(DType::F32).unwrap();
    let s = gpu.stats().since(&before);
    assert_eq!(s.dispatches, 7);
    assert_eq!(s.bytes_uploaded, 0, "scalars must travel as immediates");
    assert_eq!(s.submits, 0, "ops must only record");
    drop((c, c2, w, k));
}

#[test]
fn empty_tensors_dispatch_nothing() {
    let Some(gpu) = own_gpu() else { return };
    let e = GpuTensor::zeros(&gpu, &[3, 0, 2], DType::F32).unwrap();
    let m = GpuTensor::zeros(&gpu, &[0, 1], DType::U32).unwrap();
    gpu.synchronize().unwrap();
    let before = gpu.stats();
    let results = [
        e.sigmoid().unwrap(),
        e.add_scalar(1.0).unwrap(),
        e.gt_scalar(0.0).unwrap(),
        e.cast(DType::I32).unwrap(),
        GpuTensor::where_cond(&m, &e, &e).unwrap(),
    ];
    assert_eq!(gpu.stats().since(&before).dispatches, 0);
    assert_eq!(results[4].shape(), &[3, 0, 2]);
    for r in &results[..4] {
        assert_eq!(r.shape(), &[3, 0, 2]);
    }
}

/// More workgroups than one grid dimension holds (65535 * 256 elements):
/// the folded grid covers every element exactly once.
#[test]
fn large_tensor_uses_folded_grid() {
    let Some(gpu) = shared_gpu() else { return };
    let max = gpu.limits().max_compute_workgroups_per_dimension as usize;
    let n = max * 256 + 1000;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 - 500.0).collect();
    let dev = GpuTensor::from_slice(&gpu, &xs, &[n]).unwrap();
    let got = f32s(&dev.add_scalar(0.5).unwrap().relu().unwrap());
    assert_eq!(got.len(), n);
    for (i, (&g, &x)) in got.iter().zip(&xs).enumerate() {
        let w = (x + 0.5).max(0.0);
        assert!(g == w, "element {i}: got {g}, want {w}");
    }
}

// ---------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------

#[test]
fn non_f32_inputs_are_dtype_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let i = GpuTensor::from_vec(&gpu, vec![1i32, 2], &[2]).unwrap();
    let err = i.exp().unwrap_err().to_string();
    assert!(
        err.contains("exp") && err.contains("float32") && err.contains("int32"),
        "{err}"
    );
    // Integer arithmetic is supported (tests/it/int_ops.rs); U32 masks are not.
    let m = GpuTensor::from_vec(&gpu, vec![1u32, 0], &[2]).unwrap();
    let err = m.add_scalar(1.0).unwrap_err().to_string();
    assert!(err.contains("add") && err.contains("uint32"), "{err}");
    let err = i.clamp(Some(0.0), None).unwrap_err().to_string();
    assert!(err.contains("clamp"), "{err}");
}

#[test]
fn compare_rejects_mixed_and_mask_dtypes() {
    let Some(gpu) = shared_gpu() else { return };
    let f = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0], &[2]).unwrap();
    let i = GpuTensor::from_vec(&gpu, vec![1i32, 2], &[2]).unwrap();
    let m = GpuTensor::from_vec(&gpu, vec![1u32, 0], &[2]).unwrap();
    // F32 with I32 compares in F32 (PyTorch's promotion); masks are refused.
    let lt = f.lt(&i.add_scalar(1.0).unwrap()).unwrap();
    assert_eq!(lt.to_vec_blocking::<u32>().unwrap(), vec![1, 1]);
    let err = f.lt(&m).unwrap_err().to_string();
    assert!(err.contains("lt") && err.contains("uint32"), "{err}");
    let err = m.eq(&m).unwrap_err().to_string();
    assert!(err.contains("eq") && err.contains("uint32"), "{err}");
    let err = m.gt_scalar(0.0).unwrap_err().to_string();
    assert!(err.contains("gt") && err.contains("uint32"), "{err}");
}

#[test]
fn shape_mismatches_name_the_shapes() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[4], DType::F32).unwrap();
    let err = a.ge(&b).unwrap_err().to_string();
    assert!(
        err.contains("ge") && err.contains("[2, 3]") && err.contains("[4]"),
        "{err}"
    );
    let m = GpuTensor::zeros(&gpu, &[5, 1], DType::U32).unwrap();
    let err = GpuTensor::where_cond(&m, &a, &a).unwrap_err().to_string();
    assert!(
        err.contains("where_cond") && err.contains("[5, 1]") && err.contains("[2, 3]"),
        "{err}"
    );
    let m = GpuTensor::zeros(&gpu, &[2, 1], DType::U32).unwrap();
    let err = GpuTensor::where_cond(&m, &a, &b).unwrap_err().to_string();
    assert!(err.contains("[2, 3]") && err.contains("[4]"), "{err}");
}

#[test]
fn where_cond_checks_dtypes() {
    let Some(gpu) = shared_gpu() else { return };
    let f = GpuTensor::zeros(&gpu, &[2], DType::F32).unwrap();
    let m = GpuTensor::zeros(&gpu, &[2], DType::U32).unwrap();
    let err = GpuTensor::where_cond(&f, &f, &f).unwrap_err().to_string();
    assert!(
        err.contains("where_cond") && err.contains("uint32") && err.contains("float32"),
        "{err}"
    );
    let i = GpuTensor::zeros(&gpu, &[2], DType::I32).unwrap();
    let err = GpuTensor::where_cond(&m, &f, &i).unwrap_err().to_string();
    assert!(err.contains("int32"), "{err}");
}

/// Throughput probe (run by hand: `cargo test --release -p wgrad-gpu --test
/// it -- --ignored --nocapture parity_elementwise::`): effective bandwidth of
/// each kernel on 64M-element tensors, contiguous and transposed.
#[test]
#[ignore = "timing probe for real GPUs, not a correctness test"]
fn throughput_probe() {
    let Some(gpu) = own_gpu() else { return };
    let rows = std::env::var("PROBE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8192usize);
    let cols = 8192usize;
    let n = rows * cols;
    let x = GpuTensor::rand(&gpu, &[rows, cols], -2.0, 2.0, 7).unwrap();
    let xt = x.transpose(0, 1).unwrap();
    let m = x.gt_scalar(0.0).unwrap();
    let y = x.neg().unwrap();
    let col = GpuTensor::rand(&gpu, &[rows, 1], -1.0, 1.0, 8).unwrap();
    gpu.synchronize().unwrap();
    type Case<'a> = (&'a str, usize, Box<dyn Fn() -> GpuTensor + 'a>);
    let cases: Vec<Case> = vec![
        ("gelu contiguous", 2, Box::new(|| x.gelu().unwrap())),
        ("gelu transposed", 2, Box::new(|| xt.gelu().unwrap())),
        ("exp contiguous", 2, Box::new(|| x.exp().unwrap())),
        ("mul_scalar", 2, Box::new(|| x.mul_scalar(1.5).unwrap())),
        ("add broadcast col", 2, Box::new(|| x.add(&col).unwrap())),
        ("add same shape", 3, Box::new(|| x.add(&x).unwrap())),
        ("lt_scalar", 2, Box::new(|| x.lt_scalar(0.5).unwrap())),
        ("lt tensor", 3, Box::new(|| x.lt(&xt).unwrap())),
        (
            "where_cond",
            4,
            Box::new(|| GpuTensor::where_cond(&m, &x, &y).unwrap()),
        ),
        (
            "where_cond b transposed",
            4,
            Box::new(|| GpuTensor::where_cond(&m, &x, &xt).unwrap()),
        ),
        ("cast f32->i32", 2, Box::new(|| x.cast(DType::I32).unwrap())),
        // Baselines from other families: a pure fill and a strided copy.
        (
            "fill (zeros)",
            1,
            Box::new(|| GpuTensor::zeros(&gpu, &[rows, cols], DType::F32).unwrap()),
        ),
        ("copy transposed", 2, Box::new(|| xt.contiguous().unwrap())),
    ];
    for (name, words, f) in &cases {
        for _ in 0..3 {
            drop(f());
        }
        gpu.synchronize().unwrap();
        let iters = std::env::var("PROBE_ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20u32);
        let start = std::time::Instant::now();
        for _ in 0..iters {
            drop(f());
        }
        gpu.synchronize().unwrap();
        let secs = start.elapsed().as_secs_f64() / f64::from(iters);
        let gbs = (n * 4 * words) as f64 / secs / 1e9;
        println!("{name:>20}: {:8.3} ms  {gbs:8.1} GB/s", secs * 1e3);
    }
}
