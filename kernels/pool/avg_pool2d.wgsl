// avg_pool2d (PyTorch's): one thread per output element [N, C, Ho, Wo]
// (contiguous) sums its window cut to the input in row-major order and
// divides by the window's divisor (see avg_window).
// Bindings: 0 x (read, strided), 1 out (read_write).

//! include common/pool_params.wgsl
//! include common/avg_window.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

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
