// Batched f32 GEMM over strided operands, 64 x 64 tiles on 128 threads:
// out[b] = A[b] @ B[b]. Same operands, bindings, immediates and overrides
// as matmul_64.wgsl, with half its threads doing twice the work each.
//
// Tiling: common/gemm_64_lean.wgsl: 8 x 16 threads, 4 x 8 outputs each, K
// steps of 8 double-buffered in workgroup memory (8.5 KiB). The loads are
// common/matmul_fetch.wgsl's, the stores common/matmul_store.wgsl's.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/gemm_64_lean.wgsl
//! include common/matmul_store.wgsl
//! include common/matmul_fetch.wgsl

@compute @workgroup_size(128)
fn matmul_64_lean(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    matmul_tile(g);
}
