// Per-sample cross-entropy of logits [N, C] against class indices [N]
// (torch.nn.functional.cross_entropy with reduction='none'), fused into one
// pass per row: an online (max, sum of exp) fold per thread, a
// workgroup-memory tree to combine them, then (only with label smoothing) a
// second tree for sum_c logp, and one thread per row writes
//   loss = -(1 - ls) * logp[t] - ls / C * sum_c logp[c]   (0 if t == ignore_index).
//
// A workgroup of 256 threads serves 256 / lanes rows with `lanes` threads
// per row (lanes: a power of two in 1..=256, chosen from C by the host).
// Logits and target are strided views; the output is contiguous.
// FUSED_MEAN = 1 (one workgroup, every row in blocks of 256 / lanes): the
// 'mean' reduction of kernels/nn/cross_entropy_mean.wgsl in the same pass, out[0]
// the mean over the samples not ignored, out[1] their count and out[2] a
// 1.0 (the seed of `backward()`), summed by the same 256-slot tree as that
// kernel (slot r holding its rows' losses, added in order), so the per-row
// losses are never stored: the small classifiers' loss is one dispatch
// instead of three (the losses, their mean, backward's seed); with
// WITH_GRAD also the loss's gradient (four).
// Bindings: 0 logits (read), 1 target (read, i32), 2 out (read_write), 3 fault.
// Dispatch: one workgroup per 256 / lanes rows, or with FUSED_MEAN one,
// plus with WITH_GRAD one per 256 / lanes_for(C) rows of the gradient.
// A target outside 0..C that is not ignore_index raises fault code 5 and is
// clamped, so the kernel never reads out of bounds.

//! include common/cross_entropy_rows.wgsl

struct CrossEntropyParams {
    rows: u32,
    n: u32,              // classes C
    x_offset: u32,
    x_row_stride: u32,
    x_col_stride: u32,
    t_offset: u32,
    t_stride: u32,
    lanes: u32,
    smoothing: u32,      // f32 bits
    ignore_index: u32,   // i32 bits
    g_offset: u32,       // backward only
    g_stride: u32,       // backward only
    d_offset: u32,       // backward with HAS_DIVISOR: the divisor's element
}

const WG: u32 = 256u;
const FAULT_CROSS_ENTROPY_TARGET: u32 = 5u;

var<immediate> p: CrossEntropyParams;

override FUSED_MEAN: u32 = 0u;
// WITH_GRAD = 1 (with FUSED_MEAN): workgroups 1.. write the logits'
// gradient for the loss's own seed (out[2]'s 1.0) into out[3..] as
// nn/cross_entropy_backward.wgsl would for the mean (1.0 divided by the
// count, which each of them counts itself), while workgroup 0 makes the
// loss: a `loss.backward()` needs no dispatch for it.
override WITH_GRAD: u32 = 0u;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> labels: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>, 4>;

var<workgroup> smax: array<f32, 256>;
var<workgroup> ssum: array<f32, 256>;

// WITH_GRAD: the count of samples not ignored, as workgroup 0 counts them
// (sums of ones: exact), for upstream().
var<private> grad_count: f32;

fn upstream(row: u32) -> f32 {
    let g = 1.0;
    return g / grad_count;
}

fn store_grad(at: u32, d: f32) {
    out[3u + at] = d;
}

// The samples whose target is not ignore_index, counted by the whole
// workgroup; every thread gets the count. Holds barriers.
fn samples_counted(lid: u32) -> f32 {
    var c = 0.0;
    for (var row = lid; row < p.rows; row += WG) {
        if labels[p.t_offset + row * p.t_stride] != bitcast<i32>(p.ignore_index) {
            c += 1.0;
        }
    }
    ssum[lid] = c;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if lid < half {
            ssum[lid] += ssum[lid + half];
        }
        workgroupBarrier();
    }
    let total = ssum[0];
    // Everyone has read it before the rows reuse ssum.
    workgroupBarrier();
    return total;
}

