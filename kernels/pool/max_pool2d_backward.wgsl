// Gradient of max_pool2d: one thread per input element [N, C, H, W]
// (contiguous output) gathers, in row-major output order, the output
// gradients whose index points at it, over the outputs whose window can
// cover it. Deterministic (no atomics); overlapping windows add up.
// Bindings: 0 grad (read, strided [N, C, Ho, Wo]), 1 indices (read, i32,
// strided), 2 out (read_write).

//! include common/pool_params.wgsl

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

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
fn max_pool2d_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
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
    let ibase = p.i_offset + n * p.i_strides[0] + c * p.i_strides[1];
    let rows = covering(ih, p.pad_h, p.dilation_h * (p.kernel_h - 1u), p.stride_h, p.out_h);
    let cols = covering(iw, p.pad_w, p.dilation_w * (p.kernel_w - 1u), p.stride_w, p.out_w);
    let own = i32(ih * p.in_w + iw);
    var sum = 0.0;
    for (var oh = rows.x; oh < rows.y; oh++) {
        for (var ow = cols.x; ow < cols.y; ow++) {
            if indices[ibase + oh * p.i_strides[2] + ow * p.i_strides[3]] == own {
                sum += grad[gbase + oh * p.x_strides[2] + ow * p.x_strides[3]];
            }
        }
    }
    out[i] = sum;
}

// The plain 2 x 2, stride-2 pooling that tiles its input exactly (no
// padding or dilation, in = 2 * out on both axes): the windows are
// disjoint and cover every input element once, so one thread per output
// (p.numel = outputs here) writes its window's four inputs, the gradient
// where the index points and 0 elsewhere. Same values, bit for bit, as
// the gathering kernel above, with a quarter of its index arithmetic.
@compute @workgroup_size(256)
fn max_pool2d_backward_2x2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let o = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if o >= p.numel {
        return;
    }
    let ow = o % p.out_w;
    let t = o / p.out_w;
    let oh = t % p.out_h;
    let plane = t / p.out_h;
    let n = plane / p.channels;
    let c = plane % p.channels;
    let g = grad[p.x_offset + n * p.x_strides[0] + c * p.x_strides[1] + oh * p.x_strides[2] + ow * p.x_strides[3]];
    let at = indices[p.i_offset + n * p.i_strides[0] + c * p.i_strides[1] + oh * p.i_strides[2] + ow * p.i_strides[3]];
    let top = 2u * oh * p.in_w + 2u * ow;
    let base = plane * p.in_h * p.in_w + top;
    // The gathering kernel's 0 + g turns a -0.0 gradient into +0.0.
    let v = select(g, 0.0, g == 0.0);
    out[base] = select(0.0, v, at == i32(top));
    out[base + 1u] = select(0.0, v, at == i32(top + 1u));
    out[base + p.in_w] = select(0.0, v, at == i32(top + p.in_w));
    out[base + p.in_w + 1u] = select(0.0, v, at == i32(top + p.in_w + 1u));
}
