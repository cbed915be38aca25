// Input gradient of a 2-D convolution on 128 x 128 output tiles:
// conv/conv2d_input_grad.wgsl (read it) with the GEMM core of
// common/gemm_128.wgsl (8 x 8 outputs per thread, K steps of 8;
// ALIGNED when cout_g % 8 == 0). Same bindings, immediates and override.
//
// Bindings: 0 grad_out (read), 1 weight (read), 2 dx (read_write).
// Immediates: ConvInputGradParams.

//! include common/gemm_128.wgsl
//! include common/conv2d_input_grad_body.wgsl
//! include common/conv2d_input_grad_fetch4.wgsl

@compute @workgroup_size(256)
fn conv2d_input_grad_128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    conv2d_input_grad_main(g, lid);
}
