// Batched f32 GEMM over strided operands, 32 x 32 tiles, for products of
// few output tiles (the small MLPs' layers): out[b] = A[b] @ B[b].
// Operands, strides, split K and the immediates: common/matmul_params.wgsl.
//
// Tiling: common/gemm_32.wgsl (4 groups of 64 threads, each summing a
// quarter of every K step; their sums added at the end). The loads are
// matmul_64's (common/matmul_fetch.wgsl), the stores
// common/matmul_store.wgsl.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/gemm_32.wgsl
//! include common/matmul_store.wgsl
//! include common/matmul_fetch.wgsl

@compute @workgroup_size(256)
fn matmul_32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    matmul_tile(g);
}
