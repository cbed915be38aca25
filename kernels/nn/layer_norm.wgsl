// layer_norm forward over contiguous rows: each row's mean, then its biased
// variance as the mean of squared deviations (two passes: a large mean
// does not cost the variance its precision), rstd = 1 / sqrt(var + eps),
// y = (x - mean) * rstd [* weight] [+ bias]; the mean and rstd are saved
// for the backward. Immediates and layout: common/layer_norm.wgsl.
//
// Bindings: 0 x, 1 weight, 2 bias (read; x again where absent), 3 y,
// 4 mean, 5 rstd (read_write).

//! include common/layer_norm.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> rstd_out: array<f32>;

@compute @workgroup_size(256)
fn layer_norm_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let row = group * (WG / lanes) + lid / lanes;
    let lane = lid % lanes;
    let live = row < p.rows;
    let cols = p.cols;
    let base = row * cols;
    let n = f32(cols);

    // The row's first element is subtracted before summing (when finite):
    // a constant row then sums to exactly 0, so its mean is exact and its
    // variance 0, as PyTorch's Welford gives (a plain sum of 513 copies of
    // -1.1 left a variance of 3.8e-5).
    var k = 0.0;
    if live && cols > 0u {
        let first = x[base];
        if first - first == 0.0 {
            k = first;
        }
    }
    var s = 0.0;
    if live {
        for (var j = lane; j < cols; j += lanes) {
            s += x[base + j] - k;
        }
    }
    let mean = k + row_sum(vec2<f32>(s, 0.0), lid).x / n;
    var q = 0.0;
    if live {
        for (var j = lane; j < cols; j += lanes) {
            let d = x[base + j] - mean;
            q += d * d;
        }
    }
    let variance = row_sum(vec2<f32>(q, 0.0), lid).x / n;
    let rstd = 1.0 / sqrt(variance + bitcast<f32>(p.eps));
    if !live {
        return;
    }
    for (var j = lane; j < cols; j += lanes) {
        var h = (x[base + j] - mean) * rstd;
        if (p.flags & FLAG_WEIGHT) != 0u {
            h *= weight[j];
        }
        if (p.flags & FLAG_BIAS) != 0u {
            h += bias[j];
        }
        y[base + j] = h;
    }
    if lane == 0u {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
