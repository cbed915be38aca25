// The immediates and the strided walk of the broadcasting binary kernels
// (elementwise/binary.wgsl on f32, elementwise/binary_int.wgsl on i32):
// BinaryParams and the offsets of logical element `i` in both operands.

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

// Offsets of logical element `i` in a and b (row-major walk; the outermost
// dim needs no division, so operands the host coalesced to rank 1 cost none).
fn offsets_of(i: u32) -> vec2<u32> {
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
    return vec2<u32>(ia + rem * p.a_strides[0], ib + rem * p.b_strides[0]);
}
