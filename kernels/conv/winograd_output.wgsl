// Winograd F(2x2, 3x3) output transform (see common/winograd_params.wgsl):
// one thread per (o, q) reads M[t, o, q] for the 16 t and writes the 2 x 2
// outputs A^T M A of tile q that lie inside [out_h, out_w], with
//   A^T = [[1, 1, 1, 0], [0, 1, -1, -1]],
// plus bias[o] (HAS_BIAS) and then ReLU (ACT_RELU), as the implicit-GEMM
// forward's store does.
// Bindings: 0 M (read, [16, out_channels, tiles]), 1 out (read_write,
// contiguous [N, out_channels, out_h, out_w]), 2 bias (read, dense
// [out_channels]; read only with HAS_BIAS = 1).

//! include common/winograd_params.wgsl
//! include common/relu4.wgsl

override HAS_BIAS: u32 = 0u;
override ACT_RELU: u32 = 0u;

@group(0) @binding(0) var<storage, read> m: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;

@compute @workgroup_size(256)
fn winograd_output(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
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
    let plane = p.out_channels * p.tiles;
    // A^T M: 2 x 4.
    var r: array<f32, 8>;
    for (var b = 0u; b < 4u; b++) {
        let m0 = m[b * plane + i];
        let m1 = m[(4u + b) * plane + i];
        let m2 = m[(8u + b) * plane + i];
        let m3 = m[(12u + b) * plane + i];
        r[b] = m0 + m1 + m2;
        r[4u + b] = m1 - m2 - m3;
    }
    // (A^T M) A: 2 x 2.
    var y = vec4<f32>(
        r[0] + r[1] + r[2],
        r[1] - r[2] - r[3],
        r[4] + r[5] + r[6],
        r[5] - r[6] - r[7],
    );
    if HAS_BIAS == 1u {
        y += vec4<f32>(bias[o]);
    }
    if ACT_RELU == 1u {
        y = relu4(y);
    }
    let row0 = 2u * ty;
    let col0 = 2u * tx;
    let base = (n * p.out_channels + o) * p.out_h;
    for (var a = 0u; a < 2u; a++) {
        if row0 + a < p.out_h {
            for (var b = 0u; b < 2u; b++) {
                if col0 + b < p.out_w {
                    out[(base + row0 + a) * p.out_w + col0 + b] = y[a * 2u + b];
                }
            }
        }
    }
}
