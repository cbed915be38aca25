//! Data movement, indexing, creation and random numbers: GPU vs the CPU
//! reference (`wgrad_cpu::CpuTensor`).
//!
//! Movement ops copy 32-bit words, so their parity is exact (compared as
//! bit patterns, for every dtype). `arange` and `rand` are bit-exact too;
//! `randn` is within 1e-5 absolute (for std 1) of the CPU's libm.

use wgrad_test_support::{assert_close, own_gpu, shared_gpu};

use half::{bf16, f16};
use proptest::prelude::*;
use wgrad_core::{DType, Error};
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

// ---------------------------------------------------------------- helpers

/// How a test tensor of a given shape is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum View {
    /// Dense row-major from offset 0.
    Contiguous,
    /// A dense tensor of the reversed shape with its axes permuted back.
    Reversed,
    /// The middle of a tensor one larger (by 2) on the last axis: offset and
    /// a row stride that is not the row length.
    Narrowed,
    /// A size-1 first axis expanded to the wanted size (stride 0).
    Expanded,
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Contiguous),
        Just(View::Reversed),
        Just(View::Narrowed),
        Just(View::Expanded),
    ]
}

/// The 32-bit dtypes (what index_select and gather move).
fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![Just(DType::F32), Just(DType::I32), Just(DType::U32)]
}

/// Every dtype, the 16-bit floats included (what concat and one_hot make).
fn any_dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        Just(DType::F32),
        Just(DType::I32),
        Just(DType::U32),
        Just(DType::F16),
        Just(DType::BF16),
    ]
}

/// The same tensor on both devices.
#[derive(Debug, Clone)]
struct Pair {
    cpu: CpuTensor,
    gpu: GpuTensor,
}

impl Pair {
    fn map(
        &self,
        cpu: impl Fn(&CpuTensor) -> wgrad_core::Result<CpuTensor>,
        gpu: impl Fn(&GpuTensor) -> wgrad_core::Result<GpuTensor>,
    ) -> Pair {
        Pair {
            cpu: cpu(&self.cpu).unwrap(),
            gpu: gpu(&self.gpu).unwrap(),
        }
    }
}

/// A small deterministic generator for test data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// `n` 32-bit words of `dtype` data, as bit patterns.
fn random_words(dtype: DType, n: usize, seed: u64) -> Vec<u32> {
    let mut g = Lcg(seed);
    (0..n)
        .map(|_| {
            let r = g.next();
            match dtype {
                DType::F32 => ((r % 20_001) as f32 / 64.0 - 156.0).to_bits(),
                DType::I32 => ((r % 2001) as i32 - 1000) as u32,
                DType::U32 => r,
                // Any 16-bit pattern, NaNs included: movement keeps bits.
                DType::F16 | DType::BF16 => r & 0xffff,
            }
        })
        .collect()
}

/// A dense tensor of `dtype` from bit patterns, on both devices.
fn dense(gpu: &GpuDevice, dtype: DType, words: Vec<u32>, shape: &[usize]) -> Pair {
    match dtype {
        DType::F32 => {
            let v: Vec<f32> = words.into_iter().map(f32::from_bits).collect();
            Pair {
                cpu: CpuTensor::from_vec(v.clone(), shape).unwrap(),
                gpu: GpuTensor::from_vec(gpu, v, shape).unwrap(),
            }
        }
        DType::I32 => {
            let v: Vec<i32> = words.into_iter().map(|w| w as i32).collect();
            Pair {
                cpu: CpuTensor::from_vec(v.clone(), shape).unwrap(),
                gpu: GpuTensor::from_vec(gpu, v, shape).unwrap(),
            }
        }
        DType::U32 => Pair {
            cpu: CpuTensor::from_vec(words.clone(), shape).unwrap(),
            gpu: GpuTensor::from_vec(gpu, words, shape).unwrap(),
        },
        DType::F16 => {
            let v: Vec<f16> = words
                .into_iter()
                .map(|w| f16::from_bits(w as u16))
                .collect();
            Pair {
                cpu: CpuTensor::from_vec(v.clone(), shape).unwrap(),
                gpu: GpuTensor::from_vec(gpu, v, shape).unwrap(),
            }
        }
        DType::BF16 => {
            let v: Vec<bf16> = words
                .into_iter()
                .map(|w| bf16::from_bits(w as u16))
                .collect();
            Pair {
                cpu: CpuTensor::from_vec(v.clone(), shape).unwrap(),
                gpu: GpuTensor::from_vec(gpu, v, shape).unwrap(),
            }
        }
    }
}

