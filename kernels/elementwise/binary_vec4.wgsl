// The dense case of binary.wgsl: both operands and the output contiguous,
// of the same shape (no broadcast), their offsets and the element count
// multiples of 4. Four f32 elements move per 16-byte load and store, so a
// thread keeps four times the bytes in flight of the strided kernel for
// the same number of memory instructions: what lets an add stream at HBM
// bandwidth. Results are binary.wgsl's bit for bit (the same `apply`).
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), all as vec4<f32>.
// Immediates: BinaryParams; only numel, a_offset and b_offset are read (in
// elements, each a multiple of 4; the host checks). Override OP as binary.wgsl.

//! include common/binary_op.wgsl
//! include common/binary_params.wgsl

override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;

// Each thread handles VPT vectors `tile + lid + k * 256`, all loads of a
// full tile issued before any store (as binary.wgsl). The host dispatches
// ceil(numel / 4 / VPT) threads.
const VPT: u32 = 4u;
const TILE: u32 = 1024u; // 256 * VPT

fn apply4(x: vec4<f32>, y: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(apply(x.x, y.x), apply(x.y, y.y), apply(x.z, y.z), apply(x.w, y.w));
}

@compute @workgroup_size(256)
fn binary_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.numel / 4u;
    let ao = p.a_offset / 4u;
    let bo = p.b_offset / 4u;
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= n {
        let a0 = a[ao + i];
        let b0 = b[bo + i];
        let a1 = a[ao + i + 256u];
        let b1 = b[bo + i + 256u];
        let a2 = a[ao + i + 512u];
        let b2 = b[bo + i + 512u];
        let a3 = a[ao + i + 768u];
        let b3 = b[bo + i + 768u];
        out[i] = apply4(a0, b0);
        out[i + 256u] = apply4(a1, b1);
        out[i + 512u] = apply4(a2, b2);
        out[i + 768u] = apply4(a3, b3);
        return;
    }
    // Last, partial tile: vector by vector, bounds-checked.
    for (var k = 0u; k < VPT; k++) {
        let j = i + k * 256u;
        if j < n {
            out[j] = apply4(a[ao + j], b[bo + j]);
        }
    }
}
