// The average-pooling window and divisor shared by avg_pool2d and its
// backward pass (needs common/pool_params.wgsl).

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
