//! What a dispatch costs on the adapter, without timestamp queries: many
//! one-workgroup dispatches in a row that depend on each other (each
//! writes the buffer the previous one wrote) or not (each its own
//! buffer), and a single 64 x 64 output tile over a growing K (the cost of
//! one K step when one workgroup does all the work). A benchmark
//! (ignored); run on the GPU machine with
//! `it --ignored --nocapture bench_dispatch`.

use wgrad_core::DType;
use wgrad_gpu::{GpuTensor, dispatch_probe};
use wgrad_kernels::families::probe;
use wgrad_test_support::shared_gpu;

#[test]
#[ignore = "benchmark"]
fn bench_dispatch() {
    let Some(gpu) = shared_gpu() else { return };
    println!("adapter: {}", gpu.label());
    let src = GpuTensor::zeros(&gpu, &[1024], DType::F32).unwrap();
    let outs: Vec<GpuTensor> = (0..8)
        .map(|_| GpuTensor::zeros(&gpu, &[256], DType::F32).unwrap())
        .collect();
    let per_dispatch = |distinct: usize| {
        let n = 400;
        let run = || {
            for i in 0..n {
                let out = &outs[i % distinct];
                dispatch_probe(&probe::FMA_PEAK, out, &src, 0, 0, 0, 1).unwrap();
            }
        };
        run();
        gpu.synchronize().unwrap();
        let start = std::time::Instant::now();
        for _ in 0..5 {
            run();
        }
        gpu.synchronize().unwrap();
        start.elapsed().as_secs_f64() / (5 * n) as f64 * 1e6
    };
    for distinct in [1, 2, 8] {
        println!(
            "one-workgroup dispatches, {distinct} buffer(s) in turn: {:.2} us each",
            per_dispatch(distinct)
        );
    }
    // One 64 x 64 output tile, unsplit: the time per 16-wide K step.
    for kernel in ["64", "128"] {
        for k in [16usize, 256, 1024, 4096] {
            let a = GpuTensor::rand(&gpu, &[64, k], -1.0, 1.0, 1).unwrap();
            let b = GpuTensor::rand(&gpu, &[k, 64], -1.0, 1.0, 2).unwrap();
            let run = || {
                a.matmul_t_variant(&b, false, false, kernel, 1).unwrap();
            };
            run();
            gpu.synchronize().unwrap();
            let reps = 50;
            let start = std::time::Instant::now();
            for _ in 0..reps {
                run();
            }
            gpu.synchronize().unwrap();
            let us = start.elapsed().as_secs_f64() / f64::from(reps) * 1e6;
            println!(
                "one tile, kernel {kernel:>3}, K {k:>5}: {us:8.2} us per product (dependent: no)"
            );
        }
    }
}
