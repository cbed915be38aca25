// Partial sums of layer_norm's weight and bias gradients: workgroup
// (column block cb, row block rb) sums dy * xhat and dy over rows
// [rb * row_block, (rb + 1) * row_block) for its 256 columns (a thread per
// column: neighbouring threads read neighbouring addresses) and writes
// them at [rb, column] of two [row_blocks, cols] buffers, which a sum over
// the row blocks finishes. Immediates: common/layer_norm.wgsl.
//
// Bindings: 0 x, 1 mean, 2 rstd, 3 dy (read), 4 weight partials,
// 5 bias partials (read_write).

//! include common/layer_norm.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> mean_in: array<f32>;
@group(0) @binding(2) var<storage, read> rstd_in: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dweight: array<f32>;
@group(0) @binding(5) var<storage, read_write> dbias: array<f32>;

@compute @workgroup_size(256)
fn layer_norm_param_grads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let cb = group % p.col_blocks;
    let rb = group / p.col_blocks;
    let col = cb * WG + lid;
    let cols = p.cols;
    let first = rb * p.row_block;
    if col >= cols || first >= p.rows {
        return;
    }
    let last = min(first + p.row_block, p.rows);
    var dw = 0.0;
    var db = 0.0;
    for (var row = first; row < last; row++) {
        let i = row * cols + col;
        let g = dy[i];
        dw += g * (x[i] - mean_in[row]) * rstd_in[row];
        db += g;
    }
    dweight[rb * cols + col] = dw;
    dbias[rb * cols + col] = db;
}
