//! The fp32 GEMM core's ceilings (kernels/probe/fma_peak.wgsl): FMAs on
//! registers alone, and gemm_128's workgroup-memory inner step, in TFLOP/s
//! on the adapter. A benchmark (ignored); run on the GPU machine with
//! `it --ignored --nocapture bench_fma_peak`.

use wgrad_core::DType;
use wgrad_gpu::{GpuTensor, dispatch_probe};
use wgrad_kernels::{KernelSpec, families::probe};
use wgrad_test_support::shared_gpu;

#[test]
#[ignore = "benchmark"]
fn bench_fma_peak() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    // Enough workgroups for many waves at one or two per SM.
    let groups: u64 = 132 * 16;
    let out = GpuTensor::zeros(&gpu, &[groups as usize * 256], DType::F32).unwrap();
    // The staging probes' source: a 1024 x 1024 matrix of small values.
    let src = GpuTensor::rand(&gpu, &[1024, 1024], -0.01, 0.01, 7).unwrap();
    // (spec, FMAs per thread per iteration, stride, len: elements for the
    // scalar probe, vec4s for the vec4 one)
    let probes: [(&'static KernelSpec, f64, u32, u32); 10] = [
        (&probe::FMA_PEAK, 64.0, 0, 0),
        (&probe::FMA_PEAK_SHARED, 512.0, 0, 0),
        (&probe::FMA_PEAK_SHARED_NOBAR, 512.0, 0, 0),
        (&probe::FMA_PEAK_SHARED_AHEAD, 512.0, 0, 0),
        (&probe::FMA_PEAK_STAGE, 512.0, 1024, 1 << 20),
        (&probe::FMA_PEAK_STAGE4, 512.0, 256, 1 << 18),
        (&probe::FMA_PEAK_K16, 512.0, 0, 0),
        (&probe::FMA_PEAK_K16_SWIZZLED, 512.0, 0, 0),
        (&probe::FMA_PEAK_SHARED_BCAST, 512.0, 0, 0),
        (&probe::FMA_PEAK_SHARED_K4, 512.0, 0, 0),
    ];
    for (spec, per_iter, stride, len) in probes {
        for iters in [256u32, 1024] {
            let run = || dispatch_probe(spec, &out, &src, iters, stride, len, groups).unwrap();
            run();
            gpu.synchronize().unwrap();
            let reps = 10;
            let start = std::time::Instant::now();
            for _ in 0..reps {
                run();
            }
            gpu.synchronize().unwrap();
            let secs = start.elapsed().as_secs_f64() / f64::from(reps);
            let flops = 2.0 * per_iter * f64::from(iters) * (groups * 256) as f64;
            println!(
                "{:<16} iters {iters:>5}: {:>8.3} ms {:>7.2} TFLOP/s",
                spec.entry,
                secs * 1e3,
                flops / secs / 1e12
            );
        }
    }
    let v = out.to_vec_blocking::<f32>().unwrap();
    assert!(v.iter().all(|x| x.is_finite()), "probe values overflowed");
}

/// The barrier-free product probes (`gemm_l1*`) against the library's
/// matmul on the same square sizes: TFLOP/s, and a check of 64 entries
/// against an f64 product on the host.
#[test]
#[ignore = "benchmark"]
fn bench_gemm_l1() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    let sizes: Vec<usize> = std::env::var("WGRAD_L1_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![256]);
    for n in sizes {
        let src = GpuTensor::rand(&gpu, &[2 * n * n], -1.0, 1.0, 11).unwrap();
        let out = GpuTensor::zeros(&gpu, &[n * n], DType::F32).unwrap();
        let host = src.to_vec_blocking::<f32>().unwrap();
        let flops = 2.0 * (n as f64).powi(3);
        let time = |f: &dyn Fn()| {
            f();
            gpu.synchronize().unwrap();
            let reps = 10;
            let start = std::time::Instant::now();
            for _ in 0..reps {
                f();
            }
            gpu.synchronize().unwrap();
            start.elapsed().as_secs_f64() / f64::from(reps)
        };
        let at = src
            .narrow(0, 0, n * n)
            .unwrap()
            .reshape(&[n as isize, n as isize])
            .unwrap();
        let b = src
            .narrow(0, n * n, n * n)
            .unwrap()
            .reshape(&[n as isize, n as isize])
            .unwrap();
        let a = at.transpose(0, 1).unwrap();
        let secs = time(&|| {
            a.matmul(&b).unwrap();
        });
        println!(
            "matmul (At^T B) n {n:>5}: {:>8.3} ms {:>7.2} TFLOP/s",
            secs * 1e3,
            flops / secs / 1e12
        );
        let a_c = a.contiguous().unwrap();
        let secs = time(&|| {
            a_c.matmul(&b).unwrap();
        });
        println!(
            "matmul (A B)    n {n:>5}: {:>8.3} ms {:>7.2} TFLOP/s",
            secs * 1e3,
            flops / secs / 1e12
        );
        let groups = ((n / 128) * (n / 128)) as u64;
        for spec in [
            &probe::GEMM_L1,
            &probe::GEMM_L1_K4,
            &probe::GEMM_L1_AHEAD,
            &probe::GEMM_L1_NN,
            &probe::GEMM_L1_K2,
            &probe::GEMM_L1_K8,
            &probe::GEMM_L1_K4G,
        ] {
            // gemm_l1_nn reads A k-contiguous: the first half is A, not At.
            let a_at = |k: usize, m: usize| {
                if spec.entry == "gemm_l1_nn" {
                    host[m * n + k]
                } else {
                    host[k * n + m]
                }
            };
            let run = || {
                dispatch_probe(spec, &out, &src, 0, (n / 4) as u32, n as u32, groups).unwrap();
            };
            let secs = time(&run);
            let c = out.to_vec_blocking::<f32>().unwrap();
            let mut worst = 0.0f64;
            for s in 0..64usize {
                let (m, j) = ((s * 7919) % n, (s * 104_729 + 13) % n);
                let want: f64 = (0..n)
                    .map(|k| f64::from(a_at(k, m)) * f64::from(host[n * n + k * n + j]))
                    .sum();
                worst = worst.max((f64::from(c[m * n + j]) - want).abs());
            }
            println!(
                "{:<16} n {n:>5}: {:>8.3} ms {:>7.2} TFLOP/s (max error of 64 entries {worst:.2e})",
                spec.entry,
                secs * 1e3,
                flops / secs / 1e12
            );
            assert!(worst < 1e-3 * n as f64, "{} is wrong: {worst}", spec.entry);
        }
    }
}
