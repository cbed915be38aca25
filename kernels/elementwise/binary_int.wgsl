// Broadcasting integer binary arithmetic over strided views (I32 tensors;
// written against `elem`). Bindings: 0 a (read), 1 b (read), 2 out
// (read_write, contiguous), 3 fault. Immediates: BinaryParams (as
// binary.wgsl). Override OP = wgrad_core::BinaryOp::code() of an op that
// keeps integers. A zero divisor of floor division or remainder raises
// fault code 10 (index: the output element, size: the op code) and writes 0.

//! include common/binary_op_int.wgsl

const FAULT_ZERO_DIVISION: u32 = 10u;

struct BinaryParams {
    numel: u32,
    rank: u32,
    a_offset: u32,
    b_offset: u32,
    shape: array<u32, 6>,
    a_strides: array<u32, 6>,
    b_strides: array<u32, 6>,
}

var<immediate> p: BinaryParams;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<elem>;
@group(0) @binding(1) var<storage, read> b: array<elem>;
@group(0) @binding(2) var<storage, read_write> out: array<elem>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn binary_int(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    var rem = i;
    var ia = p.a_offset;
    var ib = p.b_offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        ia += k * p.a_strides[d];
        ib += k * p.b_strides[d];
    }
    ia += rem * p.a_strides[0];
    ib += rem * p.b_strides[0];
    out[i] = apply_int(a[ia], b[ib], i);
}
