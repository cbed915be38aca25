// Fused backward of the unary math ops: out = grad * op'(x), elementwise
// over strided views of the same shape. op' mirrors
// wgrad_core::UnaryOp::derivative formula by formula. The ops whose
// gradient PyTorch selects rather than multiplies (relu, hardtanh, clamp:
// `where(mask, grad, 0)`; sign/floor/ceil/round: zeros) give an exact 0
// where op' is 0, even for a NaN or infinite grad (`chain`).
// Bindings: 0 grad (read), 1 x (read), 2 out (read_write, contiguous).
// Immediates: Params. Override OP = UnaryOp::code(); a0/a1 = UnaryOp::params()
// (leaky_relu slope; clamp min/max with open bounds as -inf/+inf; softplus
// beta/threshold; elu alpha; hardtanh min/max).

//! include common/nan.wgsl
//! include common/activation.wgsl
//! include common/half.wgsl

struct Params {
    numel: u32,
    rank: u32,
    g_offset: u32,
    x_offset: u32,
    shape: array<u32, 6>,
    g_strides: array<u32, 6>,
    x_strides: array<u32, 6>,
    a0: f32,
    a1: f32,
}

var<immediate> p: Params;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const FRAC_1_SQRT_2: f32 = 0.70710678;
const FRAC_1_SQRT_2PI: f32 = 0.3989423;
const FRAC_2_SQRT_PI: f32 = 1.1283792;

// s(v) * s(-v) as e / (1 + e)^2 with e = exp(-|v|): no cancellation in the tails.
fn sigmoid_derivative(v: f32) -> f32 {
    let e = exp(-abs(v));
    return e / ((1.0 + e) * (1.0 + e));
}

fn derivative(v: f32) -> f32 {
    switch OP {
        case UNARY_NEG: { return -1.0; }
        case UNARY_ABS: {
            if is_nan(v) { return 0.0; }
            if v > 0.0 { return 1.0; }
            if v < 0.0 { return -1.0; }
            return 0.0;
        }
        case UNARY_EXP: { return exp(v); }
        case UNARY_LOG: { return 1.0 / v; }
        case UNARY_SQRT: { return 0.5 / sqrt(v); }
        case UNARY_RSQRT: {
            let r = 1.0 / sqrt(v);
            return -0.5 * r * r * r;
        }
        case UNARY_SIN: { return cos(v); }
        case UNARY_COS: { return -sin(v); }
        // sech^2 in the form that keeps relative precision for large |v|.
        case UNARY_TANH: { return sech2_f32(v); }
        case UNARY_SIGMOID: { return sigmoid_derivative(v); }
        case UNARY_RELU: {
            // PyTorch blocks only x <= 0: a NaN input's gradient passes.
            if is_nan(v) { return 1.0; }
            return select(0.0, 1.0, v > 0.0);
        }
        case UNARY_GELU: {
            let cdf = 0.5 * (1.0 + erf(v * FRAC_1_SQRT_2));
            let pdf = exp(-0.5 * v * v) * FRAC_1_SQRT_2PI;
            return cdf + v * pdf;
        }
        case UNARY_SILU: { return sigmoid(v) + v * sigmoid_derivative(v); }
        case UNARY_SQUARE: { return 2.0 * v; }
        case UNARY_RECIP: {
            let r = 1.0 / v;
            return -(r * r);
        }
        case UNARY_LEAKY_RELU: {
            if is_nan(v) { return p.a0; }
            return select(p.a0, 1.0, v > 0.0);
        }
        case UNARY_CLAMP: {
            // The gradient passes strictly inside (min, max), as torch 2.15
            // for scalar bounds; never for NaN.
            // An open bound arrives as -inf / +inf and blocks nothing, not
            // even an infinite v (tested on the bits).
            if is_nan(v) { return 0.0; }
            let above = v > p.a0 || bitcast<u32>(p.a0) == 0xff800000u;
            let below = v < p.a1 || bitcast<u32>(p.a1) == INF_BITS;
            return select(0.0, 1.0, above && below);
        }
        case UNARY_ERF: { return FRAC_2_SQRT_PI * exp(-v * v); }
        case UNARY_LOG1P: { return 1.0 / (1.0 + v); }
        case UNARY_EXPM1: { return exp(v); }
        // Piecewise constant: the gradient is 0 (`chain` makes it exact).
        case UNARY_SIGN, UNARY_FLOOR, UNARY_CEIL, UNARY_ROUND: { return 0.0; }
        case UNARY_SOFTPLUS: {
            if is_nan(v) { return v; }
            let bv = p.a0 * v;
            if bv > p.a1 { return 1.0; }
            return sigmoid(bv);
        }
        case UNARY_ELU: {
            // alpha * e^v on v <= 0, as torch (elu'(0) = alpha); NaN as
            // torch's vectorized kernel.
            if is_nan(v) { return v; }
            if v > 0.0 { return 1.0; }
            return p.a0 * exp(v);
        }
        case UNARY_MISH: {
            if is_nan(v) { return v; }
            let sp = softplus_f32(v, 1.0, 20.0);
            return tanh_f32(sp) + v * sigmoid(v) * sech2_f32(sp);
        }
        case UNARY_HARDTANH: {
            // Open interval, as torch's hardtanh_backward; NaN blocked, as
            // its vectorized kernel.
            if is_nan(v) { return 0.0; }
            return select(0.0, 1.0, v > p.a0 && v < p.a1);
        }
        case UNARY_GELU_TANH: {
            if is_nan(v) { return v; }
            let u = gelu_inner(v);
            let du = 0.7978846 * (1.0 + 3.0 * 0.044715 * v * v);
            return 0.5 * (1.0 + tanh_f32(u)) + 0.5 * v * sech2_f32(u) * du;
        }
        // Not a UnaryOp code: NaN, so a missing case cannot pass for another op.
        default: { return bitcast<f32>(NAN_BITS); }
    }
}

