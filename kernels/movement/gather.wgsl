// gather (torch.gather): out[c] = src[c with c[axis] replaced by index[c]],
// moving 32-bit words (any 4-byte dtype). The output has the index's shape;
// the source and index are strided views, the output contiguous.
// Bindings: 0 src (read), 1 index (read, i32), 2 out (read_write), 3 fault.
// An index outside 0..axis_size raises fault code 2 and is clamped, so the
// kernel never reads out of bounds; the next readback reports the error.

//! include common/fault.wgsl

struct GatherParams {
    numel: u32,
    rank: u32,
    src_offset: u32,
    idx_offset: u32,
    axis: u32,
    axis_size: u32,
    _pad0: u32,
    _pad1: u32,
    // Output (= index) shape.
    shape: array<u32, 6>,
    src_strides: array<u32, 6>,
    idx_strides: array<u32, 6>,
}

var<immediate> p: GatherParams;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>, 4>;

const FAULT_GATHER: u32 = 2u;

@compute @workgroup_size(256)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    // First pass: the index element at the same coordinates, and the source
    // offset of every coordinate except the gathered axis.
    var rem = i;
    var at = p.src_offset;
    var ia = p.idx_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        ia += k * p.idx_strides[d];
        if u32(d) != p.axis {
            at += k * p.src_strides[d];
        }
    }
    let idx = index[ia];
    var k = u32(0);
    if idx < 0 || u32(idx) >= p.axis_size {
        raise_fault(FAULT_GATHER, bitcast<u32>(idx), p.axis_size);
        // max(.., 1): an empty axis clamps to 0; the read below is then skipped.
        k = u32(clamp(idx, 0, i32(max(p.axis_size, 1u)) - 1));
    } else {
        k = u32(idx);
    }
    if p.axis_size == 0u {
        out[i] = 0u; // nothing to read: the source is empty
        return;
    }
    out[i] = src[at + k * p.src_strides[p.axis]];
}
