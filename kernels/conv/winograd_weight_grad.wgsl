// Winograd F(2x2, 3x3) weight-gradient back-transform (see
// common/winograd_params.wgsl and conv/winograd_grad_output.wgsl): the
// adjoint of the weight transform. One thread per (r, s) of the
// [out_channels, channels] = [C_out, C_in] plane reads dU[t, r, s] for the 16 t and
// writes the 3 x 3 taps G^T dU G of weight_grad[r, s] (contiguous
// [out_channels, channels, 3, 3]), with G as in conv/winograd_weight.wgsl.
// Bindings: 0 dU (read, [16, out_channels, channels]), 1 weight_grad (read_write).

//! include common/winograd_params.wgsl

@group(0) @binding(0) var<storage, read> du: array<f32>;
@group(0) @binding(1) var<storage, read_write> dw: array<f32>;

@compute @workgroup_size(256)
fn winograd_weight_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = winograd_thread(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let plane = p.out_channels * p.channels;
    // G^T dU: 3 x 4 (rows of dU combined).
    var h: array<vec4<f32>, 3>;
    var x: array<vec4<f32>, 4>;
    for (var a = 0u; a < 4u; a++) {
        x[a] = vec4<f32>(
            du[(a * 4u) * plane + i],
            du[(a * 4u + 1u) * plane + i],
            du[(a * 4u + 2u) * plane + i],
            du[(a * 4u + 3u) * plane + i],
        );
    }
    h[0] = x[0] + 0.5 * (x[1] + x[2]);
    h[1] = 0.5 * (x[1] - x[2]);
    h[2] = 0.5 * (x[1] + x[2]) + x[3];
    // (G^T dU) G: 3 x 3.
    for (var a = 0u; a < 3u; a++) {
        let r = h[a];
        dw[i * 9u + a * 3u] = r.x + 0.5 * (r.y + r.z);
        dw[i * 9u + a * 3u + 1u] = 0.5 * (r.y - r.z);
        dw[i * 9u + a * 3u + 2u] = 0.5 * (r.y + r.z) + r.w;
    }
}
