// Broadcasting integer binary arithmetic over strided views (I32 tensors;
// written against `elem`). Bindings: 0 a (read), 1 b (read), 2 out
// (read_write, contiguous), 3 fault. Immediates: BinaryParams (as
// binary.wgsl). Override OP = wgrad_core::BinaryOp::code() of an op that
// keeps integers. A zero divisor of floor division or remainder raises
// fault code 10 (index: the output element, size: the op code) and writes 0.

//! include common/binary_op_int.wgsl
//! include common/binary_params.wgsl

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
    let at = offsets_of(i);
    out[i] = apply_int(a[at.x], b[at.y], i);
}
