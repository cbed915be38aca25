// Strided -> strided copy of 32-bit words (any 4-byte dtype): writes a view
// of `src` through the destination's own strides. concat uses it to place
// each input into its slice of the output without an intermediate copy.
// Bindings: 0 src (read), 1 dst (read_write). Immediates: CopyViewParams.
// For logical element i of `shape` (row-major) with coordinates c:
// dst[dst_offset + sum c*dst_strides] = src[src_offset + sum c*src_strides].

//! include common/copy_view_params.wgsl

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn copy_to_view(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let at = view_offsets(i);
    let src_at = at.x;
    let dst_at = at.y;
    dst[dst_at] = src[src_at];
}
