// Depthwise conv2d input gradient (see common/depthwise_params.wgsl): one
// thread per input element (n, c, h, w) sums grad_out[n, o, oy, ox] *
// w[o, 0, a, b] over its `mult` output channels o and the taps (a, b) with
// oy * sh = h + pt - a * dh (likewise the column) inside the output.
// Bindings: 0 grad_out (read, strided), 1 weight (read, contiguous), 2 dx
// (read_write, contiguous NCHW).

//! include common/depthwise_params.wgsl

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn depthwise_input_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = depthwise_index(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let ix = i % p.in_w;
    let iy = (i / p.in_w) % p.in_h;
    let c = (i / (p.in_w * p.in_h)) % p.channels;
    let n = i / (p.in_w * p.in_h * p.channels);
    var acc = 0.0;
    for (var j = 0u; j < p.mult; j++) {
        let o = c * p.mult + j;
        let base = p.dy_offset + n * p.dy_strides[0] + o * p.dy_strides[1];
        let w0 = o * KH * KW;
        for (var a = 0u; a < KH; a++) {
            // oy * sh = iy + pt - a * dh
            let ty = i32(iy + p.pad_top) - i32(a * DH);
            if ty < 0 || u32(ty) % SH != 0u {
                continue;
            }
            let oy = u32(ty) / SH;
            if oy >= p.out_h {
                continue;
            }
            for (var b = 0u; b < KW; b++) {
                let tx = i32(ix + p.pad_left) - i32(b * DW);
                if tx < 0 || u32(tx) % SW != 0u {
                    continue;
                }
                let ox = u32(tx) / SW;
                if ox < p.out_w {
                    acc += dy[base + oy * p.dy_strides[2] + ox * p.dy_strides[3]] * w[w0 + a * KW + b];
                }
            }
        }
    }
    dx[i] = acc;
}
