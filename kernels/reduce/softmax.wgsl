// Numerically stable softmax / log-softmax along one axis of a strided view,
// one fused pass per row: an online (max, sum of exp) fold per thread, a
// workgroup-memory tree to combine them, then each thread writes its elements.
//
// Rows are the lanes along the axis; `rows` = product of the other dims,
// which unravel (in order) through `shape`/`in_strides` for the input and
// `out_strides` for the contiguous output. A workgroup of 256 threads serves
// 256 / lanes rows with `lanes` threads per row.
// Bindings: 0 src (read), 1 out (read_write). Override LOG: 0 softmax, 1 log_softmax.

//! include common/nan.wgsl
//! include common/online_softmax.wgsl
//! include common/row_max_sum_tree.wgsl

struct SoftmaxParams {
    rows: u32,
    n: u32,              // length of the axis
    kept_rank: u32,      // number of dims in shape/in_strides/out_strides
    offset: u32,         // element offset of the input view
    in_axis_stride: u32,
    out_axis_stride: u32,
    lanes: u32,          // threads per row: a power of two in 1..=256
    flags: u32,
    shape: array<u32, 6>,
    in_strides: array<u32, 6>,
    out_strides: array<u32, 6>,
}

const FLAG_ROW_FAST: u32 = 1u; // neighbouring threads take neighbouring rows
const WG: u32 = 256u;

var<immediate> p: SoftmaxParams;
override LOG: u32 = 0u;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

var<workgroup> smax: array<f32, 256>;
var<workgroup> ssum: array<f32, 256>;

fn finish(x: f32, row_max: f32, total: f32, log_total: f32) -> f32 {
    if LOG == 1u {
        return x - row_max - log_total;
    }
    return exp(x - row_max) / total;
}

@compute @workgroup_size(256)
fn softmax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let per_group = WG / lanes;
    var r: u32;
    var t: u32;
    if (p.flags & FLAG_ROW_FAST) != 0u {
        // The axis is strided but neighbouring rows are adjacent in memory.
        r = lid % per_group;
        t = lid / per_group;
    } else {
        t = lid % lanes;
        r = lid / lanes;
    }
    let row = group * per_group + r;
    let live = row < p.rows;

    var in_base = p.offset;
    var out_base = 0u;
    var m = neg_inf();
    var s = 0.0;
    if live {
        var rem = row;
        for (var d = i32(p.kept_rank) - 1; d >= 0; d--) {
            let dim = p.shape[d];
            let k = rem % dim;
            rem /= dim;
            in_base += k * p.in_strides[d];
            out_base += k * p.out_strides[d];
        }
        // Four loads in flight before they are folded in.
        let st = p.in_axis_stride;
        let step3 = 3u * lanes;
        var e = t;
        loop {
            if e + step3 < p.n {
                let at = in_base + e * st;
                let ds = lanes * st;
                let x0 = src[at];
                let x1 = src[at + ds];
                let x2 = src[at + 2u * ds];
                let x3 = src[at + 3u * ds];
                online(&m, &s, x0);
                online(&m, &s, x1);
                online(&m, &s, x2);
                online(&m, &s, x3);
                e += 4u * lanes;
            } else if e < p.n {
                online(&m, &s, src[in_base + e * st]);
                e += lanes;
            } else {
                break;
            }
        }
    }

    let stats = fold_row_max_sum(r, t, lanes, m, s);

    if live {
        let row_max = stats.x;
        let total = stats.y;
        let log_total = log(total);
        let st = p.in_axis_stride;
        let so = p.out_axis_stride;
        let step3 = 3u * lanes;
        var e = t;
        loop {
            if e + step3 < p.n {
                let at = in_base + e * st;
                let ds = lanes * st;
                let x0 = src[at];
                let x1 = src[at + ds];
                let x2 = src[at + 2u * ds];
                let x3 = src[at + 3u * ds];
                let ot = out_base + e * so;
                let dso = lanes * so;
                out[ot] = finish(x0, row_max, total, log_total);
                out[ot + dso] = finish(x1, row_max, total, log_total);
                out[ot + 2u * dso] = finish(x2, row_max, total, log_total);
                out[ot + 3u * dso] = finish(x3, row_max, total, log_total);
                e += 4u * lanes;
            } else if e < p.n {
                out[out_base + e * so] = finish(src[in_base + e * st], row_max, total, log_total);
                e += lanes;
            } else {
                break;
            }
        }
    }
}
