//! GPU autograd building blocks vs the CPU reference: `unary_backward`,
//! `softmax_backward`, `index_add`, `scatter_add` (parity over random
//! shapes, strided views and duplicate indices; device faults; errors).

use wgrad_test_support::{assert_close, own_gpu, shared_gpu};

use proptest::prelude::*;
use wgrad_core::{DType, Error, UnaryOp};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

/// How a test operand is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum View {
    Dense,
    /// Last two axes swapped (dense when rank < 2).
    Transposed,
    /// Axis 0 narrowed out of a larger buffer (non-zero offset).
    Narrowed,
    /// Axis 0 broadcast from size 1 (stride 0; dense when that dim is 0).
    Expanded,
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Dense),
        Just(View::Transposed),
        Just(View::Narrowed),
        Just(View::Expanded),
    ]
}

/// The same F32 values of logical shape `shape` on both devices, laid out
/// as `view`, drawn uniformly from `[lo, hi)`.
fn pair(
    gpu: &GpuDevice,
    shape: &[usize],
    view: View,
    lo: f32,
    hi: f32,
    seed: u64,
) -> (CpuTensor, GpuTensor) {
    let rank = shape.len();
    let view = match view {
        View::Transposed if rank < 2 => View::Dense,
        View::Expanded if shape[0] == 0 => View::Dense,
        v => v,
    };
    let mut storage = shape.to_vec();
    match view {
        View::Dense => {}
        View::Transposed => storage.swap(rank - 2, rank - 1),
        View::Narrowed => storage[0] += 2,
        View::Expanded => storage[0] = 1,
    }
    let c = CpuTensor::rand(&storage, lo, hi, seed).unwrap();
    let g = GpuTensor::from_vec(gpu, c.to_vec::<f32>().unwrap(), &storage).unwrap();
    let (c, g) = match view {
        View::Dense => (c, g),
        View::Transposed => (c.transpose(-1, -2).unwrap(), g.transpose(-1, -2).unwrap()),
        View::Narrowed => (
            c.narrow(0, 1, shape[0]).unwrap(),
            g.narrow(0, 1, shape[0]).unwrap(),
        ),
        View::Expanded => (c.expand(shape).unwrap(), g.expand(shape).unwrap()),
    };
    assert_eq!(c.shape(), shape);
    assert_eq!(g.shape(), shape);
    (c, g)
}

/// An I32 index of logical shape `shape` with values from `values`, on both
/// devices; `strided` reads it through a stride-2 view (offset 0) instead
/// of a dense buffer.
fn index_pair(
    gpu: &GpuDevice,
    values: &[i32],
    shape: &[usize],
    strided: bool,
) -> (CpuTensor, GpuTensor) {
    if !strided {
        return (
            CpuTensor::from_vec(values.to_vec(), shape).unwrap(),
            GpuTensor::from_vec(gpu, values.to_vec(), shape).unwrap(),
        );
    }
    // Interleave with junk and pick every other element along a new last axis.
    let doubled: Vec<i32> = values.iter().flat_map(|&v| [v, -999]).collect();
    let mut storage = shape.to_vec();
    storage.push(2);
    let c = CpuTensor::from_vec(doubled.clone(), &storage).unwrap();
    let g = GpuTensor::from_vec(gpu, doubled, &storage).unwrap();
    let last = shape.len() as isize;
    (
        c.narrow(last, 0, 1).unwrap().squeeze(last).unwrap(),
        g.narrow(last, 0, 1).unwrap().squeeze(last).unwrap(),
    )
}

fn cpu_f32(t: &CpuTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn gpu_f32(t: &GpuTensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().unwrap()
}

/// Shapes of rank 1..=4 with dims 0..=4.
fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..=4, 1..=4)
}

