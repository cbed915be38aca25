//! The 16-bit float dtypes (F16, BF16) on the GPU: storage two elements per
//! word, readback, `full`, arange and one_hot against the CPU backend,
//! strided views, writes into half views, concat, and the errors of the ops
//! that refuse half operands (the casts are in `half_casts`). Everything is
//! compared as bit patterns.

use half::{bf16, f16};
use wgrad_core::DType;
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;
use wgrad_test_support::shared_gpu;

// ---------------------------------------------------------------- helpers

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

/// An element's bit pattern (a 16-bit one in the low half).
trait Bits: Copy {
    fn bits(self) -> u32;
}
impl Bits for f32 {
    fn bits(self) -> u32 {
        self.to_bits()
    }
}
impl Bits for i32 {
    fn bits(self) -> u32 {
        self as u32
    }
}
impl Bits for u32 {
    fn bits(self) -> u32 {
        self
    }
}
impl Bits for f16 {
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}
impl Bits for bf16 {
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}

fn bits_of<T: Bits>(v: Vec<T>) -> Vec<u32> {
    v.into_iter().map(Bits::bits).collect()
}

pub(crate) fn gpu_bits(t: &GpuTensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => bits_of(t.to_vec_blocking::<f32>().unwrap()),
        DType::I32 => bits_of(t.to_vec_blocking::<i32>().unwrap()),
        DType::U32 => bits_of(t.to_vec_blocking::<u32>().unwrap()),
        DType::F16 => bits_of(t.to_vec_blocking::<f16>().unwrap()),
        DType::BF16 => bits_of(t.to_vec_blocking::<bf16>().unwrap()),
    }
}

pub(crate) fn cpu_bits(t: &CpuTensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => bits_of(t.to_vec::<f32>().unwrap()),
        DType::I32 => bits_of(t.to_vec::<i32>().unwrap()),
        DType::U32 => bits_of(t.to_vec::<u32>().unwrap()),
        DType::F16 => bits_of(t.to_vec::<f16>().unwrap()),
        DType::BF16 => bits_of(t.to_vec::<bf16>().unwrap()),
    }
}

/// The same (contiguous) data on the GPU.
pub(crate) fn to_gpu(gpu: &GpuDevice, t: &CpuTensor) -> GpuTensor {
    let s = t.shape();
    match t.dtype() {
        DType::F32 => GpuTensor::from_vec(gpu, t.to_vec::<f32>().unwrap(), s),
        DType::I32 => GpuTensor::from_vec(gpu, t.to_vec::<i32>().unwrap(), s),
        DType::U32 => GpuTensor::from_vec(gpu, t.to_vec::<u32>().unwrap(), s),
        DType::F16 => GpuTensor::from_vec(gpu, t.to_vec::<f16>().unwrap(), s),
        DType::BF16 => GpuTensor::from_vec(gpu, t.to_vec::<bf16>().unwrap(), s),
    }
    .unwrap()
}

/// A half tensor of `shape` holding `bits` (as f16 or bf16).
fn half_tensor(gpu: &GpuDevice, dtype: DType, bits: &[u16], shape: &[usize]) -> GpuTensor {
    match dtype {
        DType::F16 => GpuTensor::from_vec(
            gpu,
            bits.iter().map(|&b| f16::from_bits(b)).collect(),
            shape,
        ),
        DType::BF16 => GpuTensor::from_vec(
            gpu,
            bits.iter().map(|&b| bf16::from_bits(b)).collect(),
            shape,
        ),
        _ => unreachable!("{dtype}"),
    }
    .unwrap()
}

const HALVES: [DType; 2] = [DType::F16, DType::BF16];

/// Row-major bits of a `rows x cols` matrix: element k is `k * 7 + 1`
/// (distinct, not symmetric).
fn matrix_bits(rows: usize, cols: usize) -> Vec<u16> {
    (0..rows * cols).map(|k| (k * 7 + 1) as u16).collect()
}

// ------------------------------------------------------ storage, readback

