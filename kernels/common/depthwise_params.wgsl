// The immediates of the depthwise convolution kernels
// (conv/depthwise_forward.wgsl, conv/depthwise_input_grad.wgsl,
// conv/depthwise_weight_grad.wgsl): a conv2d whose every group has one
// input channel (groups = C_in), each input channel c feeding the `mult`
// output channels c * mult .. c * mult + mult - 1:
//   out[n, o, y, x] = sum_{i, j} in[n, o / mult, y*sh - pt + i*dh,
//                                   x*sw - pl + j*dw] * w[o, 0, i, j]
// (zero outside the input). The weight is contiguous [C_out, 1, kh, kw].

struct DepthwiseParams {
    batch: u32,
    channels: u32,    // input channels (the groups)
    mult: u32,        // output channels per input channel
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    kh: u32,
    kw: u32,
    stride_h: u32,
    stride_w: u32,
    pad_top: u32,
    pad_left: u32,
    dil_h: u32,
    dil_w: u32,
    total: u32,       // threads (forward, input gradient) or workgroups (weight gradient)
    x_offset: u32,    // the input's element offset
    dy_offset: u32,   // the output gradient's element offset
    x_strides: array<u32, 4>,  // the input's N, C, H, W strides
    dy_strides: array<u32, 4>, // the output gradient's N, C, H, W strides
}

var<immediate> p: DepthwiseParams;

fn depthwise_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
}
