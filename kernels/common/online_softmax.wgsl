// The online softmax sum (softmax, log_softmax, cross-entropy): a running
// maximum m and sum s of exp(x_i - m), a new maximum rescaling the sum, so
// a row is read once. NaN wins the maximum; -inf elements add nothing.
// Needs common/nan.wgsl.

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

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

// Folds x into the running (max m, sum s of exp(x_i - m)).
fn online(m: ptr<function, f32>, s: ptr<function, f32>, x: f32) {
    let m_new = nan_max(*m, x);
    // A -inf element adds exp(-inf) = 0; skipping it keeps an all -inf
    // prefix from turning the sum into NaN.
    if x != neg_inf() || is_nan(x) {
        *s = *s * rescale(*m, m_new) + exp(x - m_new);
    }
    *m = m_new;
}
