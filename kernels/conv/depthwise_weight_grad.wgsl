// Depthwise conv2d weight gradient (see common/depthwise_params.wgsl): one
// workgroup per output channel o. Each of its 256 threads sums
// grad_out[n, o, y, x] * in[n, o / mult, tap position] over every 256th
// output pixel for each of the kh * kw taps (at most MAX_TAPS), then the
// threads' sums are added per tap in a fixed tree (deterministic).
// Bindings: 0 input (read, strided), 1 grad_out (read, strided), 2 dw
// (read_write, contiguous [C_out, 1, kh, kw]).

//! include common/depthwise_params.wgsl

const MAX_TAPS: u32 = 49u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dw: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn depthwise_weight_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Uniform per workgroup: every thread reaches the barriers below.
    let o = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if o >= p.total {
        return;
    }
    let taps = p.kh * p.kw;
    let c = o / p.mult;
    var acc: array<f32, MAX_TAPS>;
    for (var t = 0u; t < MAX_TAPS; t++) {
        acc[t] = 0.0;
    }
    let pixels = p.batch * p.out_h * p.out_w;
    for (var q = lid; q < pixels; q += 256u) {
        let ox = q % p.out_w;
        let oy = (q / p.out_w) % p.out_h;
        let n = q / (p.out_w * p.out_h);
        let g = dy[p.dy_offset + n * p.dy_strides[0] + o * p.dy_strides[1] + oy * p.dy_strides[2] + ox * p.dy_strides[3]];
        let base = p.x_offset + n * p.x_strides[0] + c * p.x_strides[1];
        let y0 = i32(oy * p.stride_h) - i32(p.pad_top);
        let x0 = i32(ox * p.stride_w) - i32(p.pad_left);
        for (var a = 0u; a < p.kh; a++) {
            let y = y0 + i32(a * p.dil_h);
            if y < 0 || y >= i32(p.in_h) {
                continue;
            }
            let row = base + u32(y) * p.x_strides[2];
            for (var b = 0u; b < p.kw; b++) {
                let xx = x0 + i32(b * p.dil_w);
                if xx >= 0 && xx < i32(p.in_w) {
                    acc[a * p.kw + b] += g * x[row + u32(xx) * p.x_strides[3]];
                }
            }
        }
    }
    for (var t = 0u; t < taps; t++) {
        partial[lid] = acc[t];
        workgroupBarrier();
        for (var s = 128u; s > 0u; s >>= 1u) {
            if lid < s {
                partial[lid] += partial[lid + s];
            }
            workgroupBarrier();
        }
        if lid == 0u {
            dw[o * taps + t] = partial[0];
        }
        workgroupBarrier();
    }
}
