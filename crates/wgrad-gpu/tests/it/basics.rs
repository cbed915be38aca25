//! Creation, readback, views and the recording model.

use wgrad_test_support::{own_gpu, shared_gpu};

use wgrad_core::DType;
use wgrad_gpu::GpuTensor;

#[test]
fn from_vec_round_trips() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::from_vec(&gpu, vec![1.0f32, -2.5, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(
        t.to_vec_blocking::<f32>().unwrap(),
        vec![1.0, -2.5, 3.0, 4.0, 5.0, 6.0]
    );
    let i = GpuTensor::from_vec(&gpu, vec![-1i32, 7], &[2]).unwrap();
    assert_eq!(pollster::block_on(i.to_vec::<i32>()).unwrap(), vec![-1, 7]);
}

#[test]
fn full_zeros_ones() {
    let Some(gpu) = shared_gpu() else { return };
    assert_eq!(
        GpuTensor::full(&gpu, &[3], 2.5, DType::F32)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap(),
        vec![2.5; 3]
    );
    assert_eq!(
        GpuTensor::ones(&gpu, &[2], DType::I32)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![1; 2]
    );
    assert_eq!(
        GpuTensor::zeros(&gpu, &[0, 4], DType::F32)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap(),
        Vec::<f32>::new()
    );
}

#[test]
fn transposed_view_reads_in_logical_order() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::from_vec(&gpu, (0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap();
    let tt = t.transpose(0, 1).unwrap();
    assert_eq!(
        tt.to_vec_blocking::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    let n = t.narrow(1, 1, 2).unwrap();
    assert_eq!(
        n.to_vec_blocking::<f32>().unwrap(),
        vec![1.0, 2.0, 4.0, 5.0]
    );
}

#[test]
fn wrong_dtype_readback_is_an_error() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::from_vec(&gpu, vec![1.0f32], &[1]).unwrap();
    let err = t.to_vec_blocking::<i32>().unwrap_err().to_string();
    assert!(err.contains("int32") && err.contains("float32"), "{err}");
}

#[test]
fn from_vec_length_mismatch_names_shape() {
    let Some(gpu) = shared_gpu() else { return };
    let err = GpuTensor::from_vec(&gpu, vec![1.0f32; 5], &[2, 3])
        .unwrap_err()
        .to_string();
    assert!(err.contains("[2, 3]") && err.contains('5'), "{err}");
}

#[test]
fn broadcast_add_matches_cpu() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::from_vec(&gpu, vec![1.0f32, 2.0, 3.0], &[3, 1]).unwrap();
    let b = GpuTensor::from_vec(&gpu, vec![10.0f32, 20.0], &[2]).unwrap();
    let c = a.add(&b).unwrap();
    assert_eq!(c.shape(), &[3, 2]);
    assert_eq!(
        c.to_vec_blocking::<f32>().unwrap(),
        vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]
    );
}

/// Recorded work goes to the GPU in growing chunks (16 dispatches, then
/// 32, then every 64) so that it starts while the host records, and a
/// readback submits the rest: 120 ops are three submits of the recorder's
/// own (after 16, 48 and 112) and one for the readback; a readback resets
/// the chunks to 16.
#[test]
fn ops_are_submitted_in_growing_chunks() {
    let Some(gpu) = own_gpu() else { return };
    let x = GpuTensor::from_vec(&gpu, vec![1.0f32; 1024], &[1024]).unwrap();
    let one = GpuTensor::ones(&gpu, &[1], DType::F32).unwrap();
    gpu.synchronize().unwrap();
    let before = gpu.stats();
    let mut y = x.clone();
    for i in 0..120 {
        y = y.add(&one).unwrap();
        if i == 14 {
            let s = gpu.stats().since(&before);
            assert_eq!(s.submits, 0, "15 ops only record");
        }
    }
    let recorded = gpu.stats().since(&before);
    assert_eq!(recorded.submits, 3, "after 16, 48 and 112 dispatches");
    assert_eq!(recorded.dispatches, 120);
    let v = y.to_vec_blocking::<f32>().unwrap();
    assert!(v.iter().all(|&e| e == 121.0));
    let after = gpu.stats().since(&before);
    assert_eq!(after.submits, 4, "one more submit for the readback");
    assert_eq!(after.readbacks, 1);
    // After the readback the first chunk is 16 again.
    let before = gpu.stats();
    for _ in 0..16 {
        y = y.add(&one).unwrap();
    }
    assert_eq!(gpu.stats().since(&before).submits, 1);
}

#[test]
fn shape_mismatch_names_both_shapes() {
    let Some(gpu) = shared_gpu() else { return };
    let a = GpuTensor::zeros(&gpu, &[2, 3], DType::F32).unwrap();
    let b = GpuTensor::zeros(&gpu, &[4], DType::F32).unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert!(err.contains("[2, 3]") && err.contains("[4]"), "{err}");
}

#[test]
fn tensor_over_binding_limit_is_a_clear_error() {
    let Some(gpu) = shared_gpu() else { return };
    let limit = gpu
        .limits()
        .max_storage_buffer_binding_size
        .min(gpu.limits().max_buffer_size);
    let elems = (limit / 4 + 1) as usize;
    let err = GpuTensor::zeros(&gpu, &[elems], DType::F32)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exceed") && err.contains(&limit.to_string()),
        "{err}"
    );
}

#[test]
fn full_covers_partial_tiles() {
    let Some(gpu) = shared_gpu() else { return };
    for n in [1usize, 2047, 2048, 2049, 5000] {
        let v = GpuTensor::full(&gpu, &[n], -1.5, DType::F32)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        assert_eq!(v.len(), n);
        assert!(v.iter().all(|&x| x == -1.5), "n = {n}");
    }
}

#[test]
fn profiler_times_each_kernel() {
    let Some(gpu) = own_gpu() else { return };
    let x = GpuTensor::ones(&gpu, &[64, 64], DType::F32).unwrap();
    gpu.start_profiling().unwrap();
    let mut y = x.clone();
    for _ in 0..10 {
        y = y.add(&x).unwrap();
    }
    let _ = y.matmul(&x).unwrap();
    let report = gpu.profile_report().unwrap();
    // Dense same-shape adds run on the 16-byte kernel.
    let binary = report
        .iter()
        .find(|k| k.kernel == "binary_vec4")
        .expect("binary_vec4 timed");
    assert_eq!(binary.dispatches, 10);
    assert!(
        report
            .iter()
            .any(|k| k.kernel.starts_with("matmul") && k.dispatches == 1),
        "{report:?}"
    );
    assert!(
        report
            .iter()
            .all(|k| k.total_us >= 0.0 && k.total_us.is_finite()),
        "{report:?}"
    );
    assert!(
        gpu.profile_report().is_err(),
        "a report needs a running profile"
    );
}

/// The dispatch path checks the parameter struct's size against the
/// kernel's declared immediate size, and reports a mismatch as an error
/// naming the kernel (no panic, nothing recorded).
#[test]
fn immediates_of_the_wrong_size_are_an_error_naming_the_kernel() {
    let Some(gpu) = shared_gpu() else { return };
    let t = GpuTensor::zeros(&gpu, &[4], DType::F32).unwrap();
    let kernels = wgrad_kernels::KernelCache::of(&gpu).unwrap();
    let spec = &wgrad_kernels::families::elementwise::FILL;
    // FillParams is 4 words; 3 is one short.
    let err = kernels
        .dispatch_1d(spec, &[], &[t.buffer()], &[4u32, 0, 0], 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("elementwise/fill.wgsl"), "{err}");
    assert!(err.contains("16 bytes") && err.contains("got 12"), "{err}");
}
