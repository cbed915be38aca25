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
