// f32 binary arithmetic between a strided view and one scalar, writing contiguous.
// Bindings: 0 x (read), 1 out (read_write, contiguous).
// Immediates: ScalarParams (the scalar travels here; no buffer is uploaded for it).
// Override OP selects the operation (codes of wgrad_core::BinaryOp: 0 add,
// 1 sub, 2 mul, 3 div, 4 pow, 5 maximum, 6 minimum, 7 floor_divide,
// 8 remainder); override LEFT = 1 puts
// the scalar on the left (`s - x`, `s ^ x`), 0 on the right (`x - s`).
// `apply` (common/binary_op.wgsl) is shared with binary.wgsl.

//! include common/binary_op.wgsl
//! include common/scalar_params.wgsl

override OP: u32 = 0u;
override LEFT: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// The scalar on the side LEFT asks for.
fn op(v: f32) -> f32 {
    if LEFT == 1u {
        return apply(p.scalar, v);
    }
    return apply(v, p.scalar);
}

// Each thread handles EPT elements: thread `lid` of a tile of 256 * EPT
// elements takes `tile + lid + k * 256` (k < EPT), so every load and store
// instruction stays coalesced across the subgroup. A full tile issues all
// its loads before any store: with one 4-byte load in flight per thread an
// H200 reaches under half its HBM bandwidth, with eight about 90%. The host
// dispatches ceil(numel / EPT) threads.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

@compute @workgroup_size(256)
fn binary_scalar(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let v0 = x[offset_of(i)];
        let v1 = x[offset_of(i + 256u)];
        let v2 = x[offset_of(i + 512u)];
        let v3 = x[offset_of(i + 768u)];
        let v4 = x[offset_of(i + 1024u)];
        let v5 = x[offset_of(i + 1280u)];
        let v6 = x[offset_of(i + 1536u)];
        let v7 = x[offset_of(i + 1792u)];
        out[i] = op(v0);
        out[i + 256u] = op(v1);
        out[i + 512u] = op(v2);
        out[i + 768u] = op(v3);
        out[i + 1024u] = op(v4);
        out[i + 1280u] = op(v5);
        out[i + 1536u] = op(v6);
        out[i + 1792u] = op(v7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            out[j] = op(x[offset_of(j)]);
        }
    }
}