#[test]
fn half_uploads_read_back_unchanged_at_every_length() {
    let Some(gpu) = shared_gpu() else { return };
    let mut rng = Rng(7);
    for dtype in HALVES {
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 511, 1023, 1025, 4097, 70_001] {
            // Every bit pattern goes through unchanged, NaN payloads included.
            let bits: Vec<u16> = (0..n).map(|_| rng.next() as u16).collect();
            let t = half_tensor(&gpu, dtype, &bits, &[n]);
            let want: Vec<u32> = bits.iter().map(|&b| u32::from(b)).collect();
            assert_eq!(gpu_bits(&t), want, "{dtype} n={n}");
        }
        // 0-d and empty tensors.
        let t = half_tensor(&gpu, dtype, &[0xabcd], &[]);
        assert_eq!(gpu_bits(&t), vec![0xabcd], "{dtype} 0-d");
        let t = half_tensor(&gpu, dtype, &[], &[3, 0]);
        assert!(gpu_bits(&t).is_empty(), "{dtype} empty");
        assert_eq!(t.shape(), &[3, 0]);
    }
    // The async readback resolves to the same data.
    let t = GpuTensor::from_vec(&gpu, vec![f16::from_f32(1.5); 3], &[3]).unwrap();
    let got = pollster::block_on(t.to_vec::<f16>()).unwrap();
    assert_eq!(got, vec![f16::from_f32(1.5); 3]);
    // The dtype of a readback must match.
    let err = t.to_vec_blocking::<bf16>().unwrap_err().to_string();
    assert!(err.contains("float16"), "{err}");
}

#[test]
fn full_matches_cpu_bit_for_bit() {
    let Some(gpu) = shared_gpu() else { return };
    let values = [
        0.0,
        -0.0,
        1.0,
        -2.5,
        0.1,
        1.0 / 3.0,
        65504.0,
        65519.0,
        65520.0, // the f16 tie above 65504: rounds to infinity
        1e-8,
        5.960_464_477_539_063e-8,   // 2^-24, the smallest f16 subnormal
        2.980_232_238_769_531_5e-8, // 2^-25, a tie: rounds to 0
        1e30,
        3.4e38,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for dtype in HALVES {
        for shape in [&[][..], &[0], &[1], &[3], &[2, 3], &[5, 7], &[4097]] {
            for v in values {
                let g = GpuTensor::full(&gpu, shape, v, dtype).unwrap();
                let c = CpuTensor::full(shape, v, dtype).unwrap();
                assert_eq!(gpu_bits(&g), cpu_bits(&c), "full({shape:?}, {v}, {dtype})");
            }
        }
    }
}

#[test]
fn arange_and_one_hot_in_half_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    for dtype in HALVES {
        for (start, end, step) in [
            (0.0, 10.0, 1.0),
            (-3.0, 3.0, 0.25),
            (0.0, 1.0, 0.1),
            (0.0, 2000.0, 0.3),
            (65000.0, 65600.0, 7.0),
            (5.0, 5.0, 1.0),
        ] {
            let g = GpuTensor::arange(&gpu, start, end, step, dtype).unwrap();
            let c = CpuTensor::arange(start, end, step, dtype).unwrap();
            assert_eq!(
                gpu_bits(&g),
                cpu_bits(&c),
                "arange({start}, {end}, {step}, {dtype})"
            );
        }
        let labels = GpuTensor::from_vec(&gpu, vec![2i32, 0, 4, 1, 3], &[5]).unwrap();
        let cpu_labels = CpuTensor::from_vec(vec![2i32, 0, 4, 1, 3], &[5]).unwrap();
        for classes in [5, 7] {
            let g = labels.one_hot(classes, dtype).unwrap();
            let c = cpu_labels.one_hot(classes, dtype).unwrap();
            assert_eq!(g.dtype(), dtype);
            assert_eq!(gpu_bits(&g), cpu_bits(&c), "one_hot({classes}, {dtype})");
        }
    }
}

// ------------------------------------------------------------------ views

#[test]
fn strided_half_views_copy_and_read_back() {
    let Some(gpu) = shared_gpu() else { return };
    let (rows, cols) = (5, 7);
    let bits = matrix_bits(rows, cols);
    let at = |r: usize, c: usize| u32::from(bits[r * cols + c]);
    for dtype in HALVES {
        let m = half_tensor(&gpu, dtype, &bits, &[rows, cols]);
        // Transposed: to_vec, contiguous, and a reshape that must copy.
        let t = m.transpose(0, 1).unwrap();
        let want: Vec<u32> = (0..cols)
            .flat_map(|c| (0..rows).map(move |r| at(r, c)))
            .collect();
        assert_eq!(gpu_bits(&t), want, "{dtype} transposed");
        let dense = t.contiguous().unwrap();
        assert!(dense.is_contiguous());
        assert_eq!(gpu_bits(&dense), want, "{dtype} contiguous");
        let flat = t.reshape(&[-1]).unwrap();
        assert_eq!(flat.shape(), &[rows * cols]);
        assert_eq!(gpu_bits(&flat), want, "{dtype} reshape copy");
        // Narrowed to odd offsets (a contiguous view from an odd element,
        // and an inner window).
        let n = m.narrow(0, 1, 2).unwrap();
        assert_eq!(
            gpu_bits(&n),
            bits[cols..3 * cols]
                .iter()
                .map(|&b| u32::from(b))
                .collect::<Vec<_>>()
        );
        let w = m.narrow(0, 1, 3).unwrap().narrow(1, 1, 5).unwrap();
        let want: Vec<u32> = (1..4).flat_map(|r| (1..6).map(move |c| at(r, c))).collect();
        assert_eq!(gpu_bits(&w), want, "{dtype} window");
        // Every other column, and one row expanded.
        let s = m.narrow_step(1, 1, 3, 2).unwrap();
        let want: Vec<u32> = (0..rows)
            .flat_map(|r| [1, 3, 5].map(|c| at(r, c)))
            .collect();
        assert_eq!(gpu_bits(&s), want, "{dtype} step");
        let e = m.narrow(0, 3, 1).unwrap().expand(&[4, cols]).unwrap();
        let want: Vec<u32> = (0..4).flat_map(|_| (0..cols).map(|c| at(3, c))).collect();
        assert_eq!(gpu_bits(&e), want, "{dtype} expanded");
        // A 3-D permutation.
        let p = m.reshape(&[5, 7, 1]).unwrap().permute(&[1, 2, 0]).unwrap();
        assert_eq!(gpu_bits(&p), gpu_bits(&t), "{dtype} permuted");
    }
}

