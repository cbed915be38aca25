// Winograd F(2x2, 3x3) weight transform (see common/winograd_params.wgsl):
// one thread per (r, s) of U's [out_channels, channels] plane writes its 16 values
// U[t, r, s] = (G g G^T)[t], with
//   G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
// FLIP = 0 (forward): g = weight[r, s] of a contiguous [out_channels, channels, 3, 3]
// weight. FLIP = 1 (input gradient, the forward's adjoint): g[i, j] =
// weight[s, r, 2 - i, 2 - j] of a contiguous [channels, out_channels, 3, 3] weight,
// so that the input gradient is this correlation of the output gradient.
// Bindings: 0 weight (read), 1 U (read_write, [16, out_channels, channels]).

//! include common/winograd_params.wgsl

override FLIP: u32 = 0u;

@group(0) @binding(0) var<storage, read> weight: array<f32>;
@group(0) @binding(1) var<storage, read_write> u: array<f32>;

@compute @workgroup_size(256)
fn winograd_weight(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = winograd_thread(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let r = i / p.channels;
    let s = i % p.channels;
    var g: array<f32, 9>;
    if FLIP == 1u {
        let base = (s * p.out_channels + r) * 9u;
        for (var k = 0u; k < 9u; k++) {
            g[k] = weight[base + 8u - k];
        }
    } else {
        let base = i * 9u;
        for (var k = 0u; k < 9u; k++) {
            g[k] = weight[base + k];
        }
    }
    // G g: 4 x 3, rows of G applied down each column j.
    var h: array<f32, 12>;
    for (var j = 0u; j < 3u; j++) {
        let g0 = g[j];
        let g1 = g[3u + j];
        let g2 = g[6u + j];
        h[j] = g0;
        h[3u + j] = 0.5 * (g0 + g1 + g2);
        h[6u + j] = 0.5 * (g0 - g1 + g2);
        h[9u + j] = g2;
    }
    // (G g) G^T: 4 x 4.
    let plane = p.out_channels * p.channels;
    for (var a = 0u; a < 4u; a++) {
        let h0 = h[a * 3u];
        let h1 = h[a * 3u + 1u];
        let h2 = h[a * 3u + 2u];
        u[(a * 4u) * plane + i] = h0;
        u[(a * 4u + 1u) * plane + i] = 0.5 * (h0 + h1 + h2);
        u[(a * 4u + 2u) * plane + i] = 0.5 * (h0 - h1 + h2);
        u[(a * 4u + 3u) * plane + i] = h2;
    }
}