/// A tensor of `shape` laid out as `view`, with data from `words(n)`.
fn make(
    gpu: &GpuDevice,
    dtype: DType,
    shape: &[usize],
    view: View,
    words: impl Fn(usize) -> Vec<u32>,
) -> Pair {
    let rank = shape.len();
    let base = |s: &[usize]| dense(gpu, dtype, words(s.iter().product()), s);
    match view {
        View::Reversed if rank >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let dims: Vec<isize> = (0..rank as isize).rev().collect();
            base(&rev).map(|t| t.permute(&dims), |t| t.permute(&dims))
        }
        View::Narrowed if rank >= 1 => {
            let mut big = shape.to_vec();
            big[rank - 1] += 2;
            let len = shape[rank - 1];
            base(&big).map(|t| t.narrow(-1, 1, len), |t| t.narrow(-1, 1, len))
        }
        View::Expanded if rank >= 1 => {
            let mut one = shape.to_vec();
            one[0] = 1;
            base(&one).map(|t| t.expand(shape), |t| t.expand(shape))
        }
        _ => base(shape),
    }
}

/// Random data of `dtype` for `make`.
fn data(dtype: DType, seed: u64) -> impl Fn(usize) -> Vec<u32> {
    move |n| random_words(dtype, n, seed)
}

/// I32 indices in `0..size` for `make`.
fn indices(size: usize, seed: u64) -> impl Fn(usize) -> Vec<u32> {
    move |n| {
        let mut g = Lcg(seed);
        (0..n).map(|_| g.next() % size.max(1) as u32).collect()
    }
}

fn gpu_bits(t: &GpuTensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t
            .to_vec_blocking::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect(),
        DType::I32 => t
            .to_vec_blocking::<i32>()
            .unwrap()
            .into_iter()
            .map(|x| x as u32)
            .collect(),
        DType::U32 => t.to_vec_blocking::<u32>().unwrap(),
        DType::F16 => t
            .to_vec_blocking::<f16>()
            .unwrap()
            .into_iter()
            .map(|x| x.to_bits().into())
            .collect(),
        DType::BF16 => t
            .to_vec_blocking::<bf16>()
            .unwrap()
            .into_iter()
            .map(|x| x.to_bits().into())
            .collect(),
    }
}

fn cpu_bits(t: &CpuTensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect(),
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(|x| x as u32)
            .collect(),
        DType::U32 => t.to_vec::<u32>().unwrap(),
        DType::F16 => t
            .to_vec::<f16>()
            .unwrap()
            .into_iter()
            .map(|x| x.to_bits().into())
            .collect(),
        DType::BF16 => t
            .to_vec::<bf16>()
            .unwrap()
            .into_iter()
            .map(|x| x.to_bits().into())
            .collect(),
    }
}

/// Asserts equal shape, dtype and bit-identical contents.
fn assert_same(got: &GpuTensor, want: &CpuTensor, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(gpu_bits(got), cpu_bits(want), "{what}: values");
}

fn i32_tensor(gpu: &GpuDevice, v: Vec<i32>, shape: &[usize]) -> GpuTensor {
    GpuTensor::from_vec(gpu, v, shape).unwrap()
}

// ---------------------------------------------------------------- concat