#[test]
fn concat_of_half_tensors() {
    let Some(gpu) = shared_gpu() else { return };
    for dtype in HALVES {
        // Along the last axis with odd widths: slices start and end inside
        // words, and one input is a transposed view.
        let a = half_tensor(&gpu, dtype, &matrix_bits(3, 3), &[3, 3]);
        let b_bits = matrix_bits(2, 3);
        let b = half_tensor(&gpu, dtype, &b_bits, &[2, 3])
            .transpose(0, 1)
            .unwrap();
        let c = half_tensor(&gpu, dtype, &[1000, 1001, 1002], &[3, 1]);
        let out = GpuTensor::concat(&[&a, &b, &c], 1).unwrap();
        assert_eq!(out.dtype(), dtype);
        let mut want = Vec::new();
        for r in 0..3 {
            want.extend(
                matrix_bits(3, 3)[r * 3..r * 3 + 3]
                    .iter()
                    .map(|&v| u32::from(v)),
            );
            want.extend([b_bits[r], b_bits[3 + r]].map(u32::from));
            want.push(1000 + r as u32);
        }
        assert_eq!(gpu_bits(&out), want, "{dtype} axis 1");
        // Odd lengths along axis 0, and a large case whose inputs meet
        // inside words on every row.
        let parts: Vec<GpuTensor> = [3usize, 1, 0, 5]
            .iter()
            .map(|&n| {
                half_tensor(
                    &gpu,
                    dtype,
                    &(0..n as u16).map(|k| k + 10 * n as u16).collect::<Vec<_>>(),
                    &[n],
                )
            })
            .collect();
        let out = GpuTensor::concat(&parts.iter().collect::<Vec<_>>(), 0).unwrap();
        assert_eq!(
            gpu_bits(&out),
            vec![30, 31, 32, 10, 50, 51, 52, 53, 54],
            "{dtype} axis 0"
        );
        let (rows, wa, wb) = (300, 101, 99);
        let big_a = half_tensor(&gpu, dtype, &matrix_bits(rows, wa), &[rows, wa]);
        let big_b = half_tensor(&gpu, dtype, &matrix_bits(rows, wb), &[rows, wb]);
        let out = GpuTensor::concat(&[&big_a, &big_b], 1).unwrap();
        let (ba, bb) = (matrix_bits(rows, wa), matrix_bits(rows, wb));
        let want: Vec<u32> = (0..rows)
            .flat_map(|r| {
                let (ba, bb) = (&ba, &bb);
                (0..wa)
                    .map(move |c| u32::from(ba[r * wa + c]))
                    .chain((0..wb).map(move |c| u32::from(bb[r * wb + c])))
            })
            .collect();
        assert_eq!(gpu_bits(&out), want, "{dtype} large");
    }
}

// ------------------------------------------------------------ write_view