/// Every unary op (`UnaryOp::ALL`, so a new one needs no list edit), the
/// parameterised ones with parameters that exercise them, plus one-sided
/// clamps.
fn ops() -> Vec<UnaryOp> {
    let mut ops: Vec<UnaryOp> = UnaryOp::ALL
        .into_iter()
        .map(|op| match op {
            UnaryOp::LeakyRelu { .. } => UnaryOp::LeakyRelu { slope: 0.03 },
            UnaryOp::Clamp { .. } => UnaryOp::Clamp {
                min: Some(-0.5),
                max: Some(1.25),
            },
            UnaryOp::Softplus { .. } => UnaryOp::Softplus {
                beta: 0.5,
                threshold: 2.0,
            },
            UnaryOp::Elu { .. } => UnaryOp::Elu { alpha: 0.3 },
            UnaryOp::Hardtanh { .. } => UnaryOp::Hardtanh {
                min: -0.25,
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
            max: Some(0.0),
        },
        UnaryOp::Clamp {
            min: Some(0.5),
            max: None,
        },
    ]);
    ops
}

/// Input range where the op's derivative is finite.
fn domain(op: UnaryOp) -> (f32, f32) {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => (0.1, 4.0),
        _ => (-6.0, 6.0),
    }
}

// ---------------------------------------------------------------- unary

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn unary_backward_matches_cpu(
        shape in shape_strategy(),
        op_index in 0usize..ops().len(),
        gv in view_strategy(),
        xv in view_strategy(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let op = ops()[op_index];
        let (lo, hi) = domain(op);
        let (cg, gg) = pair(&gpu, &shape, gv, -2.0, 2.0, seed);
        let (cx, gx) = pair(&gpu, &shape, xv, lo, hi, seed ^ 0x5eed);
        let want = cpu_f32(&cg.unary_backward(&cx, op).unwrap());
        let got = gg.unary_backward(&gx, op).unwrap();
        prop_assert_eq!(got.shape(), &shape[..]);
        assert_close(&gpu_f32(&got), &want, 2e-5, op.name());
    }
}

/// The dense (16-byte) path: full tiles of 1024 vectors and a tail, views
/// at an offset (narrowed), a size that is not a multiple of 4 and a
/// transposed view (both strided), each the same bits as the CPU's for the
/// piecewise ops and within rounding for GELU.
#[test]
fn unary_backward_dense_in_fours_matches_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let cases: &[(&[usize], View, View)] = &[
        (&[3078, 4], View::Dense, View::Dense),
        (&[3078, 4], View::Narrowed, View::Dense),
        (&[1537, 8], View::Dense, View::Narrowed),
        (&[1025, 3], View::Dense, View::Dense),
        (&[33, 20], View::Transposed, View::Dense),
    ];
    for (k, &(shape, gv, xv)) in cases.iter().enumerate() {
        let (cg, gg) = pair(&gpu, shape, gv, -2.0, 2.0, 90 + k as u64);
        let (cx, gx) = pair(&gpu, shape, xv, -3.0, 3.0, 190 + k as u64);
        for op in [UnaryOp::Relu, UnaryOp::Abs, UnaryOp::Gelu] {
            let want = cpu_f32(&cg.unary_backward(&cx, op).unwrap());
            let got = gpu_f32(&gg.unary_backward(&gx, op).unwrap());
            if op == UnaryOp::Gelu {
                assert_close(&got, &want, 2e-5, "gelu");
            } else {
                assert_eq!(got, want, "{op:?} {shape:?} {gv:?} {xv:?}");
            }
        }
    }
}