fn concat_case() -> impl Strategy<Value = (Vec<usize>, isize, Vec<(usize, View)>, DType, u64)> {
    (1usize..=4)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(0usize..=3, rank),
                -(rank as isize)..rank as isize,
                prop::collection::vec((0usize..=3, view()), 1..=4),
                any_dtype(),
                any::<u64>(),
            )
        })
        .prop_map(|(mut shape, axis, parts, dtype, seed)| {
            // Mostly non-empty shared dims, so that the copies carry data.
            for d in shape.iter_mut() {
                if *d == 0 && seed % 3 != 0 {
                    *d = 2;
                }
            }
            (shape, axis, parts, dtype, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn concat_matches_cpu((shape, axis, parts, dtype, seed) in concat_case()) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let a = axis.rem_euclid(shape.len() as isize) as usize;
        let pairs: Vec<Pair> = parts
            .iter()
            .enumerate()
            .map(|(k, &(len, view))| {
                let mut s = shape.clone();
                s[a] = len;
                make(&gpu, dtype, &s, view, data(dtype, seed.wrapping_add(k as u64)))
            })
            .collect();
        let cpu: Vec<&CpuTensor> = pairs.iter().map(|p| &p.cpu).collect();
        let gpus: Vec<&GpuTensor> = pairs.iter().map(|p| &p.gpu).collect();
        let want = CpuTensor::concat(&cpu, axis).unwrap();
        let got = GpuTensor::concat(&gpus, axis).unwrap();
        assert_same(&got, &want, &format!("concat {shape:?} axis {axis} parts {parts:?}"));
    }
}

#[test]
fn concat_of_views_of_one_buffer() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::from_vec(&gpu, (0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap();
    let tt = t.transpose(0, 1).unwrap();
    let got = GpuTensor::concat(&[&tt, &tt.narrow(0, 1, 1).unwrap()], 0).unwrap();
    assert_eq!(got.shape(), &[4, 2]);
    assert_eq!(
        got.to_vec_blocking::<i32>().unwrap(),
        vec![0, 3, 1, 4, 2, 5, 1, 4]
    );
}

#[test]
fn concat_errors_name_shapes_axes_and_dtypes() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[4, 3], DType::F32).unwrap();
    let c = GpuTensor::zeros(&gpu, &[2, 5], DType::F32).unwrap();
    let i = GpuTensor::zeros(&gpu, &[2, 3], DType::I32).unwrap();
    let r3 = GpuTensor::zeros(&gpu, &[2, 3, 1], DType::F32).unwrap();

    let err = GpuTensor::concat(&[&a, &b], 1).unwrap_err();
    assert!(
        matches!(err, Error::ShapeMismatch { op: "concat", .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("[2, 3]") && msg.contains("[4, 3]"), "{msg}");

    let msg = GpuTensor::concat(&[&a, &r3], 0).unwrap_err().to_string();
    assert!(msg.contains("[2, 3]") && msg.contains("[2, 3, 1]"), "{msg}");

    let err = GpuTensor::concat(&[&a, &c], 2).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadAxis {
                op: "concat",
                axis: 2,
                rank: 2
            }
        ),
        "{err}"
    );
    let err = GpuTensor::concat(&[&a, &i], 0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DTypeMismatch {
                op: "concat",
                expected: DType::F32,
                got: DType::I32
            }
        ),
        "{err}"
    );
    let err = GpuTensor::concat(&[], 0).unwrap_err();
    assert!(err.to_string().contains("concat"), "{err}");
    // Along the mismatching axis it works.
    let ok = GpuTensor::concat(&[&a, &c], -1).unwrap();
    assert_eq!(ok.shape(), &[2, 8]);
}

// ---------------------------------------------------------------- index_select

