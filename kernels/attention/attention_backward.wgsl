// Fused scaled-dot-product attention, backward (flash-attention style):
// the probabilities are recomputed tile by tile from the forward's
// log-sum-exp, P = exp(score - lse), never stored. With
// delta = rowsum(dout * out) (computed beforehand) and Z the dropout's
// keep mask times its scale:
//   dV = (P Z)^T dO,  dS = P (Z (dO V^T) - delta),  dQ = scale dS K,
//   dK = scale dS^T Q.
// Two passes, so that no output needs atomics: `attention_backward_dkdv`,
// one workgroup per (64 keys, 64 columns of dk and of dv, item) walking
// the queries, and a dq pass, one per (64 query rows, 64 dq columns,
// item) walking the keys: `attention_backward_dq_saved`, which multiplies
// the dS tiles the dk/dv pass saved (FLAG_SAVE_DS) by K, or, where those
// tiles would take too much memory, `attention_backward_dq`, which
// recomputes them (three tile products per tile pair instead of one).
// Semantics, bindings and tiles: common/attention.wgsl; dq, dk and dv are
// dense in the broadcast batch shape (see ROWS_OUTER; the caller sums
// broadcast dims).
//
// Bindings: 0 q, 1 k, 2 v, 3 mask, 4 dout (dense [items, L, Ev]),
// 5 stats ((lse, delta) per query row, from `attention_backward_stats`),
// 6 dq / dk, 7 unused alias / dv.
// Immediates: AttentionParams (dq: blocks = ceil(L / 64), chunks =
// ceil(E / 64); dkdv: blocks = ceil(S / 64), chunks = ceil(max(E, Ev) / 64)).

//! include common/attention.wgsl

// Per query row, (log-sum-exp, delta = dout . out): the `stats` the other
// passes read, interleaved as vec2s, in one dispatch (it was a product, a
// row sum and two copies). One workgroup per 8 rows of an item (blocks =
// ceil(L / 8)), 16 threads per row reading neighbouring columns, four
// independent loads in flight per thread, the 16 partial sums met in
// `stats_partial` (this entry point does not touch `sm`, so it takes
// 512 bytes of workgroup memory, not 27 KiB).
// Bindings: 0 the forward's output (dense [items, L, Ev]), 1 lse
// ([items, L]), 4 dout (dense), 6 stats (written, [items, L, 2]);
// the rest aliases.
const STATS_LANES: u32 = 16u;
var<workgroup> stats_partial: array<f32, 128>;

@compute @workgroup_size(128)
fn attention_backward_stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let t = tile_of(wid, nwg, false);
    if t.w == 0u {
        return;
    }
    let lane = local % STATS_LANES;
    let i = t.x * (128u / STATS_LANES) + local / STATS_LANES;
    let row = t.z * p.q_len + i;
    var s = vec4<f32>(0.0);
    if i < p.q_len {
        let base = dense_row(t.z, i, p.q_len, p.v_dim);
        let step = 4u * STATS_LANES;
        for (var c = lane; c < p.v_dim; c += step) {
            let c1 = min(c + STATS_LANES, p.v_dim - 1u);
            let c2 = min(c + 2u * STATS_LANES, p.v_dim - 1u);
            let c3 = min(c + 3u * STATS_LANES, p.v_dim - 1u);
            // Clamped columns past the row's end read a valid element and
            // are masked out of the sum.
            let x = vec4<f32>(dout[base + c], dout[base + c1], dout[base + c2], dout[base + c3]);
            let y = vec4<f32>(q[base + c], q[base + c1], q[base + c2], q[base + c3]);
            let keep = vec4<bool>(true, c + STATS_LANES < p.v_dim, c + 2u * STATS_LANES < p.v_dim, c + 3u * STATS_LANES < p.v_dim);
            s += select(vec4<f32>(0.0), x * y, keep);
        }
    }
    stats_partial[local] = (s.x + s.y) + (s.z + s.w);
    workgroupBarrier();
    if lane == 0u && i < p.q_len {
        var total = 0.0;
        for (var l = 0u; l < STATS_LANES; l++) {
            total += stats_partial[local + l];
        }
        out0[2u * row] = k[row];
        out0[2u * row + 1u] = total;
    }
}

