// One thread's share of a row of logits for softmax-based losses
// (cross_entropy and its backward): the running maximum and the sum of
// exp(x - maximum) over elements t, t + lanes, ... of the row at `base`,
// updated online (a new maximum rescales the sum). The loads go out four
// at a time before any is used: a loop that used each load before issuing
// the next waited on memory once per element (one thread per row of 10
// classes: W2's fused loss took 16.7 us on an H100). Same order of
// operations as one element at a time, so the same bits.
// Needs `logits`, `p.n` and `p.x_col_stride` from the including kernel.

fn nan_max(a: f32, b: f32) -> f32 {
    if is_nan(a) || is_nan(b) {
        return bitcast<f32>(0x7fc00000u);
    }
    return max(a, b);
}

// Factor that moves a sum of exp(x - m_old) onto the new maximum m. Equal
// maxima (also both -inf, where m_old - m would be NaN) need no rescaling.
fn rescale(m_old: f32, m: f32) -> f32 {
    if m_old == m {
        return 1.0;
    }
    return exp(m_old - m);
}

// (maximum, sum) after element x.
fn online_step(ms: vec2<f32>, x: f32) -> vec2<f32> {
    let m_new = nan_max(ms.x, x);
    var s = ms.y;
    // A -inf element adds exp(-inf) = 0; skipping it keeps an all -inf
    // prefix from turning the sum into NaN.
    if x != bitcast<f32>(0xff800000u) || is_nan(x) {
        s = s * rescale(ms.x, m_new) + exp(x - m_new);
    }
    return vec2<f32>(m_new, s);
}

// (maximum, sum) of this thread's elements of the row (-inf, 0 if none).
fn logits_max_sum(base: u32, t: u32, lanes: u32) -> vec2<f32> {
    var ms = vec2<f32>(bitcast<f32>(0xff800000u), 0.0);
    var e = t;
    while e + 3u * lanes < p.n {
        let x0 = logits[base + e * p.x_col_stride];
        let x1 = logits[base + (e + lanes) * p.x_col_stride];
        let x2 = logits[base + (e + 2u * lanes) * p.x_col_stride];
        let x3 = logits[base + (e + 3u * lanes) * p.x_col_stride];
        ms = online_step(online_step(online_step(online_step(ms, x0), x1), x2), x3);
        e += 4u * lanes;
    }
    while e < p.n {
        ms = online_step(ms, logits[base + e * p.x_col_stride]);
        e += lanes;
    }
    return ms;
}
