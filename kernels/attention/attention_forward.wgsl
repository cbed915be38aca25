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

@compute @workgroup_size(256)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
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
    var kv_end = p.kv_len;
    if (p.flags & FLAG_CAUSAL) != 0u {
        kv_end = min(p.kv_len, i0 + 64u);
    }
    let dropout = (p.flags & FLAG_DROPOUT) != 0u;

    var m = vec4<f32>(neg_inf());
    var l = vec4<f32>(0.0);
    var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var j0 = 0u; j0 < kv_end; j0 += 64u) {
        let raw = tile_dot(SRC_Q, b.q, p.q_row, i0, p.q_len, SRC_K, b.k, p.k_row, j0, p.kv_len, p.head_dim);
        var s: array<vec4<f32>, 4>;
        var local_max = vec4<f32>(neg_inf());
        for (var r = 0u; r < 4u; r++) {
            for (var c = 0u; c < 4u; c++) {
                let x = biased(raw[r][c], i0 + ty * 4u + r, j0 + tx * 4u + c, b.mask);
                s[r][c] = x;
                local_max[r] = select(local_max[r], x, x > local_max[r] || is_nan(x));
            }
        }
        let block_max = row_max(local_max);
        var pt: array<vec4<f32>, 4>;
        for (var r = 0u; r < 4u; r++) {
            let bm = block_max[r];
            let m_new = select(m[r], bm, bm > m[r] || is_nan(bm));
            let live = m_new != neg_inf();
            let alpha = select(1.0, exp(m[r] - m_new), live);
            m[r] = m_new;
            l[r] *= alpha;
            acc[r] *= alpha;
            for (var c = 0u; c < 4u; c++) {
                var pr = select(0.0, exp(s[r][c] - m_new), live);
                l[r] += pr;
                if dropout {
                    pr = select(0.0, pr * keep_scale(), keep(item, i0 + ty * 4u + r, j0 + tx * 4u + c));
                }
                pt[r][c] = pr;
            }
        }
        workgroupBarrier();
        store_p(pt);
        workgroupBarrier();
        accumulate_p_times(&acc, SRC_V, b.v, p.v_row, j0, p.kv_len, c0, p.v_dim);
    }
    let total = row_sum(l);
    for (var r = 0u; r < 4u; r++) {
        let i = i0 + ty * 4u + r;
        if i >= p.q_len {
            continue;
        }
        // A row with no key left sums to 0 and gives zeros (safe softmax).
        let empty = total[r] == 0.0;
        let inv = select(1.0 / total[r], 0.0, empty);
        for (var c = 0u; c < 4u; c++) {
            let col = c0 + tx * 4u + c;
            if col < p.v_dim {
                out0[(item * p.q_len + i) * p.v_dim + col] = acc[r][c] * inv;
            }
        }
        if chunk == 0u && tx == 0u {
            out1[item * p.q_len + i] = select(m[r] + log(total[r]), neg_inf(), empty);
        }
    }
}
