//! `GpuTensor::binary_mixed` (`binary_half.wgsl`): one pass for binary ops
//! with F16/BF16 operands must give, bit for bit, what widening to F32,
//! `binary` and rounding to the output dtype give, for every op, every mix
//! of float dtypes, broadcasting, strided views and odd lengths.

use wgrad_core::{BinaryOp, DType};
use wgrad_gpu::GpuTensor;
use wgrad_test_support::shared_gpu;

use crate::half_storage::Rng;

/// Values with ties, signs, zeros, NaN, infinities and f16 overflow.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let specials = [
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        -1.5,
        65504.0,
        7e4,
        1e-6,
        2.0,
    ];
    (0..n)
        .map(|i| {
            if i % 7 == 3 {
                specials[i % specials.len()]
            } else {
                (rng.next() as f32 / u32::MAX as f32 - 0.5) * 8.0
            }
        })
        .collect()
}

fn bits(t: &GpuTensor) -> Vec<u32> {
    t.cast(DType::F32)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap()
        .iter()
        .map(|v| if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() })
        .collect()
}

#[test]
fn binary_mixed_equals_widen_compute_round() {
    let Some(dev) = shared_gpu() else { return };
    let floats = [DType::F32, DType::F16, DType::BF16];
    // (a shape, b shape, transpose a) cases: same shape at an odd length,
    // broadcasting both ways, a transposed view, 0-d.
    let cases: [(&[usize], &[usize], bool); 5] = [
        (&[3, 5], &[3, 5], false),
        (&[4, 1, 3], &[5, 1], false),
        (&[6, 7], &[7, 6], true),
        (&[], &[2, 3], false),
        (&[1029], &[1029], false),
    ];
    for (case, &(sa, sb, transpose)) in cases.iter().enumerate() {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        let a32 = GpuTensor::from_vec(&dev, values(na, 1 + case as u64), sa).unwrap();
        let b32 = GpuTensor::from_vec(&dev, values(nb, 9 + case as u64), sb).unwrap();
        for &da in &floats {
            for &db in &floats {
                if da == DType::F32 && db == DType::F32 {
                    continue;
                }
                let mut a = a32.cast(da).unwrap();
                if transpose {
                    a = a.transpose(0, 1).unwrap();
                }
                let b = b32.cast(db).unwrap();
                let out = if da == db { da } else { DType::F32 };
                // Every op where both are 16-bit and alike; the mixes (each
                // another set of pipelines to compile) with a few ops.
                let ops: &[BinaryOp] = if da == db {
                    &BinaryOp::ALL
                } else {
                    &[BinaryOp::Add, BinaryOp::Div, BinaryOp::Maximum]
                };
                for &op in ops {
                    let got = a.binary_mixed(&b, op, out).unwrap();
                    let want = a
                        .cast(DType::F32)
                        .unwrap()
                        .binary(&b.cast(DType::F32).unwrap(), op)
                        .unwrap()
                        .cast(out)
                        .unwrap();
                    assert_eq!(got.dtype(), out);
                    assert_eq!(got.shape(), want.shape());
                    assert_eq!(bits(&got), bits(&want), "{op:?} {da} {db} case {case}");
                }
            }
        }
    }
    // Integer operands are refused with a dtype error.
    let i = GpuTensor::from_vec(&dev, vec![1i32, 2], &[2]).unwrap();
    let h = a_half(&dev);
    assert!(h.binary_mixed(&i, BinaryOp::Add, DType::F16).is_err());
}

fn a_half(dev: &wgrad_device::GpuDevice) -> GpuTensor {
    GpuTensor::from_vec(dev, vec![1.0f32, 2.0], &[2])
        .unwrap()
        .cast(DType::F16)
        .unwrap()
}

/// `unary` and `unary_backward` on F16/BF16 tensors run in one pass
/// (`unary_half`, `unary_backward_half`); bit for bit what widening, the
/// f32 kernel and rounding give, through a transposed view at an odd size.
#[test]
fn half_unary_ops_equal_widen_compute_round() {
    use wgrad_core::UnaryOp;
    let Some(dev) = shared_gpu() else { return };
    let ops = [
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::Exp,
        UnaryOp::Tanh,
        UnaryOp::Silu,
        UnaryOp::Clamp {
            min: Some(-0.5),
            max: Some(0.75),
        },
    ];
    let x32 = GpuTensor::from_vec(&dev, values(7 * 9, 31), &[7, 9]).unwrap();
    let g32 = GpuTensor::from_vec(&dev, values(7 * 9, 32), &[9, 7]).unwrap();
    for dtype in [DType::F16, DType::BF16] {
        let x = x32.cast(dtype).unwrap().transpose(0, 1).unwrap();
        let g = g32.cast(dtype).unwrap();
        let (xw, gw) = (x.cast(DType::F32).unwrap(), g.cast(DType::F32).unwrap());
        for op in ops {
            let got = x.unary(op).unwrap();
            assert_eq!(got.dtype(), dtype);
            let want = xw.unary(op).unwrap().cast(dtype).unwrap();
            assert_eq!(bits(&got), bits(&want), "{op:?} {dtype}");
            let got = g.unary_backward(&x, op).unwrap();
            assert_eq!(got.dtype(), dtype);
            let want = gw.unary_backward(&xw, op).unwrap().cast(dtype).unwrap();
            assert_eq!(bits(&got), bits(&want), "{op:?} backward {dtype}");
        }
    }
}
