// What the strided -> strided copies (movement/copy_view.wgsl for 32-bit
// words, movement/copy_half.wgsl for 16-bit elements) share: the immediate
// block and the offsets of logical element `i` in source and destination.
// For element i of `shape` (row-major) with coordinates c: source element
// src_offset + sum c*src_strides, destination dst_offset + sum c*dst_strides
// (in elements).

struct CopyViewParams {
    numel: u32,
    rank: u32,
    src_offset: u32,
    dst_offset: u32,
    shape: array<u32, 6>,
    src_strides: array<u32, 6>,
    dst_strides: array<u32, 6>,
}

var<immediate> p: CopyViewParams;

// (source, destination) element offsets of logical element `i`.
fn view_offsets(i: u32) -> vec2<u32> {
    var rem = i;
    var src_at = p.src_offset;
    var dst_at = p.dst_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        src_at += k * p.src_strides[d];
        dst_at += k * p.dst_strides[d];
    }
    return vec2<u32>(src_at, dst_at);
}