// The dk/dv pass holds twice the accumulators (dk and dv) through its pv
// loops: their steps are loops (unrolled by 4), which costs fewer
// registers; its dot loops run before those accumulators matter and are
// unrolled fully (H100: 1185 us all by 4, 1163 us so, 1277 us all full).
const DKDV_STYLE: u32 = UNROLL_4;

// (log-sum-exp, delta) of query row i; (-inf, 0) past the last row.
fn row_stats(item: u32, i: u32) -> vec2<f32> {
    if i >= p.q_len {
        return vec2<f32>(neg_inf(), 0.0);
    }
    return stats[item * p.q_len + i];
}

// The probabilities of biased scores given their rows' log-sum-exps.
fn prob4(s: vec4<f32>, lse: vec4<f32>) -> vec4<f32> {
    return select(exp(s - lse), vec4<f32>(0.0), lse == vec4<f32>(neg_inf()));
}

// Writes x * scale to columns col..col+4 and y * scale to col+32..col+36
// of row `row` of a dense [items, rows, width] output (out0 or out1; see
// ROWS_OUTER).
// With GRADS_AS_INPUTS the row goes where row `row` of input `src`
// (SRC_Q, SRC_K or SRC_V) is read, in out0.
fn write_grad(src: u32, to1: bool, off: u32, item: u32, row: u32, rows: u32, width: u32, col: u32, x: vec4<f32>, y: vec4<f32>, scale: f32) {
    if row >= rows {
        return;
    }
    var base = off + dense_row(item, row, rows, width);
    if GRADS_AS_INPUTS == 1u {
        let b = item_base(item);
        switch src {
            case SRC_Q: { base = b.q + row * p.q_row; }
            case SRC_K: { base = b.k + row * p.k_row; }
            case SRC_V, default: { base = b.v + row * p.v_row; }
        }
    }
    for (var c = 0u; c < 4u; c++) {
        let lo = col + c;
        let hi = col + 32u + c;
        if to1 {
            if lo < width {
                out1[base + lo] = x[c] * scale;
            }
            if hi < width {
                out1[base + hi] = y[c] * scale;
            }
        } else {
            if lo < width {
                out0[base + lo] = x[c] * scale;
            }
            if hi < width {
                out0[base + hi] = y[c] * scale;
            }
        }
    }
}

// Score gradients of query i, keys j..j+4: P (dP Z - delta).
fn ds_row(raw: vec4<f32>, dp_raw: vec4<f32>, item: u32, i: u32, j: u32, mask_base: u32,
          full: bool, lse: f32, delta: f32, dropout: bool) -> vec4<f32> {
    var dp = dp_raw;
    if dropout {
        dp = dropped4(dp, item, i, j);
    }
    return prob4(biased4(raw, i, j, mask_base, full), vec4<f32>(lse)) * (dp - delta);
}

@compute @workgroup_size(128)
fn attention_backward_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
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
    let dom = Mat(SRC_DOUT, dense_row(item, 0u, p.q_len, p.v_dim), dense_stride(p.v_dim), p.q_len, p.v_dim);
    let row = i0 + ty * 4u;
    let st0 = row_stats(item, row);
    let st1 = row_stats(item, row + 1u);
    let st2 = row_stats(item, row + 2u);
    let st3 = row_stats(item, row + 3u);
    let lse = vec4<f32>(st0.x, st1.x, st2.x, st3.x);
    let delta = vec4<f32>(st0.y, st1.y, st2.y, st3.y);

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
        let s0 = c0;
        let s1 = c1;
        let s2 = c2;
        let s3 = c3;
        let h0 = e0;
        let h1 = e1;
        let h2 = e2;
        let h3 = e3;
        dot_loop(dom, i0, vm, j0, p.v_dim, UNROLL_FULL);
        pv_prefetch(km, j0, col0);
        let full = !tile_needs_mask(i0, j0);
        let col = j0 + tx * 4u;
        let x0 = ds_row(s0, c0, item, row, col, b.mask, full, lse.x, delta.x, dropout);
        let x1 = ds_row(s1, c1, item, row + 1u, col, b.mask, full, lse.y, delta.y, dropout);
        let x2 = ds_row(s2, c2, item, row + 2u, col, b.mask, full, lse.z, delta.z, dropout);
        let x3 = ds_row(s3, c3, item, row + 3u, col, b.mask, full, lse.w, delta.w, dropout);
        let y0 = ds_row(h0, e0, item, row, col + 32u, b.mask, full, lse.x, delta.x, dropout);
        let y1 = ds_row(h1, e1, item, row + 1u, col + 32u, b.mask, full, lse.y, delta.y, dropout);
        let y2 = ds_row(h2, e2, item, row + 2u, col + 32u, b.mask, full, lse.z, delta.z, dropout);
        let y3 = ds_row(h3, e3, item, row + 3u, col + 32u, b.mask, full, lse.w, delta.w, dropout);
        // The dot loop's reads end before the P tile overwrites them.
        workgroupBarrier();
        store_p(x0, x1, x2, x3, y0, y1, y2, y3);
        c0 = a0;
        c1 = a1;
        c2 = a2;
        c3 = a3;
        e0 = g0;
        e1 = g1;
        e2 = g2;
        e3 = g3;
        pv_loop(km, j0, col0, UNROLL_FULL);
        a0 = c0;
        a1 = c1;
        a2 = c2;
        a3 = c3;
        g0 = e0;
        g1 = e1;
        g2 = e2;
        g3 = e3;
    }
    let col = col0 + tx * 4u;
    write_grad(SRC_Q, false, 0u, item, row, p.q_len, p.head_dim, col, a0, g0, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 1u, p.q_len, p.head_dim, col, a1, g1, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 2u, p.q_len, p.head_dim, col, a2, g2, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 3u, p.q_len, p.head_dim, col, a3, g3, p.scale);
}

