//! Casts between every pair of dtypes with the 16-bit floats (F16, BF16),
//! bit for bit against the CPU backend (which converts with the `half`
//! crate): every f16 and bf16 bit pattern, the f32 values at each rounding
//! rule (ties to even, subnormals, overflow to infinity, NaN), integers at
//! the boundaries, and strided views of them all.

use half::{bf16, f16};
use wgrad_core::DType;
use wgrad_cpu::CpuTensor;
use wgrad_gpu::GpuTensor;
use wgrad_test_support::shared_gpu;

use crate::half_storage::{Rng, cpu_bits, gpu_bits, to_gpu};

/// f32 values that exercise each rounding rule of the f16 and bf16
/// conversions, then random bit patterns (NaN payloads included) and
/// random values of every magnitude.
fn f32_cases() -> Vec<f32> {
    let p = |e: i32| 2f32.powi(e);
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.5,
        -3.7,
        0.1,
        1.0 / 3.0,
        65504.0,
        -65504.0,
        65519.0,
        65519.996,
        65520.0,
        -65520.0,
        65536.0,
        1e-8,
        -1e-8,
        p(-24),
        p(-25),       // f16: a tie between 0 and 2^-24: rounds to even 0
        3.0 * p(-25), // a tie between 2^-24 and 2^-23: to even 2^-23
        p(-25) + p(-40),
        6.097_555e-5, // the largest f16 subnormal
        6.103_515_6e-5,
        1.0 + p(-11),       // f16 tie: to even 1
        1.0 + 3.0 * p(-11), // f16 tie: to even 1 + 2^-9
        1.0 + p(-11) + p(-23),
        1.0 + p(-8),       // bf16 tie: to even 1
        1.0 + 3.0 * p(-8), // bf16 tie: to even 1 + 2^-6
        1.0 + p(-8) + p(-23),
        f32::MIN_POSITIVE,
        1e-40, // an f32 subnormal (a bf16 subnormal after rounding)
        -1e-45,
        f32::MAX,
        -f32::MAX,
        3.389_531_4e38, // bf16's largest finite
        3.39e38,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaNs, payload low
        f32::from_bits(0xffa0_0000),
        f32::from_bits(0x7fbf_ffff),
        2_147_483_520.0,
        2_147_483_648.0,
        4_294_967_296.0,
        -2_147_483_904.0,
        1e10,
    ];
    let mut rng = Rng(99);
    v.extend((0..3000).map(|_| f32::from_bits(rng.next())));
    v.extend((0..3000).map(|_| {
        let mag = 2f32.powi((rng.next() % 60) as i32 - 30);
        (rng.next() as f32 / u32::MAX as f32 - 0.5) * mag
    }));
    v
}

/// One source tensor per dtype: the f32 cases, integers around every
/// boundary (and random ones), and every 16-bit pattern of f16 and bf16.
fn cast_sources() -> Vec<CpuTensor> {
    let mut rng = Rng(5);
    let mut ints = vec![
        0i32,
        1,
        -1,
        2047,
        2049,
        65504,
        65519,
        65520,
        65536,
        16_777_217,
        -16_777_217,
        16_777_219,
        i32::MAX,
        i32::MIN,
        123_456_789,
    ];
    ints.extend((0..2000).map(|_| rng.next() as i32 >> (rng.next() % 31)));
    let mut uints = vec![
        0u32,
        1,
        65520,
        16_777_217,
        3_000_000_000,
        u32::MAX,
        0x8000_0000,
    ];
    uints.extend((0..2000).map(|_| rng.next() >> (rng.next() % 32)));
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let f32s = f32_cases();
    vec![
        CpuTensor::from_vec(f32s.clone(), &[f32s.len()]).unwrap(),
        CpuTensor::from_vec(ints.clone(), &[ints.len()]).unwrap(),
        CpuTensor::from_vec(uints.clone(), &[uints.len()]).unwrap(),
        CpuTensor::from_vec(
            all.iter().map(|&b| f16::from_bits(b)).collect(),
            &[all.len()],
        )
        .unwrap(),
        CpuTensor::from_vec(
            all.iter().map(|&b| bf16::from_bits(b)).collect(),
            &[all.len()],
        )
        .unwrap(),
    ]
}

#[test]
fn every_cast_pair_matches_cpu_bit_for_bit() {
    let Some(gpu) = shared_gpu() else { return };
    for cpu in cast_sources() {
        let g = to_gpu(&gpu, &cpu);
        for to in DType::ALL {
            let want = cpu_bits(&cpu.cast(to).unwrap());
            let got = g.cast(to).unwrap();
            assert_eq!(got.dtype(), to);
            let got = gpu_bits(&got);
            let from = cpu.dtype();
            if let Some(k) = (0..want.len()).find(|&k| got[k] != want[k]) {
                panic!(
                    "cast {from} -> {to}: element {k} (input bits {:#x}) gave {:#x}, CPU {:#x}",
                    cpu_bits(&cpu)[k],
                    got[k],
                    want[k]
                );
            }
            assert_eq!(got.len(), want.len());
        }
    }
}

#[test]
fn casts_read_strided_views() {
    let Some(gpu) = shared_gpu() else { return };
    for cpu in cast_sources() {
        // An odd-width matrix (padded with zeros), transposed, narrowed at
        // an odd offset on both axes, and expanded from one row.
        let n = cpu.numel();
        let cols = 7;
        let rows = n.div_ceil(cols);
        let cpu = CpuTensor::concat(
            &[
                &cpu,
                &CpuTensor::zeros(&[rows * cols - n], cpu.dtype()).unwrap(),
            ],
            0,
        )
        .unwrap()
        .reshape(&[rows as isize, cols as isize])
        .unwrap();
        let g = to_gpu(&gpu, &cpu);
        type View = fn(&GpuTensor) -> GpuTensor;
        type CpuView = fn(&CpuTensor) -> CpuTensor;
        let views: [(&str, View, CpuView); 3] = [
            (
                "transposed",
                |t| t.transpose(0, 1).unwrap(),
                |t| t.transpose(0, 1).unwrap(),
            ),
            (
                "narrowed",
                |t| t.narrow(0, 1, 5).unwrap().narrow(1, 3, 3).unwrap(),
                |t| t.narrow(0, 1, 5).unwrap().narrow(1, 3, 3).unwrap(),
            ),
            (
                "expanded",
                |t| t.narrow(0, 3, 1).unwrap().expand(&[5, 7]).unwrap(),
                |t| t.narrow(0, 3, 1).unwrap().expand(&[5, 7]).unwrap(),
            ),
        ];
        for (name, gv, cv) in views {
            for to in DType::ALL {
                let want = cpu_bits(&cv(&cpu).cast(to).unwrap());
                let got = gpu_bits(&gv(&g).cast(to).unwrap());
                assert_eq!(got, want, "{name} {} -> {to}", cpu.dtype());
            }
        }
    }
}
