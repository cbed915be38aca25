// Strided -> strided copy of 16-bit elements (F16, BF16: two per word, see
// common/half.wgsl): copy_view.wgsl for the half dtypes. concat places each
// input into its slice of the output with it, and write_view (copy_, the
// narrow backward) writes into a half view.
// Bindings: 0 src (read), 1 dst (read_write, atomic words).
// Immediates: CopyViewParams (offsets and strides in elements).
// For logical element i of `shape` (row-major) with coordinates c:
// dst element (dst_offset + sum c*dst_strides) = src element
// (src_offset + sum c*src_strides), bits unchanged.
//
// Two threads may write the two halves of one destination word (a strided
// view, or a slice boundary inside a word), so a plain store of the word
// would lose the other half. Each thread clears its half with atomicAnd,
// then sets it with atomicOr: the halves are disjoint bits, so the other
// thread's two operations never touch them, in whatever order they land.
// (No two threads write the same element: the host refuses overlapping
// destination views.)

//! include common/half.wgsl

//! include common/copy_view_params.wgsl

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;

@compute @workgroup_size(256)
fn copy_half_to_view(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let at = view_offsets(i);
    let src_at = at.x;
    let dst_at = at.y;
    let bits = half_of_word(src[src_at >> 1u], src_at);
    let shift = (dst_at & 1u) * 16u;
    let word = dst_at >> 1u;
    atomicAnd(&dst[word], ~(0xffffu << shift));
    atomicOr(&dst[word], bits << shift);
}