// First element of the saved score-gradient tile (query block ib, key
// block jb) of an item: 4096 floats per tile; under a causal mask only
// the tiles with jb <= ib exist, numbered ib (ib + 1) / 2 + jb.
fn ds_tile(item: u32, ib: u32, jb: u32) -> u32 {
    let bl = (p.q_len + 63u) / 64u;
    if (p.flags & FLAG_CAUSAL) != 0u {
        return ((item * (bl * (bl + 1u) / 2u)) + ib * (ib + 1u) / 2u + jb) * 4096u;
    }
    let bs = (p.kv_len + 63u) / 64u;
    return ((item * bl + ib) * bs + jb) * 4096u;
}

fn put_ds4(at: u32, x: vec4<f32>) {
    out1[at] = x.x;
    out1[at + 1u] = x.y;
    out1[at + 2u] = x.z;
    out1[at + 3u] = x.w;
}

// The dq pass over the score gradients the dk/dv pass saved (FLAG_SAVE_DS;
// bindings: 1 k, 5 the saved tiles, read as vec2s, 6 dq): dq = scale dS K, one tile
// product per tile pair instead of three.
@compute @workgroup_size(128)
fn attention_backward_dq_saved(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
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
    let km = Mat(SRC_K, b.k, p.k_row, p.kv_len, p.head_dim);
    let row = i0 + ty * 4u;
    zero_acc();
    for (var j0 = 0u; j0 < kv_end; j0 += 64u) {
        pv_prefetch(km, j0, col0);
        // Fetched here, not a key block ahead (H100: 554 vs 640 us).
        let base = ds_tile(item, t.x, j0 / 64u);
        var x: array<vec4<f32>, 8>;
        for (var n = 0u; n < 8u; n++) {
            let at = (base + (lid + 128u * n) * 4u) / 2u;
            x[n] = vec4<f32>(stats[at], stats[at + 1u]);
        }
        // The previous pv loop's reads of the P tile end here.
        workgroupBarrier();
        for (var n = 0u; n < 8u; n++) {
            let e = lid + 128u * n;
            sm[p_index(e / 16u, e % 16u)] = x[n];
        }
        // Steps unrolled by 4 (H100: 536 us, fully 550 us).
        pv_loop(km, j0, col0, UNROLL_4);
    }
    let col = col0 + tx * 4u;
    write_grad(SRC_Q, false, 0u, item, row, p.q_len, p.head_dim, col, c0, e0, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 1u, p.q_len, p.head_dim, col, c1, e1, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 2u, p.q_len, p.head_dim, col, c2, e2, p.scale);
    write_grad(SRC_Q, false, 0u, item, row + 3u, p.q_len, p.head_dim, col, c3, e3, p.scale);
}

