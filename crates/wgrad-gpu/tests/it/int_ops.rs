//! Integer arithmetic (I32 add/sub/mul/floor division/remainder/maximum/
//! minimum, scalar forms, broadcasting, the I32 sum), promotion to F32,
//! f32 floor division and remainder edge values, the zero-division device
//! fault, and in-place writes into views: each against the CPU reference.

use wgrad_core::ops::{floor_divide_f32, remainder_f32};
use wgrad_core::{BinaryOp, DType};
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;
use wgrad_test_support::{own_gpu, shared_gpu};

/// GPU and CPU floats agree: the same bits, or both NaN, or zeros of
/// either sign, or within `ulps` units in the last place. NVIDIA's Vulkan
/// driver keeps neither the sign of a zero nor subnormals without the
/// float-controls execution modes naga does not emit, and WGSL lets `/`
/// be 2.5 ulp off (lavapipe divides exactly; the H100 does not).
fn same_float(got: f32, want: f32, ulps: u32) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got == want {
        return true; // also +0 == -0
    }
    if got.is_sign_negative() != want.is_sign_negative() {
        return false;
    }
    got.to_bits().abs_diff(want.to_bits()) <= ulps
}

/// `x` with a subnormal flushed to a zero of its sign, as NVIDIA's driver does.
fn flushed(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

fn ints(n: usize, seed: u32, zero_free: bool) -> Vec<i32> {
    (0..n as u32)
        .map(|i| {
            let h = (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 7) as i32;
            let v = h % 41 - 20;
            if zero_free && v == 0 { 3 } else { v }
        })
        .collect()
}

#[test]
fn f32_floor_divide_and_remainder_edge_values_match_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let vals = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        2.5,
        -2.5,
        7.0,
        -7.0,
        0.3,
        1e-3,
        1e30,
        -1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        3.0,
        -0.1,
    ];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &vals {
        for &y in &vals {
            a.push(x);
            b.push(y);
        }
    }
    let n = a.len();
    let (ca, cb) = (
        CpuTensor::from_vec(a.clone(), &[n]).unwrap(),
        CpuTensor::from_vec(b.clone(), &[n]).unwrap(),
    );
    let (ga, gb) = (
        GpuTensor::from_vec(&gpu, a.clone(), &[n]).unwrap(),
        GpuTensor::from_vec(&gpu, b.clone(), &[n]).unwrap(),
    );
    // Whether this device's float arithmetic flushes subnormals (NVIDIA's
    // Vulkan driver does; lavapipe does not, and is held to exact results).
    let tiny = GpuTensor::from_vec(&gpu, vec![1e-40f32], &[1]).unwrap();
    let one = GpuTensor::from_vec(&gpu, vec![1.0f32], &[1]).unwrap();
    let flushes = tiny
        .binary(&one, BinaryOp::Mul)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap()[0]
        == 0.0;
    for op in [BinaryOp::FloorDiv, BinaryOp::Remainder] {
        let want = ca.binary(&cb, op).unwrap().to_vec::<f32>().unwrap();
        let got = ga
            .binary(&gb, op)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let on_flushed = |x: f32, y: f32| match op {
            BinaryOp::FloorDiv => floor_divide_f32(flushed(x), flushed(y)),
            _ => remainder_f32(flushed(x), flushed(y)),
        };
        for i in 0..n {
            // Exact up to the sign of zero, and to the last bit of a
            // quotient too large for a remainder (floor_divide divides
            // once, and WGSL's division may be 2.5 ulp off); a subnormal
            // operand may also be read as zero (see same_float).
            let ulps = if op == BinaryOp::FloorDiv { 2 } else { 0 };
            let subnormal = a[i].is_subnormal() || b[i].is_subnormal();
            let same = same_float(got[i], want[i], ulps)
                || same_float(got[i], on_flushed(a[i], b[i]), ulps)
                // A driver that flushes compares a subnormal remainder
                // with zero as equal halfway through: no promise there.
                || (subnormal && flushes);
            assert!(
                same,
                "{op:?}({}, {}): gpu {} cpu {}",
                a[i], b[i], got[i], want[i]
            );
        }
    }
}

