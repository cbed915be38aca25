// The immediates of every pooling kernel (wgrad-gpu params::Pool2dParams,
// field for field): sizes, window, flags, and the strided operands.

struct Pool2dParams {
    numel: u32,
    channels: u32,
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    kernel_h: u32,
    kernel_w: u32,
    stride_h: u32,
    stride_w: u32,
    pad_h: u32,
    pad_w: u32,
    dilation_h: u32,
    dilation_w: u32,
    count_include_pad: u32,
    divisor: u32,          // divisor_override, 0 for none
    x_offset: u32,
    x_strides: array<u32, 4>,
    i_offset: u32,
    i_strides: array<u32, 4>,
}

var<immediate> p: Pool2dParams;
