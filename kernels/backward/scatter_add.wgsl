// Accumulating scatter: out[c with c[axis] = idx[c]] += src[c] for every
// multi-index c of the iteration shape. Serves scatter_add (idx is the
// index tensor) and index_add (idx is the 1-D index viewed with stride 0 on
// every axis but `axis`). `out` already holds a copy of the base.
// WGSL has no float atomics, so each add is a compare-exchange loop on the
// f32 bit pattern; duplicate targets therefore accumulate in any order.
// An index outside 0..size raises device fault FAULT_CODE (1 index_add,
// 2 scatter_add) and that element is skipped.
// Bindings: 0 src (read), 1 idx (read, i32), 2 out (read_write), 3 fault.
// Immediates: Params.

//! include common/fault.wgsl

struct Params {
    numel: u32,
    rank: u32,
    src_offset: u32,
    idx_offset: u32,
    out_offset: u32,
    shape: array<u32, 6>,
    src_strides: array<u32, 6>,
    idx_strides: array<u32, 6>,
    out_strides: array<u32, 6>,
    axis: u32,
    size: u32,
}

var<immediate> p: Params;
override FAULT_CODE: u32 = 1u;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn scatter_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    var rem = i;
    var si = p.src_offset;
    var ii = p.idx_offset;
    var io = p.out_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        si += k * p.src_strides[d];
        ii += k * p.idx_strides[d];
        if u32(d) != p.axis {
            io += k * p.out_strides[d];
        }
    }
    let tgt = idx[ii];
    if tgt < 0 || u32(tgt) >= p.size {
        raise_fault(FAULT_CODE, bitcast<u32>(tgt), p.size);
        return;
    }
    io += u32(tgt) * p.out_strides[p.axis];
    let v = src[si];
    var old = atomicLoad(&out[io]);
    loop {
        let r = atomicCompareExchangeWeak(&out[io], old, bitcast<u32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}
