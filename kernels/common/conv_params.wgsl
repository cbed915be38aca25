// The immediates of conv/conv2d.wgsl and conv/conv2d_weight_grad.wgsl
// (conv2d_input_grad.wgsl has its own, with its stride phase).

struct ConvParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    cin_g: u32,       // input channels per group
    cout_g: u32,      // output channels per group
    kw: u32,
    khkw: u32,        // kh * kw
    stride_h: u32,
    stride_w: u32,
    pad_top: u32,
    pad_left: u32,
    dil_h: u32,
    dil_w: u32,
    m: u32,           // GEMM rows
    n: u32,           // GEMM columns
    k: u32,           // GEMM inner size
    k_chunk: u32,     // K per split (a multiple of 16); >= K when not split
    tiles_n: u32,     // ceil(N / 64)
    tiles_mn: u32,    // tiles_n * ceil(M / 64)
    groups: u32,      // workgroups: tiles_mn * conv_groups * splits
    conv_groups: u32, // channel groups
    x_offset: u32,    // the input's element offset
    dy_offset: u32,   // the output gradient's element offset
    x_strides: array<u32, 4>,  // the input's N, C, H, W strides
    dy_strides: array<u32, 4>, // the output gradient's N, C, H, W strides
}

var<immediate> p: ConvParams;
