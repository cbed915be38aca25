// One thread's share of a row of logits for softmax-based losses
// (cross_entropy and its backward): the running maximum and the sum of
// exp(x - maximum) over elements t, t + lanes, ... of the row at `base`
// (common/online_softmax.wgsl's `online`), its loads four at a time
// before any is used.
// Needs `logits`, `p.n` and `p.x_col_stride` from the including kernel.

//! include common/online_softmax.wgsl

// (maximum, sum) of this thread's elements of the row (-inf, 0 if none).
fn logits_max_sum(base: u32, t: u32, lanes: u32) -> vec2<f32> {
    var m = neg_inf();
    var s = 0.0;
    var e = t;
    while e + 3u * lanes < p.n {
        let x0 = logits[base + e * p.x_col_stride];
        let x1 = logits[base + (e + lanes) * p.x_col_stride];
        let x2 = logits[base + (e + 2u * lanes) * p.x_col_stride];
        let x3 = logits[base + (e + 3u * lanes) * p.x_col_stride];
        online(&m, &s, x0);
        online(&m, &s, x1);
        online(&m, &s, x2);
        online(&m, &s, x3);
        e += 4u * lanes;
    }
    while e < p.n {
        online(&m, &s, logits[base + e * p.x_col_stride]);
        e += lanes;
    }
    return vec2<f32>(m, s);
}
