// Strided -> contiguous copy of 32-bit words (any 4-byte dtype).
// Bindings: 0 src (read), 1 dst (read_write). Immediates: CopyParams.
// dst[dst_offset + i] = src[offset of logical element i in the strided view].

struct CopyParams {
    numel: u32,
    rank: u32,
    src_offset: u32,
    dst_offset: u32,
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: CopyParams;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn copy_strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    var rem = i;
    var at = p.src_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    dst[p.dst_offset + i] = src[at];
}
