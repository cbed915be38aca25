// Batched f32 GEMM over strided operands, 64 x 64 tiles: out[b] = A[b] @ B[b].
// Operands, strides, split K and the immediates: common/matmul_params.wgsl.
//
// Tiling: common/gemm_64.wgsl (shared with the convolutions): 16 x 16
// threads, 4 x 4 outputs each, K steps of 16 double-buffered in workgroup
// memory (17 KiB). This file supplies the strided loads; the stores (and the
// bias of `linear`) are common/matmul_store.wgsl.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/gemm_64.wgsl
//! include common/matmul_store.wgsl
//! include common/matmul_fetch.wgsl

@compute @workgroup_size(256)
fn matmul_64(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    matmul_tile(g);
}
