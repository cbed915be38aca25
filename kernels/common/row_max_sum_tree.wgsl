// The tree that folds the (maximum, sum of exp(x - maximum)) pairs of the
// `lanes` threads of each row slot into the row's pair, shared by the
// softmax kernels (reduce/softmax.wgsl, reduce/softmax_split.wgsl) and the
// cross-entropy ones (common/cross_entropy_rows.wgsl), so they fold in the
// same order and give the same bits.
//
// Needs from the including kernel: the workgroup arrays smax and ssum
// (array<f32, 256>; the kernel may reuse them elsewhere), and nan_max and
// rescale (common/nan.wgsl, common/online_softmax.wgsl).

// Folds thread t's pair (m, s) of row slot r with the slot's other
// threads; every thread of the slot gets the row's (maximum, sum), which
// also stay at smax[r * lanes], ssum[r * lanes] until the kernel reuses
// them. Holds barriers: call it in uniform control flow.
fn fold_row_max_sum(r: u32, t: u32, lanes: u32, m: f32, s: f32) -> vec2<f32> {
    let slot = r * lanes + t;
    smax[slot] = m;
    ssum[slot] = s;
    workgroupBarrier();
    for (var step = lanes / 2u; step > 0u; step /= 2u) {
        if t < step {
            let m_a = smax[slot];
            let m_b = smax[slot + step];
            let m_new = nan_max(m_a, m_b);
            ssum[slot] = ssum[slot] * rescale(m_a, m_new) + ssum[slot + step] * rescale(m_b, m_new);
            smax[slot] = m_new;
        }
        workgroupBarrier();
    }
    return vec2<f32>(smax[r * lanes], ssum[r * lanes]);
}
