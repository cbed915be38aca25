// Forward 2-D convolution on 128 x 128 output tiles: conv/conv2d.wgsl
// (read it) with the GEMM core of common/gemm_128.wgsl (8 x 8 outputs
// per thread, K steps of 8; ALIGNED when cin_g % 8 == 0). Same bindings,
// immediates and override.
//
// Bindings: 0 input (read), 1 weight (read), 2 out (read_write), 3 bias
// (read; read only with the HAS_BIAS override, see common/conv2d_body.wgsl).
// Immediates: ConvParams (m = cout_g, n = pixels, k = kh*kw*cin_g).

//! include common/gemm_128.wgsl
//! include common/conv2d_body.wgsl

@compute @workgroup_size(256)
fn conv2d_128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    conv2d_main(g, lid);
}
