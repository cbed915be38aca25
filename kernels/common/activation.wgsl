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

// The same formulas and constants as wgrad_core::math::erf: a Taylor series
// near 0 (full relative precision), 1 - erfc (Numerical Recipes) beyond.
fn erf(v: f32) -> f32 {
    if abs(v) < 0.5 {
        let x2 = v * v;
        return v * (1.1283792 + x2 * (-0.3761264 + x2 * (0.11283792 + x2 * (-0.02686617
            + x2 * (0.0052239776 + x2 * (-0.00085483255 + x2 * 0.00012055333))))));
    }
    let z = abs(v);
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.2655122 + t * (1.0000237 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.1352039 + t * (1.4885159
        + t * (-0.8221522 + t * 0.17087277))))))));
    let erfc = t * exp(-z * z + poly);
    return select(1.0 - erfc, erfc - 1.0, v < 0.0);
}
