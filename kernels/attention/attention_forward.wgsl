// Fused scaled-dot-product attention, forward, in the flash-attention
// manner: one workgroup per (64 query rows, 64 value columns, batch item)
// walks the keys 64 at a time, keeping a running row maximum and sum of
// exponentials (online softmax), so no L x S score matrix is ever stored.
// It writes the output and, from the first column chunk, each row's
// log-sum-exp (-inf for a row with every key masked), which the backward
// kernels use to recompute the probabilities. Semantics, bindings and
// tiles: common/attention.wgsl.
//
// Bindings: 0 q, 1 k, 2 v, 3 mask, 4 dout and 5 stats (unused aliases),
// 6 out (written), 7 lse (written).
// Immediates: AttentionParams (blocks = ceil(L / 64), chunks = ceil(Ev / 64)).

//! include common/attention.wgsl

// Writes row i of the output chunk (columns col..col+4 and col+32..col+36)
// scaled by inv.
fn write_out(item: u32, i: u32, col: u32, x: vec4<f32>, y: vec4<f32>, inv: f32) {
    if i >= p.q_len {
        return;
    }
    let base = dense_row(item, i, p.q_len, p.v_dim);
    for (var c = 0u; c < 4u; c++) {
        if col + c < p.v_dim {
            out0[base + col + c] = x[c] * inv;
        }
        if col + 32u + c < p.v_dim {
            out0[base + col + 32u + c] = y[c] * inv;
        }
    }
}

// exp(s - m) over a row of 4, 0 where the row is dead (max -inf).
fn expd(s: vec4<f32>, m: f32, live: bool) -> vec4<f32> {
    return select(vec4<f32>(0.0), exp(s - m), live);
}

@compute @workgroup_size(128)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    thread_ids(local);
    let t = tile_of(wid, nwg, true);
    if t.w == 0u {
        return;
    }
    let item = t.z;
    let b = item_base(item);
    let i0 = t.x * 64u;
    let col0 = t.y * 64u;
    let kv_end = keys_end(i0);
    let dropout = (p.flags & FLAG_DROPOUT) != 0u;
    let qm = Mat(SRC_Q, b.q, p.q_row, p.q_len, p.head_dim);
    let km = Mat(SRC_K, b.k, p.k_row, p.kv_len, p.head_dim);
    let vm = Mat(SRC_V, b.v, p.v_row, p.kv_len, p.v_dim);
    let row = i0 + ty * 4u;

    var m = vec4<f32>(neg_inf());
    var l = vec4<f32>(0.0);
    // The output rows: aR columns col0+tx*4.., gR columns col0+32+tx*4...
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var g0 = vec4<f32>(0.0);
    var g1 = vec4<f32>(0.0);
    var g2 = vec4<f32>(0.0);
    var g3 = vec4<f32>(0.0);
    for (var j0 = 0u; j0 < kv_end; j0 += 64u) {
        dot_loop(qm, i0, km, j0, p.head_dim, UNROLL_FULL);
        pv_prefetch(vm, j0, col0);
        let full = !tile_needs_mask(i0, j0);
        let col = j0 + tx * 4u;
        let s0 = biased4(c0, row, col, b.mask, full);
        let s1 = biased4(c1, row + 1u, col, b.mask, full);
        let s2 = biased4(c2, row + 2u, col, b.mask, full);
        let s3 = biased4(c3, row + 3u, col, b.mask, full);
        let h0 = biased4(e0, row, col + 32u, b.mask, full);
        let h1 = biased4(e1, row + 1u, col + 32u, b.mask, full);
        let h2 = biased4(e2, row + 2u, col + 32u, b.mask, full);
        let h3 = biased4(e3, row + 3u, col + 32u, b.mask, full);
        // The row_reduce barrier also ends the dot loop's reads of the
        // memory the P tile overwrites.
        let lm = vec4<f32>(hmax(s0), hmax(s1), hmax(s2), hmax(s3));
        let hm = vec4<f32>(hmax(h0), hmax(h1), hmax(h2), hmax(h3));
        let bm = row_reduce(select(lm, hm, hm > lm | is_nan4(hm)), true);
        let m_new = select(m, bm, bm > m | is_nan4(bm));
        let live = m_new != vec4<f32>(neg_inf());
        let alpha = select(vec4<f32>(1.0), exp(m - m_new), live);
        m = m_new;
        var p0 = expd(s0, m_new.x, live.x);
        var p1 = expd(s1, m_new.y, live.y);
        var p2 = expd(s2, m_new.z, live.z);
        var p3 = expd(s3, m_new.w, live.w);
        var q0 = expd(h0, m_new.x, live.x);
        var q1 = expd(h1, m_new.y, live.y);
        var q2 = expd(h2, m_new.z, live.z);
        var q3 = expd(h3, m_new.w, live.w);
        let one = vec4<f32>(1.0);
        l = l * alpha + vec4<f32>(dot(p0 + q0, one), dot(p1 + q1, one), dot(p2 + q2, one), dot(p3 + q3, one));
        if dropout {
            p0 = dropped4(p0, item, row, col);
            p1 = dropped4(p1, item, row + 1u, col);
            p2 = dropped4(p2, item, row + 2u, col);
            p3 = dropped4(p3, item, row + 3u, col);
            q0 = dropped4(q0, item, row, col + 32u);
            q1 = dropped4(q1, item, row + 1u, col + 32u);
            q2 = dropped4(q2, item, row + 2u, col + 32u);
            q3 = dropped4(q3, item, row + 3u, col + 32u);
        }
        store_p(p0, p1, p2, p3, q0, q1, q2, q3);
        c0 = a0 * alpha.x;
        c1 = a1 * alpha.y;
        c2 = a2 * alpha.z;
        c3 = a3 * alpha.w;
        e0 = g0 * alpha.x;
        e1 = g1 * alpha.y;
        e2 = g2 * alpha.z;
        e3 = g3 * alpha.w;
        pv_loop(vm, j0, col0, UNROLL_FULL);
        a0 = c0;
        a1 = c1;
        a2 = c2;
        a3 = c3;
        g0 = e0;
        g1 = e1;
        g2 = e2;
        g3 = e3;
    }
    let total = row_reduce(l, false);
    // A row with no key left sums to 0 and gives zeros (safe softmax).
    let empty = total == vec4<f32>(0.0);
    let inv = select(1.0 / total, vec4<f32>(0.0), empty);
    let col = col0 + tx * 4u;
    write_out(item, row, col, a0, g0, inv.x);
    write_out(item, row + 1u, col, a1, g1, inv.y);
    write_out(item, row + 2u, col, a2, g2, inv.z);
    write_out(item, row + 3u, col, a3, g3, inv.w);
    if t.y == 0u && tx == 0u {
        let lse = select(m + log(total), vec4<f32>(neg_inf()), empty);
        for (var r = 0u; r < 4u; r++) {
            if row + r < p.q_len {
                out1[item * p.q_len + row + r] = lse[r];
            }
        }
    }
}
