// avg_pool2d (PyTorch's): one thread per output element [N, C, Ho, Wo]
// (contiguous) sums its window cut to the input in row-major order and
// divides by the window's divisor (see avg_window).
// Bindings: 0 x (read, strided), 1 out (read_write).

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

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// Average-pooling window of output (oh, ow) cut to the input as
// (h0, h1, w0, w1), and its divisor (PyTorch's rules: the window cut to
// [-pad, size + pad) with count_include_pad, to the input without, or
// divisor_override).
struct AvgWindow {
    h0: i32,
    h1: i32,
    w0: i32,
    w1: i32,
    divisor: f32,
}

fn avg_window(oh: u32, ow: u32) -> AvgWindow {
    let hs = i32(oh * p.stride_h) - i32(p.pad_h);
    let ws = i32(ow * p.stride_w) - i32(p.pad_w);
    let he = min(hs + i32(p.kernel_h), i32(p.in_h + p.pad_h));
    let we = min(ws + i32(p.kernel_w), i32(p.in_w + p.pad_w));
    var win: AvgWindow;
    win.h0 = max(hs, 0);
    win.w0 = max(ws, 0);
    win.h1 = min(he, i32(p.in_h));
    win.w1 = min(we, i32(p.in_w));
    if p.divisor != 0u {
        win.divisor = f32(p.divisor);
    } else if p.count_include_pad != 0u {
        win.divisor = f32((he - hs) * (we - ws));
    } else {
        win.divisor = f32(max(win.h1 - win.h0, 0) * max(win.w1 - win.w0, 0));
    }
    return win;
}

@compute @workgroup_size(256)
fn avg_pool2d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let ow = i % p.out_w;
    let t = i / p.out_w;
    let oh = t % p.out_h;
    let plane = t / p.out_h;
    let base = p.x_offset + (plane / p.channels) * p.x_strides[0] + (plane % p.channels) * p.x_strides[1];
    let win = avg_window(oh, ow);
    if win.h0 >= win.h1 || win.w0 >= win.w1 {
        out[i] = 0.0;
        return;
    }
    var sum = 0.0;
    for (var h = win.h0; h < win.h1; h++) {
        let row = base + u32(h) * p.x_strides[2];
        for (var w = win.w0; w < win.w1; w++) {
            sum += x[row + u32(w) * p.x_strides[3]];
        }
    }
    out[i] = sum / win.divisor;
}