#[test]
fn unary_backward_every_op_and_kinks_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    // Kinks, clamp bounds, NaN, infinities and tails, for every op.
    let x = vec![
        -1.0,
        -0.5,
        0.0,
        -0.0,
        0.5,
        1.25,
        2.0,
        30.0,
        -30.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let n = x.len();
    let g: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 * 0.25).collect();
    let (cx, cg) = (
        CpuTensor::from_vec(x.clone(), &[n]).unwrap(),
        CpuTensor::from_vec(g.clone(), &[n]).unwrap(),
    );
    let (gx, gg) = (
        GpuTensor::from_vec(&gpu, x, &[n]).unwrap(),
        GpuTensor::from_vec(&gpu, g, &[n]).unwrap(),
    );
    for op in ops() {
        let want = cpu_f32(&cg.unary_backward(&cx, op).unwrap());
        let got = gpu_f32(&gg.unary_backward(&gx, op).unwrap());
        // The piecewise ops must agree exactly at kinks, NaN and infinities
        // (up to the sign of zero, which Vulkan need not preserve); the
        // transcendental ones are compared where finite.
        let exact = matches!(
            op,
            UnaryOp::Neg
                | UnaryOp::Abs
                | UnaryOp::Relu
                | UnaryOp::LeakyRelu { .. }
                | UnaryOp::Clamp { .. }
                | UnaryOp::Square
        );
        for i in 0..n {
            let (a, b) = (got[i], want[i]);
            if exact {
                assert!(
                    a == b || (a.is_nan() && b.is_nan()),
                    "{}: element {i}: got {a}, want {b}",
                    op.name()
                );
            } else if b.is_finite() {
                assert!(
                    (a - b).abs() <= 2e-5 * b.abs().max(1.0),
                    "{}: element {i}: got {a}, want {b}",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn unary_backward_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0], &[2]).unwrap();
    let b = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let e = a.unary_backward(&b, UnaryOp::Exp).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("unary_backward") && msg.contains("[2]") && msg.contains("[3]"),
        "{msg}"
    );
    let i = GpuTensor::from_vec(&gpu, vec![1i32, 2], &[2]).unwrap();
    let e = a.unary_backward(&i, UnaryOp::Relu).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::F32,
                got: DType::I32,
                ..
            }
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------- softmax

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn softmax_backward_matches_cpu(
        shape in shape_strategy(),
        axis_pick in 0usize..4,
        negative_axis in any::<bool>(),
        log in any::<bool>(),
        gv in view_strategy(),
        yv in view_strategy(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let rank = shape.len();
        let axis = (axis_pick % rank) as isize - if negative_axis { rank as isize } else { 0 };
        let (cg, gg) = pair(&gpu, &shape, gv, -1.0, 1.0, seed);
        // Probabilities for softmax, log-probabilities for log_softmax.
        let (lo, hi) = if log { (-4.0, 0.0) } else { (0.0, 1.0) };
        let (cy, gy) = pair(&gpu, &shape, yv, lo, hi, seed ^ 0xabc);
        let want = cpu_f32(&cg.softmax_backward(&cy, axis, log).unwrap());
        let got = gg.softmax_backward(&gy, axis, log).unwrap();
        prop_assert_eq!(got.shape(), &shape[..]);
        assert_close(&gpu_f32(&got), &want, 1e-5, "softmax_backward");
    }
}

/// Row lengths around the kernel's threads-per-row steps (1, powers of two,
/// just past them, past a whole workgroup) and row counts that need several
/// workgroups, with real softmax outputs.
#[test]
fn softmax_backward_row_sizes_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    for (rows, len) in [
        (5, 1),
        (300, 3),
        (70, 32),
        (9, 33),
        (4, 256),
        (3, 257),
        (2, 1000),
        (1, 4099),
    ] {
        for (axis, shape) in [(1isize, [rows, len]), (0, [len, rows])] {
            let x = CpuTensor::randn(&shape, 0.0, 2.0, (rows * len) as u64).unwrap();
            let g = CpuTensor::randn(&shape, 0.0, 1.0, 1 + len as u64).unwrap();
            let up = |t: &CpuTensor| GpuTensor::from_vec(&gpu, cpu_f32(t), &shape).unwrap();
            for log in [false, true] {
                let y = if log {
                    x.log_softmax(axis).unwrap()
                } else {
                    x.softmax(axis).unwrap()
                };
                let want = cpu_f32(&g.softmax_backward(&y, axis, log).unwrap());
                let got = gpu_f32(&up(&g).softmax_backward(&up(&y), axis, log).unwrap());
                assert_close(
                    &got,
                    &want,
                    1e-5,
                    &format!("rows {rows} len {len} axis {axis} log {log}"),
                );
            }
        }
    }
}

#[test]
fn softmax_backward_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::from_vec(&gpu, vec![0.5f32; 6], &[2, 3]).unwrap();
    let e = a.softmax_backward(&a, 2, false).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadAxis {
                axis: 2,
                rank: 2,
                ..
            }
        ),
        "{e}"
    );
    let e = a.softmax_backward(&a, -3, true).unwrap_err();
    assert!(matches!(e, Error::BadAxis { axis: -3, .. }), "{e}");
    let b = a.transpose(0, 1).unwrap();
    let e = a.softmax_backward(&b, 0, false).unwrap_err();
    assert!(e.to_string().contains("[2, 3]") && e.to_string().contains("[3, 2]"));
    let i = GpuTensor::from_vec(&gpu, vec![1i32; 6], &[2, 3]).unwrap();
    let e = i.softmax_backward(&a, 0, false).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
}

