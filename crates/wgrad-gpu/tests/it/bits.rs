//! Reading a result back as bit patterns, for the tests that require two
//! GPU paths to agree bit for bit (fused epilogues against the unfused ops).

use wgrad_gpu::GpuTensor;

/// The f32 elements of `t` as their bit patterns, in row-major order.
pub fn f32_bits(t: &GpuTensor) -> Vec<u32> {
    let values = t.to_vec_blocking::<f32>().unwrap();
    values.iter().map(|v| v.to_bits()).collect()
}
