// Softmax / log-softmax for a few long rows, in two passes so that many
// workgroups share each row (softmax.wgsl gives a row one workgroup).
// Rows are split into `chunks` pieces of `chunk_len` elements; virtual row
// v = chunk * rows + row (chunk-major, so rows adjacent in memory stay
// adjacent). `softmax_partial` folds each piece into (max, sum of exp) at
// stats[2v], stats[2v + 1]; `softmax_write` folds its row's partials
// into the row's (max, sum) and writes its piece.
// Rows unravel as in softmax.wgsl (`shape`/`in_strides`/`out_strides`).
// Bindings: 0 src (read), 1 stats_in (read; softmax_write only, an alias of
// src for softmax_partial), 2 out (read_write: stats for softmax_partial,
// the output for softmax_write). Override LOG: 0 softmax, 1 log_softmax.

//! include common/nan.wgsl
//! include common/online_softmax.wgsl
//! include common/row_max_sum_tree.wgsl

struct SplitParams {
    rows: u32,
    n: u32,              // length of the axis
    kept_rank: u32,
    offset: u32,         // element offset of the input view
    in_axis_stride: u32,
    out_axis_stride: u32,
    lanes: u32,          // threads per (virtual) row: a power of two in 1..=256
    flags: u32,
    chunks: u32,
    chunk_len: u32,
    shape: array<u32, 6>,
    in_strides: array<u32, 6>,
    out_strides: array<u32, 6>,
}

const FLAG_ROW_FAST: u32 = 1u; // neighbouring threads take neighbouring rows
const WG: u32 = 256u;

var<immediate> p: SplitParams;
override LOG: u32 = 0u;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> stats_in: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> smax: array<f32, 256>;
var<workgroup> ssum: array<f32, 256>;

// Merges (m_b, s_b) into (m, s).
fn merge(m: ptr<function, f32>, s: ptr<function, f32>, m_b: f32, s_b: f32) {
    let m_new = nan_max(*m, m_b);
    *s = *s * rescale(*m, m_new) + s_b * rescale(m_b, m_new);
    *m = m_new;
}

fn finish(x: f32, row_max: f32, total: f32, log_total: f32) -> f32 {
    if LOG == 1u {
        return x - row_max - log_total;
    }
    return exp(x - row_max) / total;
}

// Where this thread sits: (r, t) in the workgroup, its virtual row, and
// that row's input/output bases.
struct Place {
    r: u32,
    t: u32,
    v: u32,
    live: bool,
    row: u32,
    chunk: u32,
    in_base: u32,
    out_base: u32,
}

fn place(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> Place {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let per_group = WG / p.lanes;
    var pl: Place;
    if (p.flags & FLAG_ROW_FAST) != 0u {
        pl.r = lid % per_group;
        pl.t = lid / per_group;
    } else {
        pl.t = lid % p.lanes;
        pl.r = lid / p.lanes;
    }
    pl.v = group * per_group + pl.r;
    pl.live = pl.v < p.rows * p.chunks;
    pl.row = pl.v % p.rows;
    pl.chunk = pl.v / p.rows;
    pl.in_base = p.offset;
    pl.out_base = 0u;
    var rem = pl.row;
    for (var d = i32(p.kept_rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        pl.in_base += k * p.in_strides[d];
        pl.out_base += k * p.out_strides[d];
    }
    return pl;
}

@compute @workgroup_size(256)
fn softmax_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let pl = place(wid, nwg, lid);
    let lanes = p.lanes;
    var m = neg_inf();
    var s = 0.0;
    if pl.live {
        let start = pl.chunk * p.chunk_len;
        let end = min(start + p.chunk_len, p.n);
        let st = p.in_axis_stride;
        let step3 = 3u * lanes;
        var e = start + pl.t;
        loop {
            if e + step3 < end {
                // Four loads in flight before they are folded in.
                let at = pl.in_base + e * st;
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
            } else if e < end {
                online(&m, &s, src[pl.in_base + e * st]);
                e += lanes;
            } else {
                break;
            }
        }
    }
    let stats = fold_row_max_sum(pl.r, pl.t, lanes, m, s);
    if pl.live && pl.t == 0u {
        out[2u * pl.v] = stats.x;
        out[2u * pl.v + 1u] = stats.y;
    }
}

@compute @workgroup_size(256)
fn softmax_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let pl = place(wid, nwg, lid);
    let lanes = p.lanes;
    // The row's (max, sum) from the partials of all its chunks.
    var m = neg_inf();
    var s = 0.0;
    if pl.live {
        for (var c = pl.t; c < p.chunks; c += lanes) {
            let at = 2u * (c * p.rows + pl.row);
            merge(&m, &s, stats_in[at], stats_in[at + 1u]);
        }
    }
    let stats = fold_row_max_sum(pl.r, pl.t, lanes, m, s);
    if pl.live {
        let row_max = stats.x;
        let total = stats.y;
        let log_total = log(total);
        let start = pl.chunk * p.chunk_len;
        let end = min(start + p.chunk_len, p.n);
        let st = p.in_axis_stride;
        let so = p.out_axis_stride;
        let step3 = 3u * lanes;
        var e = start + pl.t;
        loop {
            if e + step3 < end {
                let at = pl.in_base + e * st;
                let ds = lanes * st;
                let x0 = src[at];
                let x1 = src[at + ds];
                let x2 = src[at + 2u * ds];
                let x3 = src[at + 3u * ds];
                let ot = pl.out_base + e * so;
                let dso = lanes * so;
                out[ot] = finish(x0, row_max, total, log_total);
                out[ot + dso] = finish(x1, row_max, total, log_total);
                out[ot + 2u * dso] = finish(x2, row_max, total, log_total);
                out[ot + 3u * dso] = finish(x3, row_max, total, log_total);
                e += 4u * lanes;
            } else if e < end {
                out[pl.out_base + e * so] = finish(src[pl.in_base + e * st], row_max, total, log_total);
                e += lanes;
            } else {
                break;
            }
        }
    }
}
