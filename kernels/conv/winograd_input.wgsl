// Winograd F(2x2, 3x3) input transform (see common/winograd_params.wgsl):
// one thread per (c, q) reads the 4 x 4 patch d of channel c under tile q
// (through the input's strides, zero outside it) and writes
// V[t, c, q] = (B^T d B)[t], with
//   B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]].
// Neighbouring threads take neighbouring tiles, so the stores coalesce.
// Bindings: 0 x (read, [N, channels, in_h, in_w] strided), 1 V
// (read_write, [16, channels, tiles]).

//! include common/winograd_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(256)
fn winograd_input(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = winograd_thread(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let c = i / p.tiles;
    let q = i % p.tiles;
    let tile = winograd_tile(q);
    let tx = tile.x;
    let ty = tile.y;
    let n = tile.z;
    let base = p.x_offset + n * p.x_strides[0] + c * p.x_strides[1];
    let y0 = i32(2u * ty) - i32(p.pad_top);
    let x0 = i32(2u * tx) - i32(p.pad_left);
    var d: array<f32, 16>;
    for (var a = 0; a < 4; a++) {
        let y = y0 + a;
        let row_ok = y >= 0 && y < i32(p.in_h);
        for (var b = 0; b < 4; b++) {
            let xx = x0 + b;
            var value = 0.0;
            if row_ok && xx >= 0 && xx < i32(p.in_w) {
                value = x[base + u32(y) * p.x_strides[2] + u32(xx) * p.x_strides[3]];
            }
            d[a * 4 + b] = value;
        }
    }
    // B^T d: combine rows.
    var e: array<f32, 16>;
    for (var b = 0; b < 4; b++) {
        e[b] = d[b] - d[8 + b];
        e[4 + b] = d[4 + b] + d[8 + b];
        e[8 + b] = d[8 + b] - d[4 + b];
        e[12 + b] = d[4 + b] - d[12 + b];
    }
    // (B^T d) B: combine columns.
    let plane = p.channels * p.tiles;
    for (var a = 0u; a < 4u; a++) {
        let e0 = e[a * 4u];
        let e1 = e[a * 4u + 1u];
        let e2 = e[a * 4u + 2u];
        let e3 = e[a * 4u + 3u];
        v[(a * 4u) * plane + i] = e0 - e2;
        v[(a * 4u + 1u) * plane + i] = e1 + e2;
        v[(a * 4u + 2u) * plane + i] = e2 - e1;
        v[(a * 4u + 3u) * plane + i] = e1 - e3;
    }
}