// ---------------------------------------------------------------- index_add

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn index_add_matches_cpu(
        dims in prop::collection::vec(0usize..=4, 1..=4),
        axis_pick in 0usize..4,
        n in 0usize..=7,
        picks in prop::collection::vec(any::<u32>(), 7),
        bv in view_strategy(),
        sv in view_strategy(),
        strided_index in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let axis = axis_pick % dims.len();
        let size = dims[axis];
        // Indices must be valid; with an empty axis only an empty index is.
        let n = if size == 0 { 0 } else { n };
        let idx: Vec<i32> = picks[..n].iter().map(|&p| (p as usize % size.max(1)) as i32).collect();
        let mut src_shape = dims.clone();
        src_shape[axis] = n;
        let (cb, gb) = pair(&gpu, &dims, bv, -1.0, 1.0, seed);
        let (cs, gs) = pair(&gpu, &src_shape, sv, -1.0, 1.0, seed ^ 99);
        let (ci, gi) = index_pair(&gpu, &idx, &[n], strided_index);
        let want = cpu_f32(&cb.index_add(axis as isize, &ci, &cs).unwrap());
        let got = gb.index_add(axis as isize, &gi, &gs).unwrap();
        prop_assert_eq!(got.shape(), &dims[..]);
        assert_close(&gpu_f32(&got), &want, 1e-5, "index_add");
        // The base is left untouched.
        assert_close(&gpu_f32(&gb), &cpu_f32(&cb), 0.0, "index_add base");
    }
}

/// An embedding-style backward: many rows hit a few targets, so the atomic
/// adds contend hard on the same words.
#[test]
fn index_add_heavy_duplicates_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let (n, vocab, dim) = (4096, 5, 33);
    let idx: Vec<i32> = (0..n).map(|i| [0, 0, 0, 3, 4, 0, 1][i % 7]).collect();
    let src = CpuTensor::rand(&[n, dim], -1.0, 1.0, 42).unwrap();
    let base = CpuTensor::zeros(&[vocab, dim], DType::F32).unwrap();
    let ci = CpuTensor::from_vec(idx.clone(), &[n]).unwrap();
    let want = cpu_f32(&base.index_add(0, &ci, &src).unwrap());
    let gsrc = GpuTensor::from_vec(&gpu, cpu_f32(&src), &[n, dim]).unwrap();
    let gbase = GpuTensor::zeros(&gpu, &[vocab, dim], DType::F32).unwrap();
    let gi = GpuTensor::from_vec(&gpu, idx, &[n]).unwrap();
    let got = gpu_f32(&gbase.index_add(0, &gi, &gsrc).unwrap());
    // ~2000 terms per word summed in a different order.
    assert_close(&got, &want, 1e-4, "index_add duplicates");
    assert!(got[vocab * dim - 1] != 0.0 && got[2 * dim] == 0.0);
}

#[test]
fn index_add_out_of_range_faults_and_skips() {
    // A private device: the fault must not leak into other tests' readbacks.
    let Some(gpu) = own_gpu() else { return };
    let base = GpuTensor::zeros(&gpu, &[3, 2], DType::F32).unwrap();
    let src = GpuTensor::ones(&gpu, &[3, 2], DType::F32).unwrap();
    let idx = GpuTensor::from_vec(&gpu, vec![0i32, 5, 2], &[3]).unwrap();
    let out = base.index_add(0, &idx, &src).unwrap();
    let e = out.to_vec_blocking::<f32>().unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 5,
                size: 3,
                ..
            }
        ),
        "{e}"
    );
    // The fault is cleared by the readback that reported it; the valid
    // rows were added and the bad one skipped.
    assert_eq!(
        out.to_vec_blocking::<f32>().unwrap(),
        vec![1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    );
    let neg = GpuTensor::from_vec(&gpu, vec![-1i32, 0, 0], &[3]).unwrap();
    let e = base
        .index_add(0, &neg, &src)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap_err();
    assert!(matches!(e, Error::IndexOutOfRange { index: -1, .. }), "{e}");
}