#[test]
fn write_view_into_strided_half_views() {
    let Some(gpu) = shared_gpu() else { return };
    for dtype in HALVES {
        let (rows, cols) = (5, 7);
        let mut want: Vec<u32> = matrix_bits(rows, cols)
            .iter()
            .map(|&b| u32::from(b))
            .collect();
        let m = half_tensor(&gpu, dtype, &matrix_bits(rows, cols), &[rows, cols]);
        // Every other column of an odd-width matrix: the last element of a
        // row and the first of the next share a word.
        let vals: Vec<u16> = (0..rows * 4).map(|k| 500 + k as u16).collect();
        m.narrow_step(1, 0, 4, 2)
            .unwrap()
            .write_view(&half_tensor(&gpu, dtype, &vals, &[rows, 4]))
            .unwrap();
        for r in 0..rows {
            for j in 0..4 {
                want[r * cols + 2 * j] = u32::from(vals[r * 4 + j]);
            }
        }
        assert_eq!(gpu_bits(&m), want, "{dtype} even columns");
        // F32 values into the odd columns (cast on the way), through a
        // transposed destination.
        let f: Vec<f32> = (0..rows * 3).map(|k| k as f32 + 0.5).collect();
        let dst = m.transpose(0, 1).unwrap().narrow_step(0, 1, 3, 2).unwrap();
        let src = GpuTensor::from_vec(&gpu, f.clone(), &[rows, 3])
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        dst.write_view(&src).unwrap();
        let to_half = |x: f32| -> u32 {
            match dtype {
                DType::F16 => f16::from_f32(x).to_bits().into(),
                _ => bf16::from_f32(x).to_bits().into(),
            }
        };
        for r in 0..rows {
            for j in 0..3 {
                want[r * cols + 2 * j + 1] = to_half(f[r * 3 + j]);
            }
        }
        assert_eq!(gpu_bits(&m), want, "{dtype} odd columns");
        // A source in the same buffer is read before the writes land.
        m.narrow(1, 1, 3)
            .unwrap()
            .write_view(&m.narrow(1, 0, 3).unwrap())
            .unwrap();
        for r in 0..rows {
            let row = want[r * cols..r * cols + 3].to_vec();
            want[r * cols + 1..r * cols + 4].copy_from_slice(&row);
        }
        assert_eq!(gpu_bits(&m), want, "{dtype} overlapping source");
    }
}

#[test]
fn write_view_through_a_transpose_keeps_both_halves_of_every_word() {
    let Some(gpu) = shared_gpu() else { return };
    // Neighbouring elements of the destination are written by threads far
    // apart in the grid: without atomic half-word writes, one of each pair
    // would be lost now and then.
    let (rows, cols) = (301, 257);
    for dtype in HALVES {
        let m = GpuTensor::zeros(&gpu, &[rows, cols], dtype).unwrap();
        let vals: Vec<u16> = (0..rows * cols).map(|k| (k % 30_000 + 1) as u16).collect();
        let src = half_tensor(&gpu, dtype, &vals, &[cols, rows]);
        m.transpose(0, 1).unwrap().write_view(&src).unwrap();
        let want: Vec<u32> = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (c * rows + r) as u32))
            .map(|k| u32::from(vals[k as usize]))
            .collect();
        assert_eq!(gpu_bits(&m), want, "{dtype}");
    }
}

// ----------------------------------------------------------------- errors

/// The GPU ops that compute only in f32 refuse 16-bit operands (the
/// autograd layer widens them first); `unary`, `unary_backward` and
/// `binary_mixed` take them (see `half_binary`).
#[test]
fn ops_that_compute_refuse_half_tensors() {
    let Some(gpu) = shared_gpu() else { return };
    for dtype in HALVES {
        let h = GpuTensor::zeros(&gpu, &[2, 3], dtype).unwrap();
        let f = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
        let idx = GpuTensor::from_vec(&gpu, vec![1i32], &[1]).unwrap();
        let idx2 = GpuTensor::from_vec(&gpu, vec![0i32; 3], &[1, 3]).unwrap();
        let mask = GpuTensor::zeros(&gpu, &[2, 3], DType::U32).unwrap();
        let results = [
            ("index_select", h.index_select(0, &idx).map(|_| ())),
            ("gather", h.gather(0, &idx2).map(|_| ())),
            ("add", h.add(&h).map(|_| ())),
            ("add", f.add(&h).map(|_| ())),
            ("mul", h.mul_scalar(2.0).map(|_| ())),
            ("sum", h.sum(&[], false).map(|_| ())),
            ("matmul", h.matmul(&h.transpose(0, 1).unwrap()).map(|_| ())),
            ("lt", h.lt(&h).map(|_| ())),
            (
                "where_cond",
                GpuTensor::where_cond(&mask, &h, &f).map(|_| ()),
            ),
            ("sort", h.sort(1, false).map(|_| ())),
            ("cumsum", h.cumsum(1, false).map(|_| ())),
            ("softmax", h.softmax(1).map(|_| ())),
            ("argmax", h.argmax(1, false).map(|_| ())),
        ];
        for (op, r) in results {
            let err = r.expect_err(op).to_string();
            assert!(
                err.contains(op) && err.contains(dtype.name()),
                "{op} {dtype}: {err}"
            );
        }
    }
}