// Key j, queries i..i+4: the gradient terms of a row of the transposed
// tile, as the columns of a mat2x4: (kept probability, score gradient).
fn dkdv_terms(raw: vec4<f32>, dp_raw: vec4<f32>, item: u32, i: u32, j: u32, mask_base: u32,
              full: bool, lse: vec4<f32>, delta: vec4<f32>, dropout: bool) -> mat2x4<f32> {
    let pr = prob4(biased4_col(raw, i, j, mask_base, full), lse);
    var kept = pr;
    var dp = dp_raw;
    if dropout {
        let z = vec4<bool>(keep(item, i, j), keep(item, i + 1u, j), keep(item, i + 2u, j), keep(item, i + 3u, j));
        kept = select(vec4<f32>(0.0), pr * keep_scale(), z);
        dp = select(vec4<f32>(0.0), dp * keep_scale(), z);
    }
    return mat2x4<f32>(kept, pr * (dp - delta));
}

// (log-sum-exp, delta) of queries i..i+4 as the columns of a mat2x4.
fn col_stats(item: u32, i: u32) -> mat2x4<f32> {
    let s0 = row_stats(item, i);
    let s1 = row_stats(item, i + 1u);
    let s2 = row_stats(item, i + 2u);
    let s3 = row_stats(item, i + 3u);
    return mat2x4<f32>(vec4<f32>(s0.x, s1.x, s2.x, s3.x), vec4<f32>(s0.y, s1.y, s2.y, s3.y));
}

