// Broadcasting binary arithmetic on f32 over strided views.
// Bindings: 0 a (read), 1 b (read), 2 out (read_write, contiguous).
// Immediates: BinaryParams. Override OP selects the operation
// (codes of wgrad_core::BinaryOp: 0 add, 1 sub, 2 mul, 3 div, 4 pow, 5 maximum, 6 minimum,
// 7 floor_divide, 8 remainder).
// `apply` (common/binary_op.wgsl) is shared with scalar.wgsl.

//! include common/binary_op.wgsl
//! include common/binary_params.wgsl

override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// Each thread handles EPT elements `tile + lid + k * 256` (coalesced per
// instruction); a full tile issues all its loads before any store, which is
// what keeps enough memory requests in flight (see unary.wgsl). The host
// dispatches ceil(numel / EPT) threads.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

@compute @workgroup_size(256)
fn binary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        // Unrolled by hand: a dynamically indexed local array would live in
        // (slow) private memory instead of registers.
        let o0 = offsets_of(i + 0u);
        let o1 = offsets_of(i + 256u);
        let o2 = offsets_of(i + 512u);
        let o3 = offsets_of(i + 768u);
        let o4 = offsets_of(i + 1024u);
        let o5 = offsets_of(i + 1280u);
        let o6 = offsets_of(i + 1536u);
        let o7 = offsets_of(i + 1792u);
        let a0 = a[o0.x];
        let b0 = b[o0.y];
        let a1 = a[o1.x];
        let b1 = b[o1.y];
        let a2 = a[o2.x];
        let b2 = b[o2.y];
        let a3 = a[o3.x];
        let b3 = b[o3.y];
        let a4 = a[o4.x];
        let b4 = b[o4.y];
        let a5 = a[o5.x];
        let b5 = b[o5.y];
        let a6 = a[o6.x];
        let b6 = b[o6.y];
        let a7 = a[o7.x];
        let b7 = b[o7.y];
        out[i + 0u] = apply(a0, b0);
        out[i + 256u] = apply(a1, b1);
        out[i + 512u] = apply(a2, b2);
        out[i + 768u] = apply(a3, b3);
        out[i + 1024u] = apply(a4, b4);
        out[i + 1280u] = apply(a5, b5);
        out[i + 1536u] = apply(a6, b6);
        out[i + 1792u] = apply(a7, b7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            let at = offsets_of(j);
            out[j] = apply(a[at.x], b[at.y]);
        }
    }
}