fn select_case() -> impl Strategy<Value = (Vec<usize>, isize, usize, View, View, DType, u64)> {
    (1usize..=4).prop_flat_map(|rank| {
        (
            prop::collection::vec(0usize..=4, rank),
            -(rank as isize)..rank as isize,
            0usize..=6,
            view(),
            view(),
            dtype(),
            any::<u64>(),
        )
            .prop_map(|(shape, axis, len, sv, iv, dtype, seed)| {
                let a = axis.rem_euclid(shape.len() as isize) as usize;
                // No valid index into an empty axis: select nothing from it.
                let len = if shape[a] == 0 { 0 } else { len };
                (shape, axis, len, sv, iv, dtype, seed)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn index_select_matches_cpu(
        (shape, axis, len, src_view, idx_view, dtype, seed) in select_case()
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let a = axis.rem_euclid(shape.len() as isize) as usize;
        let src = make(&gpu, dtype, &shape, src_view, data(dtype, seed));
        // 1-D index views: a column of a [len, 2] tensor (stride 2, offset 1),
        // an expanded single index (stride 0), or dense.
        let words = indices(shape[a], seed ^ 0x5555);
        let index = match idx_view {
            View::Narrowed | View::Reversed => make(&gpu, DType::I32, &[len, 2], View::Contiguous, words)
                .map(|t| t.narrow(1, 1, 1)?.squeeze(1), |t| t.narrow(1, 1, 1)?.squeeze(1)),
            View::Expanded => make(&gpu, DType::I32, &[len], View::Expanded, words),
            View::Contiguous => make(&gpu, DType::I32, &[len], View::Contiguous, words),
        };
        let want = src.cpu.index_select(axis, &index.cpu).unwrap();
        let got = src.gpu.index_select(axis, &index.gpu).unwrap();
        assert_same(&got, &want, &format!("index_select {shape:?} axis {axis} len {len}"));
    }
}

#[test]
fn index_select_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::zeros(&gpu, &[3, 4], DType::F32).unwrap();
    let fidx = GpuTensor::zeros(&gpu, &[2], DType::F32).unwrap();
    let err = x.index_select(0, &fidx).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DTypeMismatch {
                op: "index_select",
                expected: DType::I32,
                got: DType::F32
            }
        ),
        "{err}"
    );
    let idx2 = i32_tensor(&gpu, vec![0, 1], &[1, 2]);
    let msg = x.index_select(0, &idx2).unwrap_err().to_string();
    assert!(
        msg.contains("index_select") && msg.contains("[1, 2]"),
        "{msg}"
    );
    let idx = i32_tensor(&gpu, vec![0, 1], &[2]);
    let err = x.index_select(-3, &idx).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadAxis {
                op: "index_select",
                axis: -3,
                rank: 2
            }
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------- gather

fn gather_case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, isize, View, View, DType, u64)> {
    (1usize..=4).prop_flat_map(|rank| {
        (
            prop::collection::vec(0usize..=4, rank),
            prop::collection::vec(0usize..=4, rank),
            -(rank as isize)..rank as isize,
            view(),
            view(),
            dtype(),
            any::<u64>(),
        )
            .prop_map(|(src, mut idx, axis, sv, iv, dtype, seed)| {
                let a = axis.rem_euclid(src.len() as isize) as usize;
                for (d, i) in idx.iter_mut().enumerate() {
                    if d != a {
                        *i = (*i).min(src[d]);
                    } else if src[a] == 0 {
                        *i = 0; // no valid index into an empty axis
                    }
                }
                (src, idx, axis, sv, iv, dtype, seed)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn gather_matches_cpu(
        (shape, idx_shape, axis, src_view, idx_view, dtype, seed) in gather_case()
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let a = axis.rem_euclid(shape.len() as isize) as usize;
        let src = make(&gpu, dtype, &shape, src_view, data(dtype, seed));
        let index = make(&gpu, DType::I32, &idx_shape, idx_view, indices(shape[a], seed ^ 0xabc));
        let want = src.cpu.gather(axis, &index.cpu).unwrap();
        let got = src.gpu.gather(axis, &index.gpu).unwrap();
        assert_same(
            &got,
            &want,
            &format!("gather {shape:?} index {idx_shape:?} axis {axis} views {src_view:?}/{idx_view:?}"),
        );
    }
}

#[test]
fn gather_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let x = GpuTensor::zeros(&gpu, &[3, 4], DType::F32).unwrap();
    let fidx = GpuTensor::zeros(&gpu, &[3, 4], DType::U32).unwrap();
    let err = x.gather(0, &fidx).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DTypeMismatch {
                op: "gather",
                expected: DType::I32,
                got: DType::U32
            }
        ),
        "{err}"
    );
    let idx = GpuTensor::zeros(&gpu, &[2, 5], DType::I32).unwrap();
    let msg = x.gather(0, &idx).unwrap_err().to_string();
    assert!(
        msg.contains("gather") && msg.contains("[3, 4]") && msg.contains("[2, 5]"),
        "{msg}"
    );
    let idx1 = GpuTensor::zeros(&gpu, &[3], DType::I32).unwrap();
    let msg = x.gather(0, &idx1).unwrap_err().to_string();
    assert!(msg.contains("[3, 4]") && msg.contains("[3]"), "{msg}");
    let idx = GpuTensor::zeros(&gpu, &[2, 2], DType::I32).unwrap();
    let err = x.gather(2, &idx).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadAxis {
                op: "gather",
                axis: 2,
                rank: 2
            }
        ),
        "{err}"
    );
    // The gathered axis may be larger than the source's.
    assert_eq!(
        x.gather(1, &GpuTensor::zeros(&gpu, &[2, 7], DType::I32).unwrap())
            .unwrap()
            .shape(),
        &[2, 7]
    );
}

