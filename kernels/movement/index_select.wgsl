// index_select: out[c] = src[c with c[axis] replaced by index[c[axis]]],
// moving 32-bit words (any 4-byte dtype). The source and the 1-D index are
// strided views; the output is contiguous.
// Bindings: 0 src (read), 1 index (read, i32), 2 out (read_write), 3 fault.
// An index outside 0..axis_size raises fault code 1 and is clamped, so the
// kernel never reads out of bounds; the next readback reports the error.

//! include common/fault.wgsl

struct IndexSelectParams {
    numel: u32,
    rank: u32,
    src_offset: u32,
    idx_offset: u32,
    axis: u32,
    axis_size: u32,
    idx_stride: u32,
    _pad: u32,
    // Output shape (the source's, with `axis` resized to the index length).
    shape: array<u32, 6>,
    src_strides: array<u32, 6>,
}

var<immediate> p: IndexSelectParams;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>, 4>;

const FAULT_INDEX_SELECT: u32 = 1u;

@compute @workgroup_size(256)
fn index_select(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    var rem = i;
    var at = p.src_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        var k = rem % dim;
        rem /= dim;
        if u32(d) == p.axis {
            let idx = index[p.idx_offset + k * p.idx_stride];
            if idx < 0 || u32(idx) >= p.axis_size {
                raise_fault(FAULT_INDEX_SELECT, bitcast<u32>(idx), p.axis_size);
                // max(.., 1): an empty axis clamps to 0; the read below is then skipped.
                k = u32(clamp(idx, 0, i32(max(p.axis_size, 1u)) - 1));
            } else {
                k = u32(idx);
            }
        }
        at += k * p.src_strides[d];
    }
    if p.axis_size == 0u {
        out[i] = 0u; // nothing to read: the source is empty
        return;
    }
    out[i] = src[at];
}
