//! The tensor-core matmul (`matmul_coop.wgsl`): f16 operands, f32 sums.
//!
//! Its result is compared with the CPU's f32 product of the operands
//! rounded to f16, which is the exact answer up to the order of the f32
//! sums (relative Frobenius error `1e-5`, as for the f32 kernels). That it
//! really ran on f16 operands shows as a much larger error against the
//! unrounded product. On adapters without f16 cooperative matrices
//! (lavapipe in CI) forcing the kernel must be a clear error instead.

use wgrad_test_support::shared_gpu;

use crate::parity_matmul::rel_norm_err;

use wgrad_core::DType;
use wgrad_cpu::CpuTensor;
use wgrad_device::GpuDevice;
use wgrad_gpu::GpuTensor;

/// Random data in [-2, 2) on both devices, and its f16 rounding on the CPU.
fn operands(gpu: &GpuDevice, shape: &[usize], seed: u64) -> (CpuTensor, CpuTensor, GpuTensor) {
    let cpu = CpuTensor::rand(shape, -2.0, 2.0, seed).unwrap();
    let data = cpu.to_vec::<f32>().unwrap();
    let rounded: Vec<f32> = data.iter().map(|&x| to_f16_and_back(x)).collect();
    (
        cpu,
        CpuTensor::from_vec(rounded, shape).unwrap(),
        GpuTensor::from_vec(gpu, data, shape).unwrap(),
    )
}

/// Round to nearest even f16 (normal range: the test data has no
/// subnormals at this scale) and back.
fn to_f16_and_back(x: f32) -> f32 {
    let bits = x.to_bits();
    // f32 has 23 mantissa bits, f16 10: drop 13 with round-to-nearest-even.
    let lsb = (bits >> 13) & 1;
    let rounded = bits.wrapping_add(0x0fff + lsb) & !0x1fff;
    f32::from_bits(rounded)
}

fn swap_last(shape: &[usize], trans: bool) -> Vec<usize> {
    let mut s = shape.to_vec();
    if trans {
        let r = s.len();
        s.swap(r - 2, r - 1);
    }
    s
}

#[test]
fn coop_kernel_multiplies_f16_operands_exactly_or_is_refused() {
    let Some(gpu) = shared_gpu() else { return };
    if !gpu.has_f16_tensor_cores() {
        let a = GpuTensor::zeros(&gpu, &[4, 4], DType::F32).unwrap();
        let msg = a
            .matmul_t_variant(&a, false, false, "coop", 0)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("coop") && msg.contains(&gpu.info().name),
            "{msg}"
        );
        eprintln!(
            "{}: no f16 tensor cores; only the refusal was tested",
            gpu.info().name
        );
        return;
    }
    // (A shape, B shape): edge tiles everywhere; whole 128 x 256 tiles with
    // aligned rows (the direct store); a batch with A broadcast; long K.
    let cases: &[(&[usize], &[usize])] = &[
        (&[263, 301], &[301, 131]),
        (&[256, 64], &[64, 512]),
        (&[3, 260, 256], &[256, 250]),
        (&[128, 2048], &[2048, 256]),
    ];
    for (i, &(sa, sb)) in cases.iter().enumerate() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let seed = 10 * i as u64 + u64::from(ta) * 2 + u64::from(tb);
            let (exact_a, round_a, ga) = operands(&gpu, &swap_last(sa, ta), 100 + seed);
            let (exact_b, round_b, gb) = operands(&gpu, &swap_last(sb, tb), 200 + seed);
            let want = round_a.matmul_t(&round_b, ta, tb).unwrap();
            let unrounded = exact_a.matmul_t(&exact_b, ta, tb).unwrap();
            for splits in [0, 1, 3] {
                let got = ga.matmul_t_variant(&gb, ta, tb, "coop", splits).unwrap();
                let what = format!("{sa:?} @ {sb:?} ta={ta} tb={tb} splits={splits}");
                let rel = rel_norm_err(&got, &want);
                assert!(
                    rel < 1e-5,
                    "{what}: relative error {rel} against f16 operands"
                );
                let rel_exact = rel_norm_err(&got, &unrounded);
                assert!(
                    rel_exact > 1e-5 && rel_exact < 3e-3,
                    "{what}: relative error {rel_exact} against f32 operands"
                );
            }
        }
    }
}

/// `linear` on the tensor cores: the bias is added to the finished f32
/// accumulators (through a replicated bias tile) before either store, or
/// once in the split-K sum, so it equals the coop `matmul_t` then `add`
/// bit for bit, and the CPU's linear of the f16-rounded operands (bias
/// unrounded) to f32 summation order.
#[test]
fn coop_linear_adds_the_bias_in_the_epilogue() {
    let Some(gpu) = shared_gpu() else { return };
    if !gpu.has_f16_tensor_cores() {
        let x = GpuTensor::zeros(&gpu, &[4, 4], DType::F32).unwrap();
        assert!(x.linear_variant(&x, None, "coop", 0).is_err());
        return;
    }
    // (x shape, out features): edge tiles; whole aligned tiles (the direct
    // store); rows folded from a batch; long K.
    let cases: &[(&[usize], usize)] = &[
        (&[263, 301], 131),
        (&[256, 64], 512),
        (&[3, 260, 256], 250),
        (&[128, 2048], 256),
    ];
    for (i, &(sx, n)) in cases.iter().enumerate() {
        let k = sx[sx.len() - 1];
        let seed = 300 + 10 * i as u64;
        let (_, round_x, gx) = operands(&gpu, sx, seed);
        let (_, round_w, gw) = operands(&gpu, &[n, k], seed + 1);
        let (cb, _, gb) = operands(&gpu, &[n], seed + 2);
        // A strided bias view (every other element, from an offset).
        let (cl, _, gl) = operands(&gpu, &[2 * n + 1], seed + 3);
        let cs = cl.narrow_step(0, 1, n, 2).unwrap();
        let gs = gl.narrow_step(0, 1, n, 2).unwrap();
        for (cbias, gbias, kind) in [(&cb, &gb, "bias"), (&cs, &gs, "strided bias")] {
            let want = round_x.linear(&round_w, Some(cbias)).unwrap();
            for splits in [0, 1, 3] {
                let what = format!("{sx:?} x W[{n}, {k}] {kind} splits={splits}");
                let got = gx.linear_variant(&gw, Some(gbias), "coop", splits).unwrap();
                let rel = rel_norm_err(&got, &want);
                assert!(rel < 1e-5, "{what}: relative error {rel}");
                let plain = gx
                    .reshape(&[-1, k as isize])
                    .unwrap()
                    .matmul_t_variant(&gw, false, true, "coop", splits)
                    .unwrap()
                    .add(gbias)
                    .unwrap();
                let (a, b) = (
                    got.to_vec_blocking::<f32>().unwrap(),
                    plain.to_vec_blocking::<f32>().unwrap(),
                );
                assert!(
                    a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{what}: differs from matmul_t then add"
                );
            }
        }
    }
}