// ---------------------------------------------------------------- one_hot

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn one_hot_matches_cpu(
        shape in prop::collection::vec(0usize..=4, 0..=3),
        classes in 1usize..=6,
        labels_view in view(),
        out in any_dtype(),
        seed in any::<u64>(),
    ) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        let labels = make(&gpu, DType::I32, &shape, labels_view, indices(classes, seed));
        let want = labels.cpu.one_hot(classes, out).unwrap();
        let got = labels.gpu.one_hot(classes, out).unwrap();
        assert_same(&got, &want, &format!("one_hot {shape:?} classes {classes} {labels_view:?}"));
    }
}

#[test]
fn one_hot_errors() {
    let Some(gpu) = shared_gpu() else { return };
    let f = GpuTensor::zeros(&gpu, &[3], DType::F32).unwrap();
    let err = f.one_hot(4, DType::F32).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DTypeMismatch {
                op: "one_hot",
                expected: DType::I32,
                got: DType::F32
            }
        ),
        "{err}"
    );
    let deep = GpuTensor::zeros(&gpu, &[1, 1, 1, 1, 1, 1], DType::I32).unwrap();
    let msg = deep.one_hot(2, DType::F32).unwrap_err().to_string();
    assert!(msg.contains("one_hot") && msg.contains("rank 7"), "{msg}");
    // No labels and no classes: an empty [0, 0] result, no fault.
    let none = GpuTensor::zeros(&gpu, &[0], DType::I32).unwrap();
    assert_eq!(none.one_hot(0, DType::U32).unwrap().shape(), &[0, 0]);
}

// ---------------------------------------------------------------- device faults

/// Asserts that the next readback reports `IndexOutOfRange` from `op`, and
/// (when given) with that index and size; then that the fault has reset.
fn expect_fault(gpu: &GpuDevice, t: &GpuTensor, op: &str, index_size: Option<(i64, usize)>) {
    let err = match t.dtype() {
        DType::F32 => t.to_vec_blocking::<f32>().map(drop),
        DType::I32 => t.to_vec_blocking::<i32>().map(drop),
        DType::U32 => t.to_vec_blocking::<u32>().map(drop),
        DType::F16 => t.to_vec_blocking::<f16>().map(drop),
        DType::BF16 => t.to_vec_blocking::<bf16>().map(drop),
    }
    .expect_err("an out-of-range index must fail the readback");
    let msg = err.to_string();
    match err {
        Error::IndexOutOfRange {
            op: got,
            index,
            size,
        } => {
            assert_eq!(got, op, "{msg}");
            if let Some(want) = index_size {
                assert_eq!((index, size), want, "{msg}");
            }
        }
        other => panic!("expected IndexOutOfRange from {op}, got {other}"),
    }
    assert!(msg.contains(op) && msg.contains("out of range"), "{msg}");
    // The fault resets: a later good readback works.
    let ok = GpuTensor::from_vec(gpu, vec![1.5f32, 2.5], &[2]).unwrap();
    assert_eq!(ok.to_vec_blocking::<f32>().unwrap(), vec![1.5, 2.5]);
}

