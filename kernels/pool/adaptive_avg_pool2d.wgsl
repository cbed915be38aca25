// adaptive_avg_pool2d (PyTorch's): one thread per output element
// [N, C, Ho, Wo] (contiguous) averages the input window
// [floor(oh*H/Ho), ceil((oh+1)*H/Ho)) x (likewise w) as sum / kh / kw.
// Bindings: 0 x (read, strided), 1 out (read_write).

//! include common/pool_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// Adaptive window [floor(o*size/count), ceil((o+1)*size/count)).
fn adaptive_window(o: u32, size: u32, count: u32) -> vec2<u32> {
    return vec2<u32>((o * size) / count, ((o + 1u) * size + count - 1u) / count);
}

@compute @workgroup_size(256)
fn adaptive_avg_pool2d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let ow = i % p.out_w;
    let t = i / p.out_w;
    let oh = t % p.out_h;
    let plane = t / p.out_h;
    let base = p.x_offset + (plane / p.channels) * p.x_strides[0] + (plane % p.channels) * p.x_strides[1];
    let hw = adaptive_window(oh, p.in_h, p.out_h);
    let ww = adaptive_window(ow, p.in_w, p.out_w);
    var sum = 0.0;
    for (var h = hw.x; h < hw.y; h++) {
        let row = base + h * p.x_strides[2];
        for (var w = ww.x; w < ww.y; w++) {
            sum += x[row + w * p.x_strides[3]];
        }
    }
    out[i] = sum / f32(hw.y - hw.x) / f32(ww.y - ww.x);
}
