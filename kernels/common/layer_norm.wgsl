// What the layer_norm kernels share: the immediates and the sum over a
// row's threads. Each row of `cols` contiguous elements is served by
// `lanes` threads (a power of two up to 256), 256 / lanes rows per
// workgroup; rows past the end take part in the barriers only.

struct LayerNormParams {
    rows: u32,
    cols: u32,
    eps: u32,        // f32 bits
    lanes: u32,      // threads per row
    flags: u32,      // FLAG_WEIGHT | FLAG_BIAS
    row_block: u32,  // param grads: rows summed per workgroup
    col_blocks: u32, // param grads: ceil(cols / 256)
    pad: u32,
}

const FLAG_WEIGHT: u32 = 1u;
const FLAG_BIAS: u32 = 2u;
const WG: u32 = 256u;

var<immediate> p: LayerNormParams;

var<workgroup> red: array<vec2<f32>, 256>;

// The sum of `v` over the `lanes` threads of this thread's row (a tree in
// workgroup memory). Every thread of the workgroup calls it.
fn row_sum(v: vec2<f32>, lid: u32) -> vec2<f32> {
    red[lid] = v;
    workgroupBarrier();
    let lane = lid % p.lanes;
    for (var s = p.lanes / 2u; s > 0u; s >>= 1u) {
        if lane < s {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let total = red[lid - lane];
    workgroupBarrier();
    return total;
}
