// Integer binary arithmetic between a strided view and one scalar (I32;
// written against `elem`), writing contiguous. Bindings: 0 x (read), 1 out
// (read_write, contiguous), 2 fault. Immediates: ScalarParams (as
// scalar.wgsl, the scalar travels as its bits in the f32 slot). Overrides OP (BinaryOp::code())
// and LEFT (1: `scalar op x`). A zero divisor raises fault code 10.

//! include common/binary_op_int.wgsl
//! include common/scalar_params.wgsl

override OP: u32 = 0u;
override LEFT: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> out: array<elem>;
@group(0) @binding(2) var<storage, read_write> fault: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn binary_scalar_int(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let v = x[offset_of(i)];
    let s = bitcast<elem>(p.scalar);
    if LEFT == 1u {
        out[i] = apply_int(s, v, i);
    } else {
        out[i] = apply_int(v, s, i);
    }
}
