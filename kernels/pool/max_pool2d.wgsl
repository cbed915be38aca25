// max_pool2d (PyTorch's, with return_indices): one thread per output
// element [N, C, Ho, Wo] (contiguous) scans its window
// h = oh*stride - pad + i*dilation (likewise w), cut to the input, in
// row-major order: the first of equal maxima wins, a NaN wins over numbers
// and a later NaN over an earlier one (PyTorch's CPU kernel). The index is
// h*W + w within the plane (I32). A window with no input position gives
// -inf and the index of its first position past the padding.
// Bindings: 0 x (read, strided), 1 values (read_write), 2 indices
// (read_write, i32).

//! include common/nan.wgsl

//! include common/pool_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> values: array<f32>;
@group(0) @binding(2) var<storage, read_write> indices: array<i32>;

// The first tap of a dilated window at or past 0 (PyTorch's
// `while (ih0 < 0) ih0 += dilation`).
fn first_inside(start: i32, dilation: i32) -> i32 {
    if start >= 0 {
        return start;
    }
    return start + (-start + dilation - 1) / dilation * dilation;
}

@compute @workgroup_size(256)
fn max_pool2d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let ow = i % p.out_w;
    let t = i / p.out_w;
    let oh = t % p.out_h;
    let plane = t / p.out_h;
    let base = p.x_offset + (plane / p.channels) * p.x_strides[0] + (plane % p.channels) * p.x_strides[1];
    let dh = i32(p.dilation_h);
    let dw = i32(p.dilation_w);
    let hs = i32(oh * p.stride_h) - i32(p.pad_h);
    let ws = i32(ow * p.stride_w) - i32(p.pad_w);
    let h1 = min(hs + i32(p.kernel_h - 1u) * dh + 1, i32(p.in_h));
    let w1 = min(ws + i32(p.kernel_w - 1u) * dw + 1, i32(p.in_w));
    let h0 = first_inside(hs, dh);
    let w0 = first_inside(ws, dw);
    let width = i32(p.in_w);
    var best = bitcast<f32>(0xff800000u); // -inf
    var at = h0 * width + w0;
    for (var h = h0; h < h1; h += dh) {
        let row = base + u32(h) * p.x_strides[2];
        for (var w = w0; w < w1; w += dw) {
            let v = x[row + u32(w) * p.x_strides[3]];
            // Bit tests, not comparisons, decide NaN (WGSL may assume none).
            if is_nan(v) || (!is_nan(best) && v > best) {
                best = v;
                at = h * width + w;
            }
        }
    }
    values[i] = best;
    indices[i] = at;
}