#[test]
fn out_of_range_indices_fail_the_next_readback() {
    // A private device: the fault is per device, and tests on the shared
    // one run in parallel.
    let Some(gpu) = own_gpu() else { return };
    let x = GpuTensor::from_vec(&gpu, (0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();

    let idx = i32_tensor(&gpu, vec![0, 3, 1], &[3]);
    expect_fault(
        &gpu,
        &x.index_select(0, &idx).unwrap(),
        "index_select",
        Some((3, 3)),
    );
    let idx = i32_tensor(&gpu, vec![-1], &[1]);
    expect_fault(
        &gpu,
        &x.index_select(1, &idx).unwrap(),
        "index_select",
        Some((-1, 4)),
    );
    // The fault shows on any later readback, not only of the faulting op's result.
    let _unread = x.index_select(1, &i32_tensor(&gpu, vec![9], &[1])).unwrap();
    expect_fault(&gpu, &x, "index_select", Some((9, 4)));

    let idx = i32_tensor(&gpu, vec![0, 1, 2, 4], &[1, 4]);
    expect_fault(&gpu, &x.gather(0, &idx).unwrap(), "gather", Some((4, 3)));
    let idx = i32_tensor(&gpu, vec![-7, 0], &[2, 1]);
    expect_fault(&gpu, &x.gather(1, &idx).unwrap(), "gather", Some((-7, 4)));
    // Index into an empty axis.
    let empty = GpuTensor::zeros(&gpu, &[2, 0], DType::F32).unwrap();
    let idx = i32_tensor(&gpu, vec![0, 0], &[2, 1]);
    expect_fault(
        &gpu,
        &empty.gather(1, &idx).unwrap(),
        "gather",
        Some((0, 0)),
    );

    let labels = i32_tensor(&gpu, vec![0, 2, 5, 1], &[2, 2]);
    expect_fault(
        &gpu,
        &labels.one_hot(5, DType::F32).unwrap(),
        "one_hot",
        Some((5, 5)),
    );
    let labels = i32_tensor(&gpu, vec![-2], &[1]);
    expect_fault(
        &gpu,
        &labels.one_hot(3, DType::I32).unwrap(),
        "one_hot",
        Some((-2, 3)),
    );
    let labels = i32_tensor(&gpu, vec![0], &[]);
    expect_fault(
        &gpu,
        &labels.one_hot(0, DType::U32).unwrap(),
        "one_hot",
        Some((0, 0)),
    );

    // In-range indices right after a fault give correct data.
    let idx = i32_tensor(&gpu, vec![2, 0], &[2]);
    assert_eq!(
        x.index_select(0, &idx)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap(),
        vec![8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0]
    );
}

// ---------------------------------------------------------------- arange

fn check_arange(gpu: &GpuDevice, start: f64, end: f64, step: f64) {
    for dtype in [DType::F32, DType::I32, DType::U32] {
        let what = format!("arange({start:e}, {end:e}, {step:e}, {dtype})");
        match (
            CpuTensor::arange(start, end, step, dtype),
            GpuTensor::arange(gpu, start, end, step, dtype),
        ) {
            (Ok(want), Ok(got)) => assert_same(&got, &want, &what),
            (Err(want), Err(got)) => assert_eq!(got.to_string(), want.to_string(), "{what}"),
            (want, got) => panic!("{what}: cpu {want:?}, gpu {got:?}"),
        }
    }
}

#[test]
fn arange_matches_cpu_on_edge_cases() {
    let Some(gpu) = shared_gpu() else { return };
    for (start, end, step) in [
        (0.0, 10.0, 1.0),
        (0.0, 1.0, 0.1),
        (-3.0, 3.0, 0.7),
        (5.0, -5.0, -1.25),
        (0.5, 10.0, 1.0),                  // int truncation
        (-5.5, 5.0, 1.5),                  // negative -> 0 for U32, toward zero for I32
        (16_777_210.0, 16_777_240.0, 1.0), // odd integers are f32 ties (to even)
        (1e8, 1e8 + 40.0, 3.0),
        (0.0, 1e10, 1e9),        // saturates I32
        (-1e10, 0.0, 1e9),       // saturates I32 at MIN, U32 at 0
        (0.0, 1e-43, 1e-45),     // f32 subnormals
        (3e38, 4e38, 1e37),      // f32 overflow to inf
        (1e20, 1e20 + 1e6, 1e5), // step below start's ulp: sums round
        (1e-300, 1e-299, 3e-301),
        (0.0, 0.0, 1.0), // empty
        (-0.0, 2.0, 1.0),
        (0.0, 3.0, -1.0), // wrong sign
        (0.0, 3.0, 0.0),  // zero step
        (0.0, f64::INFINITY, 1.0),
        (f64::NAN, 1.0, 1.0),
        (0.0, 1e10, 1.0), // too many elements
    ] {
        check_arange(&gpu, start, end, step);
    }
    let a = GpuTensor::arange(&gpu, 0.0, 5.0, 1.0, DType::I32).unwrap();
    assert_eq!(a.to_vec_blocking::<i32>().unwrap(), vec![0, 1, 2, 3, 4]);
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1000i32..1000).prop_map(f64::from),
        -1e6f64..1e6,
        any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("finite", |x| x.is_finite()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn arange_matches_cpu_bit_for_bit(start in finite_f64(), step in finite_f64(), k in 0u32..300) {
        let Some(gpu) = shared_gpu() else { return Ok(()) };
        prop_assume!(step != 0.0);
        // Mostly ranges of about k elements; `end` may round, which the
        // shared length rule then sees the same way on both devices.
        let end = start + f64::from(k) * step;
        prop_assume!(end.is_finite());
        check_arange(&gpu, start, end, step);
    }
}

// ---------------------------------------------------------------- rand / randn

#[test]
fn rand_is_bit_exact_with_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    for (shape, low, high, seed) in [
        (vec![100_000], 0.0f32, 1.0f32, 0u64),
        (vec![3, 5, 7], -2.5, 7.25, 42),
        (vec![257], 1e-3, 3e4, u64::MAX),
        (vec![0, 3], 0.0, 1.0, 1),
        (vec![], -1.0, 1.0, 0xdead_beef_0000_0001),
    ] {
        let want = CpuTensor::rand(&shape, low, high, seed).unwrap();
        let got = GpuTensor::rand(&gpu, &shape, low, high, seed).unwrap();
        assert_same(
            &got,
            &want,
            &format!("rand {shape:?} [{low}, {high}) seed {seed}"),
        );
        let v = got.to_vec_blocking::<f32>().unwrap();
        assert!(v.iter().all(|&x| (low..high).contains(&x) || low == high));
    }
}

#[test]
fn randn_matches_cpu_within_1e_5() {
    let Some(gpu) = shared_gpu() else { return };
    let n = 200_000;
    let want = CpuTensor::randn(&[n], 0.0, 1.0, 7)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let got = GpuTensor::randn(&gpu, &[n], 0.0, 1.0, 7)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(
            0.0f32,
            |a, b| if b.is_nan() { f32::INFINITY } else { a.max(b) },
        );
    assert!(worst <= 1e-5, "randn: max abs error {worst}");
    let mean = got.iter().sum::<f32>() / n as f32;
    let var = got.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / n as f32;
    assert!(
        mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
        "{mean} {var}"
    );

    // Mean and std scale the same draws.
    let want = CpuTensor::randn(&[4, 33], 2.0, 0.5, 123)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let got = GpuTensor::randn(&gpu, &[4, 33], 2.0, 0.5, 123).unwrap();
    assert_eq!(got.shape(), &[4, 33]);
    assert_close(
        &got.to_vec_blocking::<f32>().unwrap(),
        &want,
        1e-5,
        "randn(2, 0.5)",
    );
}

#[test]
fn different_seeds_give_different_draws() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::rand(&gpu, &[64], 0.0, 1.0, 1)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let b = GpuTensor::rand(&gpu, &[64], 0.0, 1.0, 2)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    assert!(same < 4, "seeds 1 and 2 agree on {same} of 64");
    let c = GpuTensor::randn(&gpu, &[64], 0.0, 1.0, 1 << 32)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let d = GpuTensor::randn(&gpu, &[64], 0.0, 1.0, 2 << 32)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    assert_ne!(c, d, "seeds differing only in the high half must differ");
    // Same seed, same numbers.
    let e = GpuTensor::rand(&gpu, &[64], 0.0, 1.0, 1)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    assert_eq!(a, e);
}

