// Winograd F(2x2, 3x3) output-gradient transform, for the weight gradient
// (see common/winograd_params.wgsl): the adjoint of the output transform.
// One thread per (o, q) reads the 2 x 2 block dY of grad_out channel o
// under tile q (through its strides, zero past its edge) and writes
// dM[t, o, q] = (A dY A^T)[t], with A = [[1, 0], [1, 1], [1, -1], [0, -1]].
// The weight gradient's U-gradient is then dU[t] = dM[t] @ V[t]^T (V the
// forward's input transform), and conv/winograd_weight_grad.wgsl takes it
// back to the 3 x 3 taps.
// Fields: channels = grad_out's channels, in_h / in_w = its height and
// width, x_offset / x_strides = its layout; tiles_h, tiles_w, tiles.
// Bindings: 0 grad_out (read, strided), 1 dM (read_write, [16, channels,
// tiles]).

//! include common/winograd_params.wgsl

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read_write> dm: array<f32>;

@compute @workgroup_size(256)
fn winograd_grad_output(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = winograd_thread(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let o = i / p.tiles;
    let q = i % p.tiles;
    let tile = winograd_tile(q);
    let tx = tile.x;
    let ty = tile.y;
    let n = tile.z;
    let base = p.x_offset + n * p.x_strides[0] + o * p.x_strides[1];
    var d = vec4<f32>(0.0);
    for (var a = 0u; a < 2u; a++) {
        let y = 2u * ty + a;
        for (var b = 0u; b < 2u; b++) {
            let x = 2u * tx + b;
            if y < p.in_h && x < p.in_w {
                d[a * 2u + b] = dy[base + y * p.x_strides[2] + x * p.x_strides[3]];
            }
        }
    }
    // A dY: 4 x 2 (rows of dY combined).
    let z = array<vec2<f32>, 4>(
        d.xy,
        d.xy + d.zw,
        d.xy - d.zw,
        -d.zw,
    );
    // (A dY) A^T: 4 x 4.
    let plane = p.channels * p.tiles;
    for (var a = 0u; a < 4u; a++) {
        let r = z[a];
        dm[(a * 4u) * plane + i] = r.x;
        dm[(a * 4u + 1u) * plane + i] = r.x + r.y;
        dm[(a * 4u + 2u) * plane + i] = r.x - r.y;
        dm[(a * 4u + 3u) * plane + i] = -r.y;
    }
}
