// The immediates and pipeline constants of the depthwise convolution
// kernels (conv/depthwise_forward.wgsl, conv/depthwise_input_grad.wgsl,
// conv/depthwise_weight_grad.wgsl): a conv2d whose every group has one
// input channel (groups = C_in), each input channel c feeding the `mult`
// output channels c * mult .. c * mult + mult - 1:
//   out[n, o, y, x] = sum_{i, j} in[n, o / mult, y*SH - pt + i*DH,
//                                   x*SW - pl + j*DW] * w[o, 0, i, j]
// (zero outside the input). The weight is contiguous [C_out, 1, KH, KW].
// The kernel size, stride and dilation are pipeline constants, so the tap
// loops unroll with their index arithmetic folded (a pipeline per
// convolution shape, as a network has few).

override KH: u32 = 3u;
override KW: u32 = 3u;
override SH: u32 = 1u;
override SW: u32 = 1u;
override DH: u32 = 1u;
override DW: u32 = 1u;

struct DepthwiseParams {
    batch: u32,
    channels: u32,    // input channels (the groups)
    mult: u32,        // output channels per input channel
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    pad_top: u32,
    pad_left: u32,
    total: u32,       // workgroups
    chunk: u32,       // weight gradient: output rows (of batch * out_h) per workgroup
    x_offset: u32,    // the input's element offset
    dy_offset: u32,   // the output gradient's element offset
    x_strides: array<u32, 4>,  // the input's N, C, H, W strides
    dy_strides: array<u32, 4>, // the output gradient's N, C, H, W strides
}

var<immediate> p: DepthwiseParams;

// Threads work on rows: a workgroup's 256 threads are ROWS rows of COLS
// columns (thread lid: row lid / COLS, column lid % COLS, a shift and a
// mask), each thread taking every COLS-th element of its row, so no
// thread divides by a runtime size per element.
const ROWS: u32 = 4u;
const COLS: u32 = 64u;

fn depthwise_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
}