#[test]
fn index_add_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let base = GpuTensor::zeros(&gpu, &[3, 2], DType::F32).unwrap();
    let src = GpuTensor::ones(&gpu, &[2, 2], DType::F32).unwrap();
    let idx = GpuTensor::from_vec(&gpu, vec![0i32, 1], &[2]).unwrap();
    let e = base.index_add(2, &idx, &src).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadAxis {
                axis: 2,
                rank: 2,
                ..
            }
        ),
        "{e}"
    );
    let wide = GpuTensor::ones(&gpu, &[2, 3], DType::F32).unwrap();
    let e = base.index_add(0, &idx, &wide).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("[3, 2]") && e.to_string().contains("[2, 3]"));
    let short = GpuTensor::from_vec(&gpu, vec![0i32], &[1]).unwrap();
    let e = base.index_add(0, &short, &src).unwrap_err();
    assert!(e.to_string().contains("index of shape [1]"), "{e}");
    let flat = GpuTensor::from_vec(&gpu, vec![0i32, 1], &[1, 2]).unwrap();
    let e = base.index_add(0, &flat, &src).unwrap_err();
    assert!(e.to_string().contains("1-D"), "{e}");
    let fidx = GpuTensor::from_vec(&gpu, vec![0.0f32, 1.0], &[2]).unwrap();
    let e = base.index_add(0, &fidx, &src).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::I32,
                got: DType::F32,
                ..
            }
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------- scatter_add

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn scatter_add_matches_cpu(
        dims in prop::collection::vec(0usize..=4, 1..=4),
        axis_pick in 0usize..4,
        shrink in prop::collection::vec(0usize..=2, 4),
        grow in prop::collection::vec(0usize..=2, 4),
        picks in prop::collection::vec(any::<u32>(), 256),
        bv in view_strategy(),
        sv in view_strategy(),
        strided_index in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let rank = dims.len();
        let axis = axis_pick % rank;
        let size = dims[axis];
        // index <= base off the axis (any length on it); src >= index.
        let mut index_shape: Vec<usize> = (0..rank)
            .map(|d| if d == axis { shrink[d] + 1 } else { dims[d].saturating_sub(shrink[d]) })
            .collect();
        if size == 0 {
            // Only an empty index is valid against an empty axis.
            index_shape[axis] = 0;
        }
        let src_shape: Vec<usize> = index_shape.iter().zip(&grow).map(|(&i, &g)| i + g).collect();
        let count: usize = index_shape.iter().product();
        let idx: Vec<i32> = (0..count).map(|i| (picks[i % 256] as usize % size.max(1)) as i32).collect();
        let (cb, gb) = pair(&gpu, &dims, bv, -1.0, 1.0, seed);
        let (cs, gs) = pair(&gpu, &src_shape, sv, -1.0, 1.0, seed ^ 7);
        let (ci, gi) = index_pair(&gpu, &idx, &index_shape, strided_index);
        let want = cpu_f32(&cb.scatter_add(axis as isize, &ci, &cs).unwrap());
        let got = gb.scatter_add(axis as isize, &gi, &gs).unwrap();
        prop_assert_eq!(got.shape(), &dims[..]);
        assert_close(&gpu_f32(&got), &want, 1e-5, "scatter_add");
    }
}

/// The backward of cross-entropy's gather: one target per row, many rows.
#[test]
fn scatter_add_large_matches_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let (rows, classes) = (3000, 17);
    let idx: Vec<i32> = (0..rows * 2).map(|i| ((i * 7) % classes) as i32).collect();
    let src = CpuTensor::rand(&[rows, 2], -1.0, 1.0, 5).unwrap();
    let base = CpuTensor::rand(&[rows, classes], -1.0, 1.0, 6).unwrap();
    let ci = CpuTensor::from_vec(idx.clone(), &[rows, 2]).unwrap();
    let want = cpu_f32(&base.scatter_add(1, &ci, &src).unwrap());
    let up = |t: &CpuTensor| GpuTensor::from_vec(&gpu, cpu_f32(t), t.shape()).unwrap();
    let gi = GpuTensor::from_vec(&gpu, idx, &[rows, 2]).unwrap();
    let got = gpu_f32(&up(&base).scatter_add(1, &gi, &up(&src)).unwrap());
    assert_close(&got, &want, 1e-5, "scatter_add large");
}

