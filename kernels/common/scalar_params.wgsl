// The immediates and the strided walk of the tensor-scalar kernels
// (elementwise/scalar.wgsl on f32, elementwise/scalar_int.wgsl on i32, where
// `scalar` carries the i32 scalar's bits): ScalarParams and the offset of
// logical element `i` in the strided input.

struct ScalarParams {
    numel: u32,
    rank: u32,
    offset: u32,
    scalar: f32,
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: ScalarParams;

// Offset of logical element `i` in the strided input (row-major walk; the
// outermost dim needs no division, so a view the host coalesced to rank 1
// costs none).
fn offset_of(i: u32) -> u32 {
    var rem = i;
    var at = p.offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    return at + rem * p.strides[0];
}
