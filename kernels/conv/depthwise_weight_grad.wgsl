// Depthwise conv2d weight gradient (see common/depthwise_params.wgsl): one
// workgroup per (chunk s of `chunk` output rows of the batch * out_h,
// output channel o, tap row band). Under SPLIT_ROWS = 1 each workgroup
// takes one tap row a (KW taps; the bands are the KH rows), else all KH *
// KW taps (one band): fewer sums per thread keep them in registers for
// large kernels. Each thread (ROWS x COLS of them) sums grad_out[n, o, y,
// x] * in[n, o / mult, tap position] over its rows and columns of the
// chunk for each of its taps, then the threads' sums are added per tap in
// a fixed tree and written to partial[s, o, tap]; matmul/sum_splits.wgsl
// adds the chunks in order (deterministic; no atomics).
// Bindings: 0 input (read, strided), 1 grad_out (read, strided), 2 partial
// (read_write, [chunks, C_out, KH * KW]).
// Workgroups: chunks * C_out * (KH under SPLIT_ROWS, else 1).

//! include common/depthwise_params.wgsl

override SPLIT_ROWS: u32 = 0u;

// Most taps per workgroup (a 7 x 7 kernel whole).
const MAX_TAPS: u32 = 49u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial: array<f32>;

var<workgroup> lanes: array<f32, 256>;

@compute @workgroup_size(256)
fn depthwise_weight_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Uniform per workgroup: every thread reaches the barriers below.
    let group = depthwise_group(wid, nwg);
    if group >= p.total {
        return;
    }
    let bands = select(1u, KH, SPLIT_ROWS == 1u);
    let band_rows = KH / bands;
    let channels_out = p.channels * p.mult;
    let a0 = (group % bands) * band_rows;
    let o = (group / bands) % channels_out;
    let s = group / (bands * channels_out);
    let c = o / p.mult;
    var acc: array<f32, MAX_TAPS>;
    for (var t = 0u; t < band_rows * KW; t++) {
        acc[t] = 0.0;
    }
    // Output rows (of batch * out_h) row0 .. row_end, ROWS at a time.
    let rows = p.batch * p.out_h;
    let row_end = min(rows, (s + 1u) * p.chunk);
    for (var r = s * p.chunk + lid / COLS; r < row_end; r += ROWS) {
        let oy = r % p.out_h;
        let n = r / p.out_h;
        let dy_row = p.dy_offset + n * p.dy_strides[0] + o * p.dy_strides[1] + oy * p.dy_strides[2];
        let base = p.x_offset + n * p.x_strides[0] + c * p.x_strides[1];
        let y0 = i32(oy * SH) - i32(p.pad_top);
        for (var ox = lid % COLS; ox < p.out_w; ox += COLS) {
            let g = dy[dy_row + ox * p.dy_strides[3]];
            let x0 = i32(ox * SW) - i32(p.pad_left);
            for (var da = 0u; da < band_rows; da++) {
                let y = y0 + i32((a0 + da) * DH);
                if y < 0 || y >= i32(p.in_h) {
                    continue;
                }
                let row = base + u32(y) * p.x_strides[2];
                for (var b = 0u; b < KW; b++) {
                    let xx = x0 + i32(b * DW);
                    if xx >= 0 && xx < i32(p.in_w) {
                        acc[da * KW + b] += g * x[row + u32(xx) * p.x_strides[3]];
                    }
                }
            }
        }
    }
    let taps = KH * KW;
    for (var t = 0u; t < band_rows * KW; t++) {
        lanes[lid] = acc[t];
        workgroupBarrier();
        for (var span = 128u; span > 0u; span >>= 1u) {
            if lid < span {
                lanes[lid] += lanes[lid + span];
            }
            workgroupBarrier();
        }
        if lid == 0u {
            partial[(s * channels_out + o) * taps + a0 * KW + t] = lanes[0];
        }
        workgroupBarrier();
    }
}