#[test]
fn int_binary_ops_match_cpu_with_broadcasting_and_views() {
    let Some(gpu) = shared_gpu() else { return };
    let a = ints(24, 1, false);
    let b = ints(6, 7, true);
    let ca = CpuTensor::from_vec(a.clone(), &[4, 6]).unwrap();
    let cb = CpuTensor::from_vec(b.clone(), &[6]).unwrap();
    let ga = GpuTensor::from_vec(&gpu, a, &[4, 6]).unwrap();
    let gb = GpuTensor::from_vec(&gpu, b, &[6]).unwrap();
    for op in BinaryOp::ALL.into_iter().filter(|o| o.keeps_int()) {
        let want = ca.binary(&cb, op).unwrap();
        let got = ga.binary(&gb, op).unwrap();
        assert_eq!(got.dtype(), DType::I32, "{op:?}");
        assert_eq!(
            got.to_vec_blocking::<i32>().unwrap(),
            want.to_vec::<i32>().unwrap(),
            "{op:?}"
        );
        // A transposed view on the left, the divisor broadcast as a column.
        let cbt = cb.narrow(0, 0, 4).unwrap().unsqueeze(1).unwrap();
        let gbt = gb.narrow(0, 0, 4).unwrap().unsqueeze(1).unwrap();
        let want = ca
            .transpose(0, 1)
            .unwrap()
            .narrow(0, 0, 4)
            .unwrap()
            .binary(&cbt.transpose(0, 1).unwrap(), op)
            .unwrap();
        let got = ga
            .transpose(0, 1)
            .unwrap()
            .narrow(0, 0, 4)
            .unwrap()
            .binary(&gbt.transpose(0, 1).unwrap(), op)
            .unwrap();
        assert_eq!(
            got.to_vec_blocking::<i32>().unwrap(),
            want.to_vec::<i32>().unwrap(),
            "{op:?} views"
        );
        for s in [3.0f32, -4.0] {
            for left in [false, true] {
                if left && op.divides() {
                    continue; // `a` holds zeros
                }
                let want = ca.binary_scalar(op, s, left).unwrap();
                let got = ga.binary_scalar(op, s, left).unwrap();
                if op == BinaryOp::Pow && !left && s < 0.0 {
                    // A negative exponent promotes (see scalar_dtype).
                    assert_eq!(got.dtype(), DType::F32);
                    let (got, want) = (
                        got.to_vec_blocking::<f32>().unwrap(),
                        want.to_vec::<f32>().unwrap(),
                    );
                    // F32 pow: the GPU's powf agrees to a few ulps.
                    for (g, w) in got.iter().zip(&want) {
                        let ok = g == w || ((g - w) / w).abs() < 1e-5;
                        assert!(ok, "{op:?} {s}: {got:?} {want:?}");
                    }
                    continue;
                }
                assert_eq!(got.dtype(), DType::I32);
                assert_eq!(
                    got.to_vec_blocking::<i32>().unwrap(),
                    want.to_vec::<i32>().unwrap(),
                    "{op:?} {s} left={left}"
                );
            }
        }
    }
}

#[test]
fn int_promotion_and_true_division_give_f32() {
    let Some(gpu) = shared_gpu() else { return };
    let ci = CpuTensor::from_vec(vec![7i32, -7, 3], &[3]).unwrap();
    let cf = CpuTensor::from_vec(vec![2.0f32, 2.0, 0.5], &[3]).unwrap();
    let gi = GpuTensor::from_vec(&gpu, vec![7i32, -7, 3], &[3]).unwrap();
    let gf = GpuTensor::from_vec(&gpu, vec![2.0f32, 2.0, 0.5], &[3]).unwrap();
    let close = |got: Vec<f32>, want: Vec<f32>, what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        for (g, w) in got.iter().zip(&want) {
            assert!(same_float(*g, *w, 2), "{what}: gpu {got:?} cpu {want:?}");
        }
    };
    let got = gi.div(&gi.add_scalar(-1.0).unwrap()).unwrap();
    assert_eq!(got.dtype(), DType::F32);
    close(
        got.to_vec_blocking::<f32>().unwrap(),
        ci.div(&ci.add_scalar(-1.0).unwrap())
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        "true division",
    );
    for op in BinaryOp::ALL {
        let want = ci.binary(&cf, op).unwrap().to_vec::<f32>().unwrap();
        let got = gi
            .binary(&gf, op)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        close(got, want, &format!("{op:?}"));
    }
    let got = gi.add_scalar(0.5).unwrap();
    assert_eq!(got.dtype(), DType::F32);
    assert_eq!(got.to_vec_blocking::<f32>().unwrap(), vec![7.5, -6.5, 3.5]);
    // I32 ** I32 stays I32, as PyTorch's int pow (by squaring, wrapping;
    // negative exponents give 0 but for bases 1 and -1).
    let base = GpuTensor::from_vec(&gpu, vec![2i32, -3, 0, 1, -1, 5, -1, 1 << 20], &[8]).unwrap();
    let exp = GpuTensor::from_vec(&gpu, vec![3i32, 2, 0, -1, -2, -1, -3, 3], &[8]).unwrap();
    let got = base.pow(&exp).unwrap();
    assert_eq!(got.dtype(), DType::I32);
    assert_eq!(
        got.to_vec_blocking::<i32>().unwrap(),
        [8, 9, 1, 1, 1, 0, -1, 0]
    );
}

