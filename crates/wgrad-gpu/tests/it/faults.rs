//! Device faults (bad index values only the GPU sees): the first fault
//! wins, so the error names the op the user called rather than a backward
//! kernel that ran later on the same bad indices; `synchronize()` reports a
//! fault just as a readback does.

use wgrad_test_support::own_gpu;

use wgrad_core::{DType, Error};
use wgrad_gpu::GpuTensor;

/// An embedding lookup with a bad id (forward `index_select`, code 1), then
/// its backward (`index_add` over the same ids, code 6) and an unrelated
/// valid op, all before any readback.
fn lookup_then_backward(gpu: &wgrad_device::GpuDevice) -> GpuTensor {
    let (vocab, dim) = (4usize, 3usize);
    let table = GpuTensor::ones(gpu, &[vocab, dim], DType::F32).unwrap();
    let ids = GpuTensor::from_vec(gpu, vec![1i32, 7, 2], &[3]).unwrap();
    let rows = table.index_select(0, &ids).unwrap();
    let grad_rows = GpuTensor::ones(gpu, &[3, dim], DType::F32).unwrap();
    let zeros = GpuTensor::zeros(gpu, &[vocab, dim], DType::F32).unwrap();
    // A second bad value in the backward, so that a kernel that overwrote
    // the fault would also change the reported index.
    let bad_ids = GpuTensor::from_vec(gpu, vec![1i32, 9, 2], &[3]).unwrap();
    let grad_table = zeros.index_add(0, &bad_ids, &grad_rows).unwrap();
    grad_table.add(&rows.sum(&[], false).unwrap()).unwrap()
}

fn assert_forward_fault(e: Error) {
    match e {
        Error::IndexOutOfRange { op, index, size } => {
            assert_eq!(
                (op, index, size),
                ("index_select", 7, 4),
                "the first fault (the lookup) must be reported: {e}"
            );
        }
        other => panic!("expected IndexOutOfRange from index_select, got {other}"),
    }
}

#[test]
fn first_fault_wins_over_a_later_backward_fault() {
    let Some(gpu) = own_gpu() else { return };
    let out = lookup_then_backward(&gpu);
    assert_forward_fault(out.to_vec_blocking::<f32>().unwrap_err());
    // Reported once: the next readback is clean.
    out.to_vec_blocking::<f32>().unwrap();
}

#[test]
fn synchronize_reports_a_fault() {
    let Some(gpu) = own_gpu() else { return };
    let _out = lookup_then_backward(&gpu);
    assert_forward_fault(gpu.synchronize().unwrap_err());
    gpu.synchronize().unwrap();
    // ... and a fault synchronize reported is not reported again.
    let fine = GpuTensor::ones(&gpu, &[2], DType::F32).unwrap();
    assert_eq!(fine.to_vec_blocking::<f32>().unwrap(), vec![1.0, 1.0]);
}

#[test]
fn first_fault_wins_within_one_kernel_family_too() {
    // Two faulting lookups in a row: the first one's index is reported.
    let Some(gpu) = own_gpu() else { return };
    let table = GpuTensor::ones(&gpu, &[4, 2], DType::F32).unwrap();
    let first = GpuTensor::from_vec(&gpu, vec![-3i32], &[1]).unwrap();
    let second = GpuTensor::from_vec(&gpu, vec![11i32], &[1]).unwrap();
    let _a = table.index_select(0, &first).unwrap();
    let b = table
        .gather(
            0,
            &GpuTensor::from_vec(&gpu, vec![11i32, 0], &[1, 2]).unwrap(),
        )
        .unwrap();
    let _c = table.index_select(0, &second).unwrap();
    match b.to_vec_blocking::<f32>().unwrap_err() {
        Error::IndexOutOfRange { op, index, size } => {
            assert_eq!((op, index, size), ("index_select", -3, 4));
        }
        other => panic!("expected IndexOutOfRange, got {other}"),
    }
}

#[test]
fn index_select_checks_indices_even_when_its_output_is_empty() {
    // torch.index_select(torch.empty(0, 1), -1, tensor([0, 5])) raises:
    // the index is checked against the axis though no element is selected.
    let Some(gpu) = own_gpu() else { return };
    for (shape, axis, size) in [([0usize, 1], 1, 1i32), ([2, 0], 0, 2), ([0, 0], 1, 0)] {
        let src = GpuTensor::zeros(&gpu, &shape, DType::F32).unwrap();
        let bad = GpuTensor::from_vec(&gpu, vec![0i32, 5], &[2]).unwrap();
        let out = src.index_select(axis, &bad).unwrap();
        assert_eq!(out.numel(), 0);
        match gpu.synchronize().unwrap_err() {
            Error::IndexOutOfRange { op, index, size: s } => {
                let first_bad = if size == 0 { 0 } else { 5 };
                assert_eq!((op, index, s as i32), ("index_select", first_bad, size));
            }
            other => panic!("expected IndexOutOfRange, got {other}"),
        }
        // In range: no fault.
        if size > 0 {
            let good = GpuTensor::from_vec(&gpu, vec![0i32, size - 1], &[2]).unwrap();
            drop(src.index_select(axis, &good).unwrap());
            gpu.synchronize().unwrap();
        }
    }
}
