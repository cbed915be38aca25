// Gradient of avg_pool2d: one thread per input element [N, C, H, W]
// (contiguous output) sums grad / divisor over the outputs whose window
// holds it, in row-major output order (PyTorch's scatter order).
// Bindings: 0 grad (read, strided [N, C, Ho, Wo]), 1 out (read_write).

//! include common/pool_params.wgsl
//! include common/avg_window.wgsl

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// The outputs (one axis) whose window can cover input position `pos`:
// o*stride - pad <= pos <= o*stride - pad + span, as [lo, hi) cut to `count`.
fn covering(pos: u32, pad: u32, span: u32, stride: u32, count: u32) -> vec2<u32> {
    let q = pos + pad;
    var lo = 0u;
    if q >= span {
        lo = (q - span + stride - 1u) / stride;
    }
    let hi = max(min(q / stride + 1u, count), lo);
    return vec2<u32>(lo, hi);
}

@compute @workgroup_size(256)
fn avg_pool2d_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
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
    let rows = covering(ih, p.pad_h, p.kernel_h - 1u, p.stride_h, p.out_h);
    let cols = covering(iw, p.pad_w, p.kernel_w - 1u, p.stride_w, p.out_w);
    var sum = 0.0;
    for (var oh = rows.x; oh < rows.y; oh++) {
        for (var ow = cols.x; ow < cols.y; ow++) {
            let g = grad[gbase + oh * p.x_strides[2] + ow * p.x_strides[3]];
            sum += g / avg_window(oh, ow).divisor;
        }
    }
    out[i] = sum;
}
