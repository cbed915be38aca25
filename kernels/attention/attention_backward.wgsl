// Fused scaled-dot-product attention, backward (flash-attention style):
// the probabilities are recomputed tile by tile from the forward's
// log-sum-exp, P = exp(score - lse), never stored. With
// delta = rowsum(dout * out) (computed beforehand) and Z the dropout's
// keep mask times its scale:
//   dV = (P Z)^T dO,  dS = P (Z (dO V^T) - delta),  dQ = scale dS K,
//   dK = scale dS^T Q.
// Two entry points, so that no output needs atomics:
// `attention_backward_dq`, one workgroup per (64 query rows, 64 dq
// columns, item) walking the keys, and `attention_backward_dkdv`, one per
// (64 keys, 64 columns of dk and of dv, item) walking the queries.
// Semantics, bindings and tiles: common/attention.wgsl; dq, dk and dv are
// contiguous in the broadcast batch shape (the caller sums broadcast dims).
//
// Bindings: 0 q, 1 k, 2 v, 3 mask, 4 dout (contiguous [items, L, Ev]),
// 5 stats ((lse, delta) per query row), 6 dq / dk, 7 unused alias / dv.
// Immediates: AttentionParams (dq: blocks = ceil(L / 64), chunks =
// ceil(E / 64); dkdv: blocks = ceil(S / 64), chunks = ceil(max(E, Ev) / 64)).

//! include common/attention.wgsl

fn row_lse(item: u32, i: u32) -> f32 {
    if i >= p.q_len {
        return neg_inf();
    }
    return stats[item * p.q_len + i].x;
}

fn row_delta(item: u32, i: u32) -> f32 {
    if i >= p.q_len {
        return 0.0;
    }
    return stats[item * p.q_len + i].y;
}

// The probability of a biased score given its row's log-sum-exp.
fn prob(s: f32, row_lse: f32) -> f32 {
    return select(exp(s - row_lse), 0.0, row_lse == neg_inf());
}

@compute @workgroup_size(256)
fn attention_backward_dq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    thread_ids(local);
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.blocks * p.chunks * p.items {
        return;
    }
    let block = g % p.blocks;
    let chunk = (g / p.blocks) % p.chunks;
    let item = g / (p.blocks * p.chunks);
    let b = item_base(item);
    let i0 = block * 64u;
    let c0 = chunk * 64u;
    let dout_base = item * p.q_len * p.v_dim;
    var kv_end = p.kv_len;
    if (p.flags & FLAG_CAUSAL) != 0u {
        kv_end = min(p.kv_len, i0 + 64u);
    }
    let dropout = (p.flags & FLAG_DROPOUT) != 0u;
    var lse_r: vec4<f32>;
    var delta_r: vec4<f32>;
    for (var r = 0u; r < 4u; r++) {
        lse_r[r] = row_lse(item, i0 + ty * 4u + r);
        delta_r[r] = row_delta(item, i0 + ty * 4u + r);
    }

    var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var j0 = 0u; j0 < kv_end; j0 += 64u) {
        let raw = tile_dot(SRC_Q, b.q, p.q_row, i0, p.q_len, SRC_K, b.k, p.k_row, j0, p.kv_len, p.head_dim);
        let dp_raw = tile_dot(SRC_DOUT, dout_base, p.v_dim, i0, p.q_len, SRC_V, b.v, p.v_row, j0, p.kv_len, p.v_dim);
        var ds: array<vec4<f32>, 4>;
        for (var r = 0u; r < 4u; r++) {
            let i = i0 + ty * 4u + r;
            for (var c = 0u; c < 4u; c++) {
                let j = j0 + tx * 4u + c;
                let pr = prob(biased(raw[r][c], i, j, b.mask), lse_r[r]);
                var dp = dp_raw[r][c];
                if dropout {
                    dp = select(0.0, dp * keep_scale(), keep(item, i, j));
                }
                ds[r][c] = pr * (dp - delta_r[r]);
            }
        }
        workgroupBarrier();
        store_p(ds);
        workgroupBarrier();
        accumulate_p_times(&acc, SRC_K, b.k, p.k_row, j0, p.kv_len, c0, p.head_dim);
    }
    for (var r = 0u; r < 4u; r++) {
        let i = i0 + ty * 4u + r;
        for (var c = 0u; c < 4u; c++) {
            let col = c0 + tx * 4u + c;
            if i < p.q_len && col < p.head_dim {
                out0[(item * p.q_len + i) * p.head_dim + col] = acc[r][c] * p.scale;
            }
        }
    }
}

@compute @workgroup_size(256)
fn attention_backward_dkdv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    thread_ids(local);
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.blocks * p.chunks * p.items {
        return;
    }
    let block = g % p.blocks;
    let chunk = (g / p.blocks) % p.chunks;
    let item = g / (p.blocks * p.chunks);
    let b = item_base(item);
    let j0 = block * 64u;
    let c0 = chunk * 64u;
    let dout_base = item * p.q_len * p.v_dim;
    // Causal: query blocks before the key block see none of its keys.
    var i_start = 0u;
    if (p.flags & FLAG_CAUSAL) != 0u {
        i_start = j0;
    }
    let dropout = (p.flags & FLAG_DROPOUT) != 0u;

    var dk = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var dv = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var i0 = i_start; i0 < p.q_len; i0 += 64u) {
        // Transposed tiles: rows are keys (ty), columns queries (tx).
        let raw = tile_dot(SRC_K, b.k, p.k_row, j0, p.kv_len, SRC_Q, b.q, p.q_row, i0, p.q_len, p.head_dim);
        let dp_raw = tile_dot(SRC_V, b.v, p.v_row, j0, p.kv_len, SRC_DOUT, dout_base, p.v_dim, i0, p.q_len, p.v_dim);
        var pd: array<vec4<f32>, 4>;
        var ds: array<vec4<f32>, 4>;
        for (var c = 0u; c < 4u; c++) {
            let i = i0 + tx * 4u + c;
            let i_lse = row_lse(item, i);
            let i_delta = row_delta(item, i);
            for (var r = 0u; r < 4u; r++) {
                let j = j0 + ty * 4u + r;
                let pr = prob(biased(raw[r][c], i, j, b.mask), i_lse);
                var kept = pr;
                var dp = dp_raw[r][c];
                if dropout {
                    let z = keep(item, i, j);
                    kept = select(0.0, pr * keep_scale(), z);
                    dp = select(0.0, dp * keep_scale(), z);
                }
                pd[r][c] = kept;
                ds[r][c] = pr * (dp - i_delta);
            }
        }
        if c0 < p.v_dim {
            workgroupBarrier();
            store_p(pd);
            workgroupBarrier();
            accumulate_p_times(&dv, SRC_DOUT, dout_base, p.v_dim, i0, p.q_len, c0, p.v_dim);
        }
        if c0 < p.head_dim {
            workgroupBarrier();
            store_p(ds);
            workgroupBarrier();
            accumulate_p_times(&dk, SRC_Q, b.q, p.q_row, i0, p.q_len, c0, p.head_dim);
        }
    }
    for (var r = 0u; r < 4u; r++) {
        let j = j0 + ty * 4u + r;
        for (var c = 0u; c < 4u; c++) {
            let col = c0 + tx * 4u + c;
            if j < p.kv_len && col < p.head_dim {
                out0[(item * p.kv_len + j) * p.head_dim + col] = dk[r][c] * p.scale;
            }
            if j < p.kv_len && col < p.v_dim {
                out1[(item * p.kv_len + j) * p.v_dim + col] = dv[r][c];
            }
        }
    }
}
