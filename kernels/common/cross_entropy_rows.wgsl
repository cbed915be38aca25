// What the cross-entropy kernels share (nn/cross_entropy.wgsl and
// nn/cross_entropy_backward.wgsl): a row's (max, sum of exp) folded by the
// `lanes` threads of its slot, and the logits' gradient of one
// workgroup's rows,
//   dlogits[n, c] = g_n * (softmax[n, c] - (1 - ls) * [c == t_n] - ls / C)
// (an all-zero row where t_n == ignore_index), written the same way by
// the backward kernel and by the loss kernel's WITH_GRAD workgroups, so
// both give the same bits.
//
// Needs from the including kernel: `p` (CrossEntropyParams), the
// `logits` and `labels` bindings, WG, FAULT_CROSS_ENTROPY_TARGET, the
// workgroup arrays smax/ssum (256 each), and
//   fn upstream(row: u32) -> f32      the row's upstream gradient g_n
//   fn store_grad(at: u32, d: f32)    element `at` of the [N, C] gradient

//! include common/nan.wgsl
//! include common/fault.wgsl
//! include common/logits_max_sum.wgsl
//! include common/row_max_sum_tree.wgsl

// Threads per row for C classes: C rounded up to a power of two, at most
// the workgroup (the host's `lanes_for`).
fn lanes_for(classes: u32) -> u32 {
    let c = max(classes, 1u);
    return min(1u << (32u - countLeadingZeros(c - 1u)), WG);
}

// The row's max and its sum of exp(logit - max), folded by the `lanes`
// threads of row slot r (thread t); every thread of the slot gets them.
// Holds barriers: call it in uniform control flow.
fn row_stats(row: u32, t: u32, r: u32, lanes: u32) -> vec2<f32> {
    var m = bitcast<f32>(0xff800000u); // -inf
    var s = 0.0;
    if row < p.rows {
        let ms = logits_max_sum(p.x_offset + row * p.x_row_stride, t, lanes);
        m = ms.x;
        s = ms.y;
    }
    return fold_row_max_sum(r, t, lanes, m, s);
}

// The gradient of rows group * (WG / lanes) .. of the next WG / lanes,
// `lanes` threads per row. Holds barriers: call it in uniform control flow.
fn grad_rows(group: u32, lid: u32, lanes: u32) {
    let per_group = WG / lanes;
    let t = lid % lanes;
    let r = lid / lanes;
    let row = group * per_group + r;
    let live = row < p.rows;
    // The target and the upstream gradient first: their loads are under
    // way while the row's are.
    var tgt = 0;
    var g = 0.0;
    if live {
        tgt = labels[p.t_offset + row * p.t_stride];
        g = upstream(row);
    }
    let stats = row_stats(row, t, r, lanes);
    if live {
        let base = p.x_offset + row * p.x_row_stride;
        let smoothing = bitcast<f32>(p.smoothing);
        let uniform_part = smoothing / f32(max(p.n, 1u));
        let ignored = tgt == bitcast<i32>(p.ignore_index);
        var k = u32(0);
        if !ignored && (tgt < 0 || u32(tgt) >= p.n) {
            // Every thread of the row sees the same target; the stores agree.
            raise_fault(FAULT_CROSS_ENTROPY_TARGET, bitcast<u32>(tgt), p.n);
            k = u32(clamp(tgt, 0, i32(max(p.n, 1u)) - 1));
        } else if !ignored {
            k = u32(tgt);
        }
        let out_base = row * p.n;
        for (var e = t; e < p.n; e += lanes) {
            var d = 0.0;
            if !ignored {
                let x = logits[base + e * p.x_col_stride];
                var hit = 0.0;
                if e == k {
                    hit = 1.0 - smoothing;
                }
                d = g * (exp(x - stats.x) / stats.y - hit - uniform_part);
            }
            store_grad(out_base + e, d);
        }
    }
}
