// Fused backward of softmax / log_softmax along one axis of a strided view.
//   softmax (LOG = 0):     dx = y * (g - sum(g * y))
//   log_softmax (LOG = 1): dx = g - exp(y) * sum(g)
// with the sums over each row (the elements along `axis` at fixed other
// coordinates). Each row is handled by TPR threads of a 256-thread
// workgroup (RPW = 256 / TPR rows per workgroup): they stride over the row
// accumulating partial sums, combine them with a workgroup-memory tree
// reduction, then write the row. Two thread mappings keep loads coalesced:
//  - ACROSS = 0 (the axis is contiguous): a row's threads are consecutive
//    (lid = row_in_group * TPR + t), so a warp reads consecutive elements
//    of one row; the host picks TPR = next power of two of the row length,
//    capped at 256, so short rows do not idle whole workgroups.
//  - ACROSS = 1 (the axis is strided, e.g. softmax over axis 0): consecutive
//    threads take consecutive rows (lid = t * RPW + row_in_group), which are
//    usually adjacent in memory, and the host keeps TPR <= 8 so that a warp
//    spans at least 32 rows.
// Bindings: 0 g (read), 1 y (read), 2 out (read_write, contiguous).
// Immediates: Params.

struct Params {
    rows: u32,
    len: u32,
    rank: u32,
    axis: u32,
    g_offset: u32,
    y_offset: u32,
    shape: array<u32, 6>,
    g_strides: array<u32, 6>,
    y_strides: array<u32, 6>,
}

var<immediate> p: Params;
// 1 for log_softmax's backward, 0 for softmax's.
override LOG: u32 = 0u;
// Threads per row: a power of two in 1..=256.
override TPR: u32 = 256u;
// 1: consecutive threads take consecutive rows (see above).
override ACROSS: u32 = 0u;

@group(0) @binding(0) var<storage, read> g: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn softmax_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let rpw = 256u / TPR;
    // Distance in `partial` between the threads of one row.
    let step = select(1u, rpw, ACROSS == 1u);
    let t = select(lid % TPR, lid / rpw, ACROSS == 1u);
    let row = group * rpw + select(lid / TPR, lid % rpw, ACROSS == 1u);
    // Threads past the last row still take part in the barriers below.
    let live = row < p.rows;

    // Start of this row in g, y and the contiguous output: the row index
    // enumerates the coordinates of every axis except `axis` in row-major order.
    var gb = p.g_offset;
    var yb = p.y_offset;
    var ob = 0u;
    var out_stride = 1u;
    var dense = 1u;
    var rem = row;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        if u32(d) == p.axis {
            out_stride = dense;
        } else {
            let k = rem % dim;
            rem /= dim;
            gb += k * p.g_strides[d];
            yb += k * p.y_strides[d];
            ob += k * dense;
        }
        dense *= dim;
    }
    let gs = p.g_strides[p.axis];
    let ys = p.y_strides[p.axis];

    var acc = 0.0;
    if live {
        for (var k = t; k < p.len; k += TPR) {
            if LOG == 1u {
                acc += g[gb + k * gs];
            } else {
                acc += g[gb + k * gs] * y[yb + k * ys];
            }
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s >>= 1u) {
        if t < s {
            partial[lid] += partial[lid + s * step];
        }
        workgroupBarrier();
    }
    let total = partial[lid - t * step];

    if live {
        for (var k = t; k < p.len; k += TPR) {
            let gv = g[gb + k * gs];
            let yv = y[yb + k * ys];
            if LOG == 1u {
                out[ob + k * out_stride] = gv - exp(yv) * total;
            } else {
                out[ob + k * out_stride] = yv * (gv - total);
            }
        }
    }
}
