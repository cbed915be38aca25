// Depthwise conv2d input gradient (see common/depthwise_params.wgsl): a
// workgroup per ROWS input rows of one (n, c) plane; each thread sums, for
// its input elements, grad_out[n, o, oy, ox] * w[o, 0, a, b] over the
// plane's `mult` output channels o and the taps (a, b) with
// oy * SH = iy + pt - a * DH (likewise the column) inside the output.
// Workgroups: N * C_in * ceil(in_h / ROWS).
// Bindings: 0 grad_out (read, strided), 1 weight (read, contiguous), 2 dx
// (read_write, contiguous NCHW).

//! include common/depthwise_params.wgsl

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn depthwise_input_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = depthwise_group(wid, nwg);
    if g >= p.total {
        return;
    }
    let blocks = (p.in_h + ROWS - 1u) / ROWS;
    let plane = g / blocks;
    let iy = (g % blocks) * ROWS + lid / COLS;
    if iy >= p.in_h {
        return;
    }
    let c = plane % p.channels;
    let n = plane / p.channels;
    let dx_row = (plane * p.in_h + iy) * p.in_w;
    for (var ix = lid % COLS; ix < p.in_w; ix += COLS) {
        var acc = 0.0;
        for (var j = 0u; j < p.mult; j++) {
            let o = c * p.mult + j;
            let base = p.dy_offset + n * p.dy_strides[0] + o * p.dy_strides[1];
            let w0 = o * KH * KW;
            for (var a = 0u; a < KH; a++) {
                // oy * SH = iy + pt - a * DH
                let ty = i32(iy + p.pad_top) - i32(a * DH);
                if ty < 0 || u32(ty) % SH != 0u {
                    continue;
                }
                let oy = u32(ty) / SH;
                if oy >= p.out_h {
                    continue;
                }
                let row = base + oy * p.dy_strides[2];
                for (var b = 0u; b < KW; b++) {
                    let tx = i32(ix + p.pad_left) - i32(b * DW);
                    if tx < 0 || u32(tx) % SW != 0u {
                        continue;
                    }
                    let ox = u32(tx) / SW;
                    if ox < p.out_w {
                        acc += dy[row + ox * p.dy_strides[3]] * w[w0 + a * KW + b];
                    }
                }
            }
        }
        dx[dx_row + ix] = acc;
    }
}
