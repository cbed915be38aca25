// one_hot: out[row, class] = (labels[row] == class) ? ONE : 0 for I32 labels
// (a strided view, read in row-major order) and a contiguous output with
// `classes` columns. ONE / zero are the bit patterns of the output dtype.
// One thread per output element keeps the writes coalesced even for large
// class counts. Bindings: 0 labels (read, i32), 1 out (read_write), 2 fault.
// A label outside 0..classes raises fault code 3 (checked once per row by
// its class-0 thread); its row stays all zeros. With classes == 0 the host
// launches `cols = 1` thread per row that only checks (and writes nothing).

//! include common/fault.wgsl

struct OneHotParams {
    numel: u32,
    rank: u32,
    label_offset: u32,
    classes: u32,
    cols: u32,
    one: u32,
    _pad0: u32,
    _pad1: u32,
    // Label shape and strides.
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: OneHotParams;

@group(0) @binding(0) var<storage, read> labels: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> fault: array<atomic<u32>, 4>;

const FAULT_ONE_HOT: u32 = 3u;

@compute @workgroup_size(256)
fn one_hot(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let col = i % p.cols;
    var rem = i / p.cols;
    var at = p.label_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    let label = labels[at];
    let bad = label < 0 || u32(label) >= p.classes;
    if bad && col == 0u {
        raise_fault(FAULT_ONE_HOT, bitcast<u32>(label), p.classes);
    }
    if p.classes > 0u {
        out[i] = select(0u, p.one, !bad && u32(label) == col);
    }
}
