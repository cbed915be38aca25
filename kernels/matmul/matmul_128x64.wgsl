// Batched f32 GEMM over strided operands, 128 x 64 tiles (rows x
// columns), for outputs too few 128 x 128 tiles fill the GPU with (the
// 1024 x 1024 products of a wide MLP): out[b] = A[b] @ B[b]. Same
// operands, bindings, immediates and overrides as matmul_64.wgsl.
//
// Tiling: common/gemm_128x64.wgsl. The loads are
// common/matmul_fetch.wgsl's, the stores common/matmul_store.wgsl's.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/gemm_128x64.wgsl
//! include common/matmul_store.wgsl
//! include common/matmul_fetch.wgsl

@compute @workgroup_size(256)
fn matmul_128x64(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    matmul_tile(g);
}
