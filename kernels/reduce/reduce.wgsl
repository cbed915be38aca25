// Row reductions over strided views: sum, product, max, min, argmax, argmin
// and the sum of squared deviations from a per-row mean (the second pass of var).
//
// The host permutes the input so the kept axes come first and the reduced
// axes last (a view, no copy): output row `row` reduces the `inner` elements
// whose kept coordinates unravel from `row`. Each workgroup of 256 threads
// serves 256 / lanes rows with `lanes` threads per row; every thread folds a
// strided slice of its row, then the `lanes` partials meet in a
// workgroup-memory tree. Long rows may be split into `chunks` pieces of `chunk_len` elements
// (virtual row `v` = chunk `v / rows` of row `v % rows`): that pass writes
// chunk-major partials [chunks, rows] which a second dispatch of this kernel
// reduces (arg ops carry their indices through `aux`).
//
// Bindings: 0 src (read), 1 aux (read: per-row mean for REDUCE_SQDEV, per-row
// shift with FLAG_SHIFT / FLAG_UNSHIFT, partial indices when
// FLAG_IDX_FROM_AUX; otherwise an alias of src, never read),
// 2 out_val (read_write), 3 out_idx (read_write; arg ops only, otherwise an
// alias of out_val that is never written).
// Override OP = wgrad_kernels::families::reduce::Fold::code() (case constants
// REDUCE_* generated from Fold::ALL): sum, max, min, argmax, argmin, sqdev =
// sum of (x - mean[row])^2, prod.

//! include common/nan.wgsl

struct ReduceParams {
    rows: u32,       // output rows (product of the kept dims)
    inner: u32,      // elements per row (product of the reduced dims)
    chunks: u32,     // pieces each row is split into (1 = no split)
    chunk_len: u32,  // elements per piece
    kept_rank: u32,  // shape[0..kept_rank] are kept dims, the rest reduced
    rank: u32,
    offset: u32,     // element offset of the view
    lanes: u32,      // threads per row: a power of two in 1..=256
    flags: u32,
    divisor: f32,    // FLAG_DIVIDE: the result is acc / divisor
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

const FLAG_ROW_FAST: u32 = 1u;      // neighbouring threads take neighbouring rows
const FLAG_IDX_FROM_AUX: u32 = 2u;  // arg ops: element indices come from aux
const FLAG_WRITE_VAL: u32 = 4u;     // arg ops: also write the extreme's value
const FLAG_DIVIDE: u32 = 8u;
// Sums only (var's mean): fold x - aux[row] (the row's first element), and
// add aux[row] back to the final (divided) result. A constant row then sums
// to exactly 0 and its mean is exact, as PyTorch's Welford gives. A split
// row's first pass shifts, its second pass adds back.
const FLAG_SHIFT: u32 = 16u;
const FLAG_UNSHIFT: u32 = 32u;

const WG: u32 = 256u;
const NO_INDEX: u32 = 0xffffffffu;

var<immediate> p: ReduceParams;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> aux: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_val: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_idx: array<i32>;

var<workgroup> sval: array<f32, 256>;
var<workgroup> sidx: array<u32, 256>;

fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

fn identity() -> f32 {
    switch OP {
        case REDUCE_MAX, REDUCE_ARGMAX: { return bitcast<f32>(0xff800000u); } // -inf
        case REDUCE_MIN, REDUCE_ARGMIN: { return bitcast<f32>(0x7f800000u); } // +inf
        case REDUCE_SUM, REDUCE_SQDEV: { return 0.0; }
        case REDUCE_PROD: { return 1.0; }
        // Not a Fold code: NaN, so a missing case cannot pass for another fold.
        default: { return nan(); }
    }
}

fn is_arg() -> bool {
    return OP == REDUCE_ARGMAX || OP == REDUCE_ARGMIN;
}

// NaN-propagating max/min (torch.max semantics), plain sum or product otherwise.
fn combine(a: f32, b: f32) -> f32 {
    switch OP {
        case REDUCE_MAX: { if is_nan(a) || is_nan(b) { return nan(); } return max(a, b); }
        case REDUCE_MIN: { if is_nan(a) || is_nan(b) { return nan(); } return min(a, b); }
        // The arg folds never combine values this way; they keep the sum as before.
        case REDUCE_SUM, REDUCE_SQDEV, REDUCE_ARGMAX, REDUCE_ARGMIN: { return a + b; }
        case REDUCE_PROD: { return a * b; }
        // Not a Fold code: NaN, so a missing case cannot pass for another fold.
        default: { return nan(); }
    }
}

// Whether candidate (vb, ib) beats (va, ia) for argmax/argmin: NaN is the
// extreme, and ties (including NaN against NaN) go to the smaller index, so
// the result is the first extreme whatever order the tree meets them in.
fn arg_better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    let na = is_nan(va);
    let nb = is_nan(vb);
    if na || nb {
        if na && nb { return ib < ia; }
        return nb;
    }
    if vb == va { return ib < ia; }
    if OP == REDUCE_ARGMAX { return vb > va; }
    return vb < va;
}