@compute @workgroup_size(128)
fn attention_backward_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    thread_ids(local);
    let t = tile_of(wid, nwg, false);
    if t.w == 0u {
        return;
    }
    let item = t.z;
    let b = item_base(item);
    let j0 = t.x * 64u;
    let col0 = t.y * 64u;
    // Causal: query blocks before the key block see none of its keys.
    var i_start = 0u;
    if (p.flags & FLAG_CAUSAL) != 0u {
        i_start = j0;
    }
    let dropout = (p.flags & FLAG_DROPOUT) != 0u;
    let qm = Mat(SRC_Q, b.q, p.q_row, p.q_len, p.head_dim);
    let km = Mat(SRC_K, b.k, p.k_row, p.kv_len, p.head_dim);
    let vm = Mat(SRC_V, b.v, p.v_row, p.kv_len, p.v_dim);
    let dom = Mat(SRC_DOUT, dense_row(item, 0u, p.q_len, p.v_dim), dense_stride(p.v_dim), p.q_len, p.v_dim);
    let key = j0 + ty * 4u;
    let save_ds = (p.flags & FLAG_SAVE_DS) != 0u;

    // dk rows (kR: columns col0+tx*4.., lR: col0+32+tx*4..), dv rows (vR, wR).
    var k0 = vec4<f32>(0.0);
    var k1 = vec4<f32>(0.0);
    var k2 = vec4<f32>(0.0);
    var k3 = vec4<f32>(0.0);
    var l0 = vec4<f32>(0.0);
    var l1 = vec4<f32>(0.0);
    var l2 = vec4<f32>(0.0);
    var l3 = vec4<f32>(0.0);
    var v0 = vec4<f32>(0.0);
    var v1 = vec4<f32>(0.0);
    var v2 = vec4<f32>(0.0);
    var v3 = vec4<f32>(0.0);
    var w0 = vec4<f32>(0.0);
    var w1 = vec4<f32>(0.0);
    var w2 = vec4<f32>(0.0);
    var w3 = vec4<f32>(0.0);
    for (var i0 = i_start; i0 < p.q_len; i0 += 64u) {
        // Transposed tiles: rows are keys (ty), columns queries (tx).
        dot_loop(km, j0, qm, i0, p.head_dim, UNROLL_FULL);
        let s0 = c0;
        let s1 = c1;
        let s2 = c2;
        let s3 = c3;
        let h0 = e0;
        let h1 = e1;
        let h2 = e2;
        let h3 = e3;
        dot_loop(vm, j0, dom, i0, p.v_dim, UNROLL_FULL);
        let full = !tile_needs_mask(i0, j0);
        let i = i0 + tx * 4u;
        let lo = col_stats(item, i);
        let hi = col_stats(item, i + 32u);
        let t0 = dkdv_terms(s0, c0, item, i, key, b.mask, full, lo[0], lo[1], dropout);
        let t1 = dkdv_terms(s1, c1, item, i, key + 1u, b.mask, full, lo[0], lo[1], dropout);
        let t2 = dkdv_terms(s2, c2, item, i, key + 2u, b.mask, full, lo[0], lo[1], dropout);
        let t3 = dkdv_terms(s3, c3, item, i, key + 3u, b.mask, full, lo[0], lo[1], dropout);
        let u0 = dkdv_terms(h0, e0, item, i + 32u, key, b.mask, full, hi[0], hi[1], dropout);
        let u1 = dkdv_terms(h1, e1, item, i + 32u, key + 1u, b.mask, full, hi[0], hi[1], dropout);
        let u2 = dkdv_terms(h2, e2, item, i + 32u, key + 2u, b.mask, full, hi[0], hi[1], dropout);
        let u3 = dkdv_terms(h3, e3, item, i + 32u, key + 3u, b.mask, full, hi[0], hi[1], dropout);
        if col0 < p.v_dim {
            pv_prefetch(dom, i0, col0);
            // Ends the previous loop's reads of the P tile's memory.
            workgroupBarrier();
            store_p(t0[0], t1[0], t2[0], t3[0], u0[0], u1[0], u2[0], u3[0]);
            c0 = v0;
            c1 = v1;
            c2 = v2;
            c3 = v3;
            e0 = w0;
            e1 = w1;
            e2 = w2;
            e3 = w3;
            pv_loop(dom, i0, col0, DKDV_STYLE);
            v0 = c0;
            v1 = c1;
            v2 = c2;
            v3 = c3;
            w0 = e0;
            w1 = e1;
            w2 = e2;
            w3 = e3;
        }
        if col0 < p.head_dim {
            pv_prefetch(qm, i0, col0);
            workgroupBarrier();
            store_p(t0[1], t1[1], t2[1], t3[1], u0[1], u1[1], u2[1], u3[1]);
            if save_ds && t.y == 0u {
                // Tile (i0, j0) as [key][query]: what the dq pass's P tile holds.
                let at = ds_tile(item, i0 / 64u, t.x) + ty * 256u + tx * 4u;
                put_ds4(at, t0[1]);
                put_ds4(at + 64u, t1[1]);
                put_ds4(at + 128u, t2[1]);
                put_ds4(at + 192u, t3[1]);
                put_ds4(at + 32u, u0[1]);
                put_ds4(at + 96u, u1[1]);
                put_ds4(at + 160u, u2[1]);
                put_ds4(at + 224u, u3[1]);
            }
            c0 = k0;
            c1 = k1;
            c2 = k2;
            c3 = k3;
            e0 = l0;
            e1 = l1;
            e2 = l2;
            e3 = l3;
            pv_loop(qm, i0, col0, DKDV_STYLE);
            k0 = c0;
            k1 = c1;
            k2 = c2;
            k3 = c3;
            l0 = e0;
            l1 = e1;
            l2 = e2;
            l3 = e3;
        }
    }
    let col = col0 + tx * 4u;
    write_grad(SRC_K, false, 0u, item, key, p.kv_len, p.head_dim, col, k0, l0, p.scale);
    write_grad(SRC_K, false, 0u, item, key + 1u, p.kv_len, p.head_dim, col, k1, l1, p.scale);
    write_grad(SRC_K, false, 0u, item, key + 2u, p.kv_len, p.head_dim, col, k2, l2, p.scale);
    write_grad(SRC_K, false, 0u, item, key + 3u, p.kv_len, p.head_dim, col, k3, l3, p.scale);
    // Saving dS: dv goes after dk in out0 (out1 holds the dS tiles); as
    // the inputs: where v is read, in out0.
    let to1 = !save_ds && GRADS_AS_INPUTS == 0u;
    let dv_off = select(0u, p.items * p.kv_len * p.head_dim, save_ds);
    write_grad(SRC_V, to1, dv_off, item, key, p.kv_len, p.v_dim, col, v0, w0, 1.0);
    write_grad(SRC_V, to1, dv_off, item, key + 1u, p.kv_len, p.v_dim, col, v1, w1, 1.0);
    write_grad(SRC_V, to1, dv_off, item, key + 2u, p.kv_len, p.v_dim, col, v2, w2, 1.0);
    write_grad(SRC_V, to1, dv_off, item, key + 3u, p.kv_len, p.v_dim, col, v3, w3, 1.0);
}
