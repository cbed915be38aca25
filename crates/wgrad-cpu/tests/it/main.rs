//! The integration tests of wgrad-cpu, one binary: known-value, error and
//! property tests of the CPU op set (docs/OPS.md) and of the autograd
//! building blocks (`backward`).

mod backward;
mod conv;
mod creation;
mod elementwise;
mod indexing;
mod matmul;
mod oom;
mod pool;
mod props;
mod reduce;
mod softmax;
mod views;

use wgrad_cpu::CpuTensor;

/// An F32 tensor from values and a shape.
pub fn t(data: &[f32], shape: &[usize]) -> CpuTensor {
    CpuTensor::from_vec(data.to_vec(), shape).unwrap()
}

/// An I32 tensor from values and a shape.
pub fn ti(data: &[i32], shape: &[usize]) -> CpuTensor {
    CpuTensor::from_vec(data.to_vec(), shape).unwrap()
}

/// The f32 values of a tensor.
pub fn f(x: &CpuTensor) -> Vec<f32> {
    x.to_vec::<f32>().unwrap()
}

/// Asserts elementwise closeness with a relative-and-absolute tolerance.
#[track_caller]
pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * (1.0 + w.abs());
        assert!(
            ok,
            "element {i}: got {g}, want {w} (got {got:?}, want {want:?})"
        );
    }
}

/// The error message of a failed op.
#[track_caller]
pub fn err<T: std::fmt::Debug>(r: wgrad_cpu::Result<T>) -> String {
    r.unwrap_err().to_string()
}