#[test]
fn int_sum_matches_cpu_and_wraps() {
    let Some(gpu) = shared_gpu() else { return };
    let a = ints(2 * 3 * 300, 5, false);
    let c = CpuTensor::from_vec(a.clone(), &[2, 3, 300]).unwrap();
    let g = GpuTensor::from_vec(&gpu, a, &[2, 3, 300]).unwrap();
    for (axes, keep) in [
        (vec![], false),
        (vec![2], false),
        (vec![0, 2], true),
        (vec![-2], false),
    ] {
        let want = c.sum_i32(&axes, keep).unwrap();
        let got = g.sum_i32(&axes, keep).unwrap();
        assert_eq!(got.shape(), want.shape());
        assert_eq!(
            got.to_vec_blocking::<i32>().unwrap(),
            want.to_vec::<i32>().unwrap(),
            "{axes:?}"
        );
    }
    let big = GpuTensor::from_vec(&gpu, vec![i32::MAX, 1, 5], &[3]).unwrap();
    assert_eq!(
        big.sum_i32(&[], false)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![i32::MIN + 5]
    );
    let empty = GpuTensor::from_vec(&gpu, Vec::<i32>::new(), &[2, 0]).unwrap();
    assert_eq!(
        empty
            .sum_i32(&[1], false)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![0, 0]
    );
}

#[test]
fn int_prod_matches_cpu_and_wraps() {
    let Some(gpu) = shared_gpu() else { return };
    // Odd factors, so that long products wrap without reaching 0 (2^32
    // divides any product of 32 even numbers).
    let a: Vec<i32> = ints(2 * 3 * 300, 5, false)
        .iter()
        .map(|v| 2 * v + 1)
        .collect();
    let c = CpuTensor::from_vec(a.clone(), &[2, 3, 300]).unwrap();
    let g = GpuTensor::from_vec(&gpu, a, &[2, 3, 300]).unwrap();
    assert_ne!(
        c.prod_i32(&[], false).unwrap().to_vec::<i32>().unwrap(),
        [0]
    );
    for (axes, keep) in [
        (vec![], false),
        (vec![2], false),
        (vec![2], true),
        (vec![0, 2], true),
        (vec![-2], false),
    ] {
        let want = c.prod_i32(&axes, keep).unwrap();
        let got = g.prod_i32(&axes, keep).unwrap();
        assert_eq!(got.dtype(), DType::I32);
        assert_eq!(got.shape(), want.shape());
        assert_eq!(
            got.to_vec_blocking::<i32>().unwrap(),
            want.to_vec::<i32>().unwrap(),
            "{axes:?}"
        );
    }
    // (2^31 - 1)^2 * -7 * 3 wraps to -21 (torch: int64, the same low bits).
    let big = GpuTensor::from_vec(&gpu, vec![i32::MAX, i32::MAX, -7, 3], &[4]).unwrap();
    assert_eq!(
        big.prod_i32(&[], false)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![-21]
    );
    let empty = GpuTensor::from_vec(&gpu, Vec::<i32>::new(), &[2, 0]).unwrap();
    assert_eq!(
        empty
            .prod_i32(&[1], false)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![1, 1]
    );
}

#[test]
fn int_zero_division_is_a_device_fault_on_the_next_readback() {
    let Some(gpu) = own_gpu() else { return };
    let a = GpuTensor::from_vec(&gpu, vec![4i32, 5, 6], &[3]).unwrap();
    let b = GpuTensor::from_vec(&gpu, vec![2i32, 0, 3], &[3]).unwrap();
    let q = a.div_floor(&b).unwrap(); // records; no error yet
    let err = q.to_vec_blocking::<i32>().unwrap_err().to_string();
    assert!(
        err.contains("floor_divide") && err.contains("ZeroDivisionError"),
        "{err}"
    );
    // The fault is cleared once reported.
    assert_eq!(a.to_vec_blocking::<i32>().unwrap(), vec![4, 5, 6]);
    let r = a.remainder(&b).unwrap();
    let err = r.to_vec_blocking::<i32>().unwrap_err().to_string();
    assert!(
        err.contains("remainder") && err.contains("ZeroDivisionError"),
        "{err}"
    );
    // A zero scalar divisor is known on the host: an error at once.
    let err = a.div_floor_scalar(0.0).unwrap_err().to_string();
    assert!(err.contains("ZeroDivisionError"), "{err}");
}

#[test]
fn write_view_updates_the_shared_buffer() {
    let Some(gpu) = shared_gpu() else { return };
    let base = GpuTensor::from_vec(&gpu, (0..6).map(|v| v as f32).collect(), &[2, 3]).unwrap();
    let col = base.narrow(1, 1, 1).unwrap();
    let vals = GpuTensor::from_vec(&gpu, vec![10i32, 20], &[2, 1]).unwrap();
    col.write_view(&vals).unwrap();
    assert_eq!(
        base.to_vec_blocking::<f32>().unwrap(),
        vec![0.0, 10.0, 2.0, 3.0, 20.0, 5.0]
    );
    // Writing a view from the same buffer reads a copy first.
    let t = base
        .transpose(0, 1)
        .unwrap()
        .narrow(0, 0, 2)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    base.narrow(1, 1, 2).unwrap().write_view(&t).unwrap();
    assert_eq!(
        base.to_vec_blocking::<f32>().unwrap(),
        vec![0.0, 0.0, 10.0, 3.0, 3.0, 20.0]
    );
    let e = base.narrow(0, 0, 1).unwrap().expand(&[4, 3]).unwrap();
    let err = e
        .write_view(&GpuTensor::zeros(&gpu, &[4, 3], DType::F32).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("single memory location"), "{err}");
}
