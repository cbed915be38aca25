// Scalar helpers of the activation functions, shared by the forward
// (elementwise/unary.wgsl) and backward (backward/unary_backward.wgsl) kernels.
// Needs common/nan.wgsl (included first by both).

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

// tanh written out (Cephes tanhf) rather than the builtin: some drivers
// evaluate the builtin as (e^2x - 1) / (e^2x + 1), which is NaN once e^2x
// overflows and loses all relative precision near 0.
fn tanh_f32(v: f32) -> f32 {
    let a = abs(v);
    if a < 0.625 {
        let z = v * v;
        let q = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z
            + 1.33314422036e-1) * z - 3.33332819422e-1) * z;
        // v itself at +-0 (v + v * q would turn -0 into +0; tanh(-0) = -0).
        return select(v + v * q, v, v == 0.0);
    }
    // 1 - 2 / (e^{2a} + 1): e^{2a} = inf gives exactly 1, never NaN.
    let r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return select(r, -r, v < 0.0);
}

// sech^2(v) = 4e / (1 + e)^2 with e = exp(-2|v|), as wgrad_core's sech2: the
// derivative of tanh with full relative precision in the tails.
fn sech2_f32(v: f32) -> f32 {
    let e = exp(-2.0 * abs(v));
    return 4.0 * e / ((1.0 + e) * (1.0 + e));
}

// ln(1 + v) accurate near 0 (WGSL has no log1p, its log() is only
// absolutely accurate near 1, and compilers may fold (1 + v) - 1 to v, so
// no correction of the rounded 1 + v survives): for |v| < 0.4 the series
// ln(1 + v) = 2 atanh(s) = 2 (s + s^3/3 + ...) with s = v / (2 + v),
// |s| <= 1/4 (terms to s^13, relative error below 1e-8); beyond, log(1 + v)
// is at least 0.33 in magnitude, where log()'s error is relatively small.
fn log1p_f32(v: f32) -> f32 {
    if is_nan(v) { return v; }
    if v < -1.0 { return bitcast<f32>(NAN_BITS); }
    if v == -1.0 { return -bitcast<f32>(INF_BITS); }
    if abs(v) >= 0.4 { return log(1.0 + v); }
    let s = v / (2.0 + v);
    let z = s * s;
    let series = 1.0 + z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0
        + z * (1.0 / 11.0 + z * (1.0 / 13.0))))));
    return 2.0 * s * series;
}

// e^v - 1 accurate near 0: for |v| < 0.35 the Taylor series to v^10 (nested,
// relative error below 1e-10); beyond, e^v is at least 1.4 or at most 0.71
// away from 1, so e^v - 1 loses at most a couple of bits.
fn expm1_f32(v: f32) -> f32 {
    if is_nan(v) { return v; }
    if abs(v) >= 0.35 { return exp(v) - 1.0; }
    var q = 1.0 + v * (1.0 / 10.0);
    q = 1.0 + v * (1.0 / 9.0) * q;
    q = 1.0 + v * (1.0 / 8.0) * q;
    q = 1.0 + v * (1.0 / 7.0) * q;
    q = 1.0 + v * (1.0 / 6.0) * q;
    q = 1.0 + v * (1.0 / 5.0) * q;
    q = 1.0 + v * (1.0 / 4.0) * q;
    q = 1.0 + v * (1.0 / 3.0) * q;
    q = 1.0 + v * 0.5 * q;
    return v * q;
}

// torch softplus: v where beta * v > threshold, else log1p(e^(beta v)) / beta.
fn softplus_f32(v: f32, beta: f32, threshold: f32) -> f32 {
    if is_nan(v) { return v; }
    let bv = beta * v;
    if bv > threshold { return v; }
    return log1p_f32(exp(bv)) / beta;
}

// mish = v * tanh(softplus(v)) (softplus with torch's defaults 1, 20).
fn mish_f32(v: f32) -> f32 {
    if is_nan(v) { return v; }
    return v * tanh_f32(softplus_f32(v, 1.0, 20.0));
}

// The tanh argument of approximate GELU: sqrt(2/pi) (v + 0.044715 v^3).
fn gelu_inner(v: f32) -> f32 {
    return 0.7978846 * (v + 0.044715 * v * v * v);
}

// torch gelu(approximate='tanh').
fn gelu_tanh_f32(v: f32) -> f32 {
    if is_nan(v) { return v; }
    return 0.5 * v * (1.0 + tanh_f32(gelu_inner(v)));
}
