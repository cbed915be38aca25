// Forward 2-D convolution as an implicit GEMM (no im2col buffer), per
// channel group g:
//   out[n, g*cout_g + o, y, x] = sum_k W[o, k] * X[k, (n, y, x)]
// M = cout_g output channels (rows), N = batch * out_h * out_w output
// pixels (columns), K = kh * kw * cin_g taps ordered k = (i * kw + j) *
// cin_g + c' (channel fastest, so that with cin_g % 16 == 0 a whole K step
// shares one tap: ALIGNED). The B operand is gathered from the input,
// through its strides, while the tile is loaded: X[k, (n, y, x)] =
// input[n, g*cin_g + c', y*sh - pt + i*dh, x*sw - pl + j*dw], zero outside.
// The weight comes contiguous as [C_out, kh, kw, cin_g] (permuted by the
// caller), so that A[o, k] = weight[o * K + k] loads coalesced. The
// output is contiguous [N, C_out, out_h, out_w]. Tiling: common/gemm_64.wgsl (64 x 64); the
// gathers and stores: common/conv2d_body.wgsl.
//
// Bindings: 0 input (read), 1 weight (read), 2 out (read_write), 3 bias
// (read; read only with the HAS_BIAS override, see common/conv2d_body.wgsl).
// Immediates: ConvParams (m = cout_g, n = pixels, k = kh*kw*cin_g).

//! include common/gemm_64.wgsl
//! include common/conv2d_body.wgsl

@compute @workgroup_size(256)
fn conv2d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    conv2d_main(g, lid);
}