// The loss of `row` (0 for a row past the end or an ignored sample) and
// whether it counts toward the mean (1.0, or 0.0 when ignored), for thread
// t of the `lanes` threads of row slot r; valid in the slot's first
// thread. Holds barriers: call it in uniform control flow.
fn row_loss(row: u32, t: u32, r: u32, lanes: u32) -> vec2<f32> {
    let live = row < p.rows;
    let base = p.x_offset + row * p.x_row_stride;
    let smoothing = bitcast<f32>(p.smoothing);

    // The target first: its load is under way while the row's are.
    var tgt = 0;
    if live {
        tgt = labels[p.t_offset + row * p.t_stride];
    }
    let stats = row_stats(row, t, r, lanes);
    let row_max = stats.x;
    let log_total = log(stats.y);
    let slot = r * lanes + t;

    // sum_c logp[c], only needed with smoothing (and skipped without it so a
    // -inf logit cannot make the unused term NaN). `smoothing` is an
    // immediate, so the barriers below stay in uniform control flow.
    var sum_logp = 0.0;
    if smoothing != 0.0 {
        var acc = 0.0;
        if live {
            for (var e = t; e < p.n; e += lanes) {
                acc += (logits[base + e * p.x_col_stride] - row_max) - log_total;
            }
        }
        // Everyone has read smax/ssum above; ssum is reused for the second tree.
        workgroupBarrier();
        ssum[slot] = acc;
        workgroupBarrier();
        for (var step = lanes / 2u; step > 0u; step /= 2u) {
            if t < step {
                ssum[slot] += ssum[slot + step];
            }
            workgroupBarrier();
        }
        sum_logp = ssum[r * lanes];
    }

    var loss = 0.0;
    var counted = 0.0;
    if live && t == 0u {
        if tgt != bitcast<i32>(p.ignore_index) {
            counted = 1.0;
            var k = u32(0);
            if tgt < 0 || u32(tgt) >= p.n {
                raise_fault(FAULT_CROSS_ENTROPY_TARGET, bitcast<u32>(tgt), p.n);
                k = u32(clamp(tgt, 0, i32(max(p.n, 1u)) - 1));
            } else {
                k = u32(tgt);
            }
            // No classes: nothing to read (the fault above reports it).
            if p.n > 0u {
                let logp_t = (logits[base + k * p.x_col_stride] - row_max) - log_total;
                loss = -(1.0 - smoothing) * logp_t;
                if smoothing != 0.0 {
                    loss -= smoothing / f32(p.n) * sum_logp;
                }
            }
        }
    }
    return vec2<f32>(loss, counted);
}

@compute @workgroup_size(256)
fn cross_entropy_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let per_group = WG / lanes;
    let t = lid % lanes;
    let r = lid / lanes;
    if WITH_GRAD == 1u && group > 0u {
        grad_count = samples_counted(lid);
        grad_rows(group - 1u, lid, lanes_for(p.n));
        return;
    }
    if FUSED_MEAN == 0u {
        let row = group * per_group + r;
        let lc = row_loss(row, t, r, lanes);
        if row < p.rows && t == 0u {
            out[row] = lc.x;
        }
        return;
    }
    // One workgroup: the rows in blocks of per_group, slot r's rows summed
    // in order with Kahan compensation (as cross_entropy_mean.wgsl sums a
    // thread's losses; with one thread per row, the same rows in the same
    // order).
    var sum = 0.0;
    var compensation = 0.0;
    var count = 0.0;
    let blocks = (p.rows + per_group - 1u) / per_group;
    for (var blk = 0u; blk < blocks; blk++) {
        let row = blk * per_group + r;
        let lc = row_loss(row, t, r, lanes);
        if row < p.rows && t == 0u && lc.y != 0.0 {
            let y = lc.x - compensation;
            let total = sum + y;
            compensation = (total - sum) - y;
            sum = total;
            count += 1.0;
        }
        // The next row's trees reuse smax/ssum.
        workgroupBarrier();
    }
    ssum[lid] = 0.0;
    smax[lid] = 0.0;
    workgroupBarrier();
    if t == 0u {
        ssum[r] = sum;
        smax[r] = count;
    }
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if lid < half {
            ssum[lid] += ssum[lid + half];
            smax[lid] += smax[lid + half];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        out[0] = ssum[0] / smax[0];
        out[1] = smax[0];
        // The loss's implicit backward seed, written here so that
        // `backward()` needs no fill dispatch of its own.
        out[2] = 1.0;
    }
}
