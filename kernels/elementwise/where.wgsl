// where_cond: out = mask != 0 ? a : b over three broadcast strided views,
// writing contiguous. The values are moved as 32-bit words, so NaN payloads
// and -0.0 pass through untouched.
// Bindings: 0 mask (read, u32), 1 a (read, f32 words), 2 b (read, f32 words),
// 3 out (read_write, contiguous).
// Immediates: WhereParams (5 header words + shape + 3 stride arrays = 116 bytes).

struct WhereParams {
    numel: u32,
    rank: u32,
    m_offset: u32,
    a_offset: u32,
    b_offset: u32,
    shape: array<u32, 6>,
    m_strides: array<u32, 6>,
    a_strides: array<u32, 6>,
    b_strides: array<u32, 6>,
}

var<immediate> p: WhereParams;

@group(0) @binding(0) var<storage, read> mask: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn where_cond(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    // Row-major walk; the outermost dim needs no division.
    var rem = i;
    var im = p.m_offset;
    var ia = p.a_offset;
    var ib = p.b_offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        im += k * p.m_strides[d];
        ia += k * p.a_strides[d];
        ib += k * p.b_strides[d];
    }
    im += rem * p.m_strides[0];
    ia += rem * p.a_strides[0];
    ib += rem * p.b_strides[0];
    // Read only the selected operand.
    if mask[im] != 0u {
        out[i] = a[ia];
    } else {
        out[i] = b[ib];
    }
}
