// Input gradient of a 2-D convolution (the adjoint of conv2d.wgsl in its
// input; also conv_transpose2d) as an implicit GEMM, one stride phase per
// dispatch. Input pixel (h, w) receives grad_out[y, x] through tap (i, j)
// when h + pt = y*sh + i*dh and w + pl = x*sw + j*dw, so only the taps with
// i*dh = h + pt (mod sh) (and likewise j) contribute: the input pixels are
// cut into sh * sw phases by (h + pt) mod sh and (w + pl) mod sw, and the
// dispatch of one phase sums over that phase's taps alone (with stride 2,
// a quarter of the taps: no multiply by a structural zero). Per channel
// group g:
//   dx[n, g*cin_g + c, h, w] = sum_k W[c, k] * DY[k, (n, h, w)]
// M = cin_g input channels (rows), N = batch * rows * cols pixels of the
// phase (h = h0 + th*sh, w = w0 + tw*sw), K = (phase taps) * cout_g ordered
// k = (ti * n_tj + tj) * cout_g + o (output channel fastest; ALIGNED when
// cout_g % 16 == 0), tap i = i0 + ti*i_step, j = j0 + tj*j_step. Gathered
// while the tiles load: W[c, k] = weight[g*cout_g + o, c, i, j] and
// DY[k, (n, h, w)] = grad_out[n, g*cout_g + o, (h + pt - i*dh) / sh,
// (w + pl - j*dw) / sw] (zero outside). A phase without taps has K = 0 and
// writes zeros. grad_out is read through its strides; the weight comes
// contiguous as [groups, cin_g, kh, kw, cout_g] (permuted by the caller,
// so that a K step's output channels are neighbours); dx is contiguous
// [N, C_in, in_h, in_w]. Tiling:
// common/gemm_64.wgsl; immediates, gathers and stores:
// common/conv2d_input_grad_body.wgsl.
//
// Bindings: 0 grad_out (read), 1 weight (read), 2 dx (read_write).
// Immediates: ConvInputGradParams.

//! include common/gemm_64.wgsl
//! include common/conv2d_input_grad_body.wgsl
//! include common/conv2d_input_grad_fetch4.wgsl

@compute @workgroup_size(256)
fn conv2d_input_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    conv2d_input_grad_main(g, lid);
}
