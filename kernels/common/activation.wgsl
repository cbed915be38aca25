// Scalar helpers of the activation functions, shared by the forward
// (elementwise/unary.wgsl) and backward (backward/unary_backward.wgsl) kernels.

// Overflow-safe logistic, as wgrad_core::ops::sigmoid: exp() only ever sees a
// non-positive argument, so it never overflows to inf/inf.
fn sigmoid(v: f32) -> f32 {
    if v >= 0.0 {
        return 1.0 / (1.0 + exp(-v));
    }
    let e = exp(v);
    return e / (1.0 + e);
}

// Abramowitz & Stegun 7.1.26, the same formula and constants as wgrad_core::ops::erf.
fn erf(v: f32) -> f32 {
    let s = select(1.0, -1.0, v < 0.0);
    let a = abs(v);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = t * (0.2548296 + t * (-0.28449674 + t * (1.4214137 + t * (-1.4531521 + t * 1.0614054))));
    return s * (1.0 - poly * exp(-a * a));
}