// grad * op'(x), or 0 where op' is 0 for the ops PyTorch selects the
// gradient of (as wgrad_core::UnaryOp::chain).
fn chain(g: f32, d: f32) -> f32 {
    let selects = OP == UNARY_RELU || OP == UNARY_HARDTANH || OP == UNARY_CLAMP || OP == UNARY_SIGN
        || OP == UNARY_FLOOR || OP == UNARY_CEIL || OP == UNARY_ROUND;
    if selects && d == 0.0 {
        return 0.0;
    }
    return g * d;
}

// (gradient, x) element offsets of logical element `i` (row-major walk).
fn offsets_of(i: u32) -> vec2<u32> {
    var rem = i;
    var ig = p.g_offset;
    var ix = p.x_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        ig += k * p.g_strides[d];
        ix += k * p.x_strides[d];
    }
    return vec2<u32>(ig, ix);
}

@compute @workgroup_size(256)
fn unary_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let at = offsets_of(i);
    out[i] = chain(grad[at.x], derivative(x[at.y]));
}

// `unary_backward_vec4`: dense operands (the host coalesced both to rank 1
// with stride 1; offsets and numel multiples of 4), read and written four
// elements per 16-byte access as elementwise/binary_vec4.wgsl does, the
// same `derivative` per component (so the same bits as `unary_backward`).
// VPT vectors per thread; ceil(numel / 4 / VPT) threads.
@group(0) @binding(0) var<storage, read> grad_vec4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> x_vec4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out_vec4: array<vec4<f32>>;

const VPT: u32 = 4u;

fn grad4(g: vec4<f32>, v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(chain(g.x, derivative(v.x)), chain(g.y, derivative(v.y)), chain(g.z, derivative(v.z)), chain(g.w, derivative(v.w)));
}

@compute @workgroup_size(256)
fn unary_backward_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.numel / 4u;
    let go = p.g_offset / 4u;
    let xo = p.x_offset / 4u;
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u * VPT;
    for (var k = 0u; k < VPT; k++) {
        let j = tile + lid + k * 256u;
        if j < n {
            out_vec4[j] = grad4(grad_vec4[go + j], x_vec4[xo + j]);
        }
    }
}

// `unary_backward_half`: the same with the gradient and x both of the 16-bit
// dtype KIND (3 f16, 4 bf16), in one pass: both widened exactly, the product
// in f32, rounded once into packed output words (bindings as 32-bit words).
// One output word (two elements) per thread; ceil(numel / 2) threads.
override KIND: u32 = 3u;

@group(0) @binding(0) var<storage, read> grad_words: array<u32>;
@group(0) @binding(1) var<storage, read> x_words: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_words: array<u32>;

fn half_grad(i: u32) -> u32 {
    let at = offsets_of(i);
    let ig = at.x;
    let ix = at.y;
    let g = word_to_f32(KIND, grad_words[ig >> 1u], ig);
    let v = word_to_f32(KIND, x_words[ix >> 1u], ix);
    return f32_to_half_bits(KIND, chain(g, derivative(v)));
}

@compute @workgroup_size(256)
fn unary_backward_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if 2u * w >= p.numel {
        return;
    }
    var word = half_grad(2u * w);
    if 2u * w + 1u < p.numel {
        word |= half_grad(2u * w + 1u) << 16u;
    }
    out_words[w] = word;
}
