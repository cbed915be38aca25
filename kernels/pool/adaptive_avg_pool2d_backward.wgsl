// Gradient of adaptive_avg_pool2d: one thread per input element
// [N, C, H, W] (contiguous output) sums grad / kh / kw over the outputs
// whose window holds it, [floor(ih*Ho/H), ceil((ih+1)*Ho/H)), in
// row-major output order.
// Bindings: 0 grad (read, strided [N, C, Ho, Wo]), 1 out (read_write).

//! include common/pool_params.wgsl

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// Adaptive window [floor(o*size/count), ceil((o+1)*size/count)).
fn adaptive_window(o: u32, size: u32, count: u32) -> vec2<u32> {
    return vec2<u32>((o * size) / count, ((o + 1u) * size + count - 1u) / count);
}

@compute @workgroup_size(256)
fn adaptive_avg_pool2d_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let iw = i % p.in_w;
    let t = i / p.in_w;
    let ih = t % p.in_h;
    let plane = t / p.in_h;
    let n = plane / p.channels;
    let c = plane % p.channels;
    let gbase = p.x_offset + n * p.x_strides[0] + c * p.x_strides[1];
    let oh1 = min(((ih + 1u) * p.out_h + p.in_h - 1u) / p.in_h, p.out_h);
    let ow1 = min(((iw + 1u) * p.out_w + p.in_w - 1u) / p.in_w, p.out_w);
    var sum = 0.0;
    for (var oh = (ih * p.out_h) / p.in_h; oh < oh1; oh++) {
        let hw = adaptive_window(oh, p.in_h, p.out_h);
        for (var ow = (iw * p.out_w) / p.in_w; ow < ow1; ow++) {
            let ww = adaptive_window(ow, p.in_w, p.out_w);
            let g = grad[gbase + oh * p.x_strides[2] + ow * p.x_strides[3]];
            sum += g / f32(hw.y - hw.x) / f32(ww.y - ww.x);
        }
    }
    out[i] = sum;
}