/// `joined_windows`: adjacent windows of one dense tensor, in order, give
/// that tensor back as a view, but only when nothing but the windows
/// holds the buffer (a gradient must not alias a tensor someone can still
/// see); windows out of order, with a gap or of two buffers give `None`.
#[test]
fn joined_windows_view_only_buffers_no_one_else_holds() {
    let Some(gpu) = shared_gpu() else { return };
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let whole = GpuTensor::from_vec(&gpu, data.clone(), &[4, 6]).unwrap();
    let a = whole.narrow(1, 0, 2).unwrap();
    let b = whole.narrow(1, 2, 4).unwrap();
    // `whole` still holds the buffer.
    assert!(GpuTensor::joined_windows(&[&a, &b], 1).is_none());
    drop(whole);
    assert!(
        GpuTensor::joined_windows(&[&b, &a], 1).is_none(),
        "out of order"
    );
    let joined = GpuTensor::joined_windows(&[&a, &b], 1).unwrap();
    assert_eq!(joined.shape(), &[4, 6]);
    assert_eq!(joined.to_vec_blocking::<f32>().unwrap(), data);
    drop(joined);
    let gap = a.narrow(1, 0, 1).unwrap();
    drop(a);
    assert!(GpuTensor::joined_windows(&[&gap, &b], 1).is_none(), "a gap");
    let other = GpuTensor::from_vec(&gpu, vec![0.0; 8], &[4, 2]).unwrap();
    assert!(
        GpuTensor::joined_windows(&[&other, &b], 1).is_none(),
        "two buffers"
    );
}