#[test]
fn scatter_add_out_of_range_faults() {
    let Some(gpu) = own_gpu() else { return };
    let base = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let src = GpuTensor::ones(&gpu, &[2, 3], DType::F32).unwrap();
    let idx = GpuTensor::from_vec(&gpu, vec![0i32, 3, 1, 2], &[2, 2]).unwrap();
    let out = base.scatter_add(1, &idx, &src).unwrap();
    let e = out.to_vec_blocking::<f32>().unwrap_err();
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
    assert_eq!(
        out.to_vec_blocking::<f32>().unwrap(),
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    );
}

#[test]
fn scatter_add_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let base = GpuTensor::zeros(&gpu, &[3, 2], DType::F32).unwrap();
    let src = GpuTensor::ones(&gpu, &[3, 2], DType::F32).unwrap();
    let idx = |v: Vec<i32>, s: &[usize]| GpuTensor::from_vec(&gpu, v, s).unwrap();
    let e = base
        .scatter_add(-3, &idx(vec![0], &[1, 1]), &src)
        .unwrap_err();
    assert!(matches!(e, Error::BadAxis { axis: -3, .. }), "{e}");
    let e = base
        .scatter_add(0, &idx(vec![0; 4], &[4, 1]), &src)
        .unwrap_err();
    assert!(e.to_string().contains("index of shape [4, 1]"), "{e}");
    let wide = GpuTensor::ones(&gpu, &[3, 3], DType::F32).unwrap();
    let e = base
        .scatter_add(0, &idx(vec![0; 3], &[1, 3]), &wide)
        .unwrap_err();
    assert!(e.to_string().contains("[1, 3]"), "{e}");
    let e = base.scatter_add(0, &idx(vec![0], &[1]), &src).unwrap_err();
    assert!(e.to_string().contains("rank"), "{e}");
    let flat = GpuTensor::ones(&gpu, &[3], DType::F32).unwrap();
    let e = base
        .scatter_add(0, &idx(vec![0], &[1, 1]), &flat)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = base.scatter_add(0, &src, &src).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                expected: DType::I32,
                ..
            }
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------- throughput

/// Seconds per call of `op`, averaged over `iters` recorded calls after one
/// untimed round, synced by reading back one element of the last result.
fn seconds_per_call(iters: u32, op: impl Fn() -> GpuTensor) -> f64 {
    let sync = |t: &GpuTensor| {
        let one = t.reshape(&[-1]).unwrap().narrow(0, 0, 1).unwrap();
        one.to_vec_blocking::<f32>().unwrap();
    };
    let run = || {
        let start = std::time::Instant::now();
        let mut last = None;
        for _ in 0..iters {
            last = Some(op());
        }
        if let Some(t) = last {
            sync(&t);
        }
        start.elapsed().as_secs_f64() / f64::from(iters)
    };
    // The first round creates pipelines and fills the buffer pool.
    run();
    run()
}