// Offset, relative to the row's start, of index `o` over the reduced dims
// other than the innermost one (the host always leaves at least one reduced dim).
fn outer_offset(o: u32) -> u32 {
    var rem = o;
    var at = 0u;
    for (var d = i32(p.rank) - 2; d >= i32(p.kept_rank); d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    return at;
}

// Folds element `x`, flat index `e` within its row, stored at offset `at`.
fn fold(acc: ptr<function, f32>, acc_idx: ptr<function, u32>, x: f32, e: u32, at: u32, mean: f32) {
    if is_arg() {
        // A thread meets its elements in increasing index order (the
        // partials of a split row too: they are chunk-major), so a tie keeps
        // the current pick; only a strictly better value or a first NaN wins.
        let a = *acc;
        var wins = *acc_idx == NO_INDEX;
        if !wins && !is_nan(a) {
            if OP == REDUCE_ARGMAX {
                wins = is_nan(x) || x > a;
            } else {
                wins = is_nan(x) || x < a;
            }
        }
        if wins {
            *acc = x;
            if (p.flags & FLAG_IDX_FROM_AUX) != 0u {
                *acc_idx = aux[at];
            } else {
                *acc_idx = e;
            }
        }
    } else if OP == REDUCE_SQDEV {
        let d = x - mean;
        *acc += d * d;
    } else if (p.flags & FLAG_SHIFT) != 0u {
        *acc = combine(*acc, x - mean);
    } else {
        *acc = combine(*acc, x);
    }
}

// acc / divisor, spelling out division by zero (var with n <= correction):
// 0/0 and NaN/0 are NaN, anything else is an infinity of its sign.
fn divide(acc: f32) -> f32 {
    if p.divisor != 0.0 {
        return acc / p.divisor;
    }
    if acc == 0.0 || is_nan(acc) {
        return nan();
    }
    if acc < 0.0 {
        return bitcast<f32>(0xff800000u);
    }
    return bitcast<f32>(0x7f800000u);
}

@compute @workgroup_size(256)
fn reduce_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let per_group = WG / lanes;
    var r: u32;
    var t: u32;
    if (p.flags & FLAG_ROW_FAST) != 0u {
        // Reduced axes are strided but rows are adjacent in memory: let
        // neighbouring threads read neighbouring rows so loads coalesce.
        r = lid % per_group;
        t = lid / per_group;
    } else {
        t = lid % lanes;
        r = lid / lanes;
    }
    let vrow = group * per_group + r;
    let total = p.rows * p.chunks;
    let live = vrow < total;
    let row = vrow % p.rows;

    var acc = identity();
    var acc_idx = NO_INDEX;
    if live {
        let chunk = vrow / p.rows;
        var rem = row;
        var base = p.offset;
        for (var d = i32(p.kept_rank) - 1; d >= 0; d--) {
            let dim = p.shape[d];
            base += (rem % dim) * p.strides[d];
            rem /= dim;
        }
        let start = chunk * p.chunk_len;
        let end = min(start + p.chunk_len, p.inner);
        var mean = 0.0; // SQDEV: the row's mean; FLAG_SHIFT: its shift
        if OP == REDUCE_SQDEV || (p.flags & FLAG_SHIFT) != 0u {
            mean = bitcast<f32>(aux[row]);
        }
        // Walk e = start + t, start + t + lanes, ... keeping (o, i) = e split
        // into the outer reduced index and the innermost one, so the
        // divisions happen only when i wraps past the innermost dim.
        let n_last = p.shape[p.rank - 1u];
        let s_last = p.strides[p.rank - 1u];
        let step3 = 3u * lanes;
        var e = start + t;
        var i = e % n_last;
        var o = e / n_last;
        var ob = base + outer_offset(o);
        loop {
            if e >= end {
                break;
            }
            if e + step3 < end && i + step3 < n_last {
                // Four loads in flight before any is used.
                let a0 = ob + i * s_last;
                let ds = lanes * s_last;
                let x0 = src[a0];
                let x1 = src[a0 + ds];
                let x2 = src[a0 + 2u * ds];
                let x3 = src[a0 + 3u * ds];
                fold(&acc, &acc_idx, x0, e, a0, mean);
                fold(&acc, &acc_idx, x1, e + lanes, a0 + ds, mean);
                fold(&acc, &acc_idx, x2, e + 2u * lanes, a0 + 2u * ds, mean);
                fold(&acc, &acc_idx, x3, e + step3, a0 + 3u * ds, mean);
                e += 4u * lanes;
                i += 4u * lanes;
            } else {
                let a = ob + i * s_last;
                fold(&acc, &acc_idx, src[a], e, a, mean);
                e += lanes;
                i += lanes;
            }
            if i >= n_last {
                o += i / n_last;
                i %= n_last;
                ob = base + outer_offset(o);
            }
        }
    }

    let slot = r * lanes + t;
    sval[slot] = acc;
    sidx[slot] = acc_idx;
    workgroupBarrier();
    for (var s = lanes / 2u; s > 0u; s /= 2u) {
        if t < s {
            let other = slot + s;
            if is_arg() {
                if arg_better(sval[slot], sidx[slot], sval[other], sidx[other]) {
                    sval[slot] = sval[other];
                    sidx[slot] = sidx[other];
                }
            } else {
                sval[slot] = combine(sval[slot], sval[other]);
            }
        }
        workgroupBarrier();
    }

    if live && t == 0u {
        if is_arg() {
            out_idx[vrow] = i32(sidx[slot]);
            if (p.flags & FLAG_WRITE_VAL) != 0u {
                out_val[vrow] = sval[slot];
            }
        } else {
            var v = sval[slot];
            if (p.flags & FLAG_DIVIDE) != 0u {
                v = divide(v);
            }
            if (p.flags & FLAG_UNSHIFT) != 0u {
                v += bitcast<f32>(aux[row]);
            }
            out_val[vrow] = v;
        }
    }
}
