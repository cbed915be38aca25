// layer_norm input gradient over contiguous rows, from the saved mean and
// rstd: with g = dy [* weight] and xhat = (x - mean) * rstd,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), both means over the
// row (one tree for the pair). Immediates and layout: common/layer_norm.wgsl.
//
// Bindings: 0 x, 1 weight (x where absent), 2 mean, 3 rstd, 4 dy (read),
// 5 dx (read_write).

//! include common/layer_norm.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> mean_in: array<f32>;
@group(0) @binding(3) var<storage, read> rstd_in: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

fn scaled(i: u32, j: u32) -> f32 {
    if (p.flags & FLAG_WEIGHT) != 0u {
        return dy[i] * weight[j];
    }
    return dy[i];
}

@compute @workgroup_size(256)
fn layer_norm_backward_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let row = group * (WG / lanes) + lid / lanes;
    let lane = lid % lanes;
    let live = row < p.rows;
    let cols = p.cols;
    let base = row * cols;

    var m = 0.0;
    var r = 0.0;
    var acc = vec2<f32>(0.0, 0.0);
    if live {
        m = mean_in[row];
        r = rstd_in[row];
        for (var j = lane; j < cols; j += lanes) {
            let g = scaled(base + j, j);
            acc += vec2<f32>(g, g * (x[base + j] - m) * r);
        }
    }
    let sums = row_sum(acc, lid) / f32(cols);
    if !live {
        return;
    }
    for (var j = lane; j < cols; j += lanes) {
        let xhat = (x[base + j] - m) * r;
        dx[base + j] = r * (scaled(base + j, j) - sums.x - xhat * sums.y);
    }
}