/// Large-size timings (run with `--ignored --nocapture` on a real GPU).
#[test]
#[ignore = "throughput probe, not a correctness test"]
fn backward_throughput() {
    let Some(gpu) = shared_gpu() else { return };
    let gb = |bytes: usize, s: f64| bytes as f64 / s / 1e9;

    let (rows, len) = (8192, 4096);
    let g = GpuTensor::full(&gpu, &[rows, len], 0.5, DType::F32).unwrap();
    let y = GpuTensor::full(&gpu, &[rows, len], 1.0 / len as f64, DType::F32).unwrap();
    let s = seconds_per_call(20, || g.softmax_backward(&y, -1, false).unwrap());
    // Reads g and y twice, writes out once.
    let bytes = rows * len * 4 * 5;
    eprintln!(
        "softmax_backward [{rows}, {len}] last axis: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(bytes, s)
    );
    let gt = g.reshape(&[len as isize, rows as isize]).unwrap();
    let yt = y.reshape(&[len as isize, rows as isize]).unwrap();
    let s = seconds_per_call(5, || gt.softmax_backward(&yt, 0, true).unwrap());
    eprintln!(
        "log_softmax_backward [{len}, {rows}] axis 0: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(bytes, s)
    );
    let (r2, l2) = (1 << 20, 10);
    let g2 = GpuTensor::full(&gpu, &[r2, l2], 0.5, DType::F32).unwrap();
    let s = seconds_per_call(20, || g2.softmax_backward(&g2, -1, false).unwrap());
    eprintln!(
        "softmax_backward [{r2}, {l2}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(r2 * l2 * 4 * 5, s)
    );

    let n = rows * len;
    let x = GpuTensor::full(&gpu, &[n], 0.3, DType::F32).unwrap();
    let s = seconds_per_call(20, || {
        g.reshape(&[-1])
            .unwrap()
            .unary_backward(&x, UnaryOp::Gelu)
            .unwrap()
    });
    eprintln!(
        "unary_backward gelu [{n}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(n * 12, s)
    );

    let flat = g.reshape(&[-1]).unwrap();
    for op in [
        UnaryOp::Exp,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Silu,
        UnaryOp::Recip,
    ] {
        let s = seconds_per_call(20, || flat.unary_backward(&x, op).unwrap());
        eprintln!(
            "unary_backward {} [{n}]: {:.3} ms, {:.0} GB/s",
            op.name(),
            s * 1e3,
            gb(n * 12, s)
        );
    }
    let s = seconds_per_call(20, || x.gelu().unwrap());
    eprintln!(
        "reference: forward gelu [{n}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(n * 8, s)
    );
    let s = seconds_per_call(20, || x.exp().unwrap());
    eprintln!(
        "reference: forward exp [{n}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(n * 8, s)
    );
    let s = seconds_per_call(20, || flat.unary_backward(&x, UnaryOp::Relu).unwrap());
    eprintln!(
        "unary_backward relu [{n}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(n * 12, s)
    );
    let s = seconds_per_call(20, || flat.add(&x).unwrap());
    eprintln!(
        "reference: add [{n}]: {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb(n * 12, s)
    );

    // Embedding backward: 32768 tokens of width 1024 into a 50000-row table,
    // token ids skewed so that a few rows collect many updates.
    let (tokens, width, vocab) = (32768usize, 1024usize, 50000usize);
    let ids: Vec<i32> = (0..tokens)
        .map(|i| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            if h.is_multiple_of(4) {
                (h % 16) as i32
            } else {
                (h % vocab as u64) as i32
            }
        })
        .collect();
    let idx = GpuTensor::from_vec(&gpu, ids, &[tokens]).unwrap();
    let src = GpuTensor::full(&gpu, &[tokens, width], 0.01, DType::F32).unwrap();
    let table = GpuTensor::zeros(&gpu, &[vocab, width], DType::F32).unwrap();
    let s = seconds_per_call(10, || table.index_add(0, &idx, &src).unwrap());
    eprintln!(
        "index_add [{tokens}, {width}] -> [{vocab}, {width}] (incl. base copy): {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb((tokens * width * 2 + vocab * width * 2) * 4, s)
    );

    let spread: Vec<i32> = (0..tokens).map(|i| ((i * 7919) % vocab) as i32).collect();
    let idx = GpuTensor::from_vec(&gpu, spread, &[tokens]).unwrap();
    let s = seconds_per_call(10, || table.index_add(0, &idx, &src).unwrap());
    eprintln!(
        "index_add, distinct ids (incl. base copy): {:.3} ms, {:.0} GB/s",
        s * 1e3,
        gb((tokens * width * 2 + vocab * width * 2) * 4, s)
    );
    let s = seconds_per_call(10, || table.contiguous().unwrap().add_scalar(0.0).unwrap());
    eprintln!("reference: base copy + add_scalar: {:.3} ms", s * 1e3);

    // Cross-entropy style: one target per row.
    let (b, c) = (65536usize, 1000usize);
    let targets: Vec<i32> = (0..b).map(|i| ((i * 7919) % c) as i32).collect();
    let ti = GpuTensor::from_vec(&gpu, targets, &[b, 1]).unwrap();
    let gsrc = GpuTensor::full(&gpu, &[b, 1], -1.0, DType::F32).unwrap();
    let base = GpuTensor::zeros(&gpu, &[b, c], DType::F32).unwrap();
    let s = seconds_per_call(10, || base.scatter_add(1, &ti, &gsrc).unwrap());
    eprintln!(
        "scatter_add [{b}, 1] -> [{b}, {c}] (incl. base copy): {:.3} ms",
        s * 1e3
    );
}
