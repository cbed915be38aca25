// Batched f32 GEMM, large-tile variant: out[s, b] = A[b] @ B[b] restricted
// to split s of K. Same operands, bindings, immediates and overrides as
// matmul_64.wgsl (read its header); only the tiling differs.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.
//
// Tiling: common/gemm_128.wgsl (shared with the convolutions): 256
// threads, each an 8 x 8 block made of 2 x 2 sub-blocks of 4 x 4 lying 64
// rows / columns apart, K steps of 8 double-buffered in workgroup memory
// (16.5 KiB). The loads are common/matmul_fetch.wgsl's, the stores (and
// the bias of `linear`) common/matmul_store.wgsl's.

//! include common/matmul_params.wgsl
//! include common/gemm_128.wgsl
//! include common/matmul_store.wgsl
//! include common/matmul_fetch.wgsl

@compute @workgroup_size(256)
fn matmul_128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    matmul_tile(g);
}
