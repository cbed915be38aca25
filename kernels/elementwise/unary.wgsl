// Elementwise unary math on f32, reading a strided view, writing contiguous.
// Bindings: 0 x (read), 1 out (read_write, contiguous). Entry `unary_half`
// does the same on a 16-bit tensor (override KIND: 3 f16, 4 bf16) in one
// pass: elements widened exactly, `apply` in f32, results rounded once into
// packed output words (bindings as 32-bit words).
// Immediates: UnaryParams (the two f32 parameters are UnaryOp::params()).
// Override OP = wgrad_core::UnaryOp::code() selects the operation; the case
// constants UNARY_* are generated from UnaryOp::ALL. leaky_relu: p0 = slope;
// clamp: p0 = min, p1 = max (open bounds are -inf/+inf); softplus: p0 = beta,
// p1 = threshold; elu: p0 = alpha; hardtanh: p0 = min, p1 = max.
// Every case mirrors wgrad_core::UnaryOp::apply, including its NaN behaviour.

//! include common/nan.wgsl
//! include common/activation.wgsl
//! include common/half.wgsl

struct UnaryParams {
    numel: u32,
    rank: u32,
    offset: u32,
    p0: f32,
    p1: f32,
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: UnaryParams;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// Reduces an angle to about [-pi, pi] with a two-constant Cody-Waite step so
// that sin/cos stay accurate for moderately large arguments on GPUs whose
// builtins are only accurate near zero. 2*pi = 6.28125 + 1.9353071795864769e-3;
// the first part has 8 significant bits, so k * 6.28125 is exact for |k| < 2^16.
fn reduce_angle(v: f32) -> f32 {
    let k = round(v * 0.15915494309189535);
    // k = 0: v itself (the subtractions would turn -0 into +0).
    return select((v - k * 6.28125) - k * 1.9353071795864769e-3, v, k == 0.0);
}

fn apply(v: f32) -> f32 {
    switch OP {
        case UNARY_NEG: { return -v; }
        case UNARY_ABS: { return abs(v); }
        case UNARY_EXP: { return exp(v); }
        case UNARY_LOG: {
            // The builtin is indeterminate outside x > 0; spell out IEEE log.
            if v < 0.0 { return bitcast<f32>(NAN_BITS); }
            if v == 0.0 { return -bitcast<f32>(INF_BITS); }
            return log(v);
        }
        case UNARY_SQRT: {
            if v < 0.0 { return bitcast<f32>(NAN_BITS); }
            return sqrt(v);
        }
        case UNARY_RSQRT: {
            // 1 / sqrt(x) as the reference computes it (inverseSqrt is
            // approximate and undefined at 0).
            if v < 0.0 { return bitcast<f32>(NAN_BITS); }
            return 1.0 / sqrt(v);
        }
        case UNARY_SIN: {
            if is_nan(v) || abs(v) == bitcast<f32>(INF_BITS) { return bitcast<f32>(NAN_BITS); }
            return sin(reduce_angle(v));
        }
        case UNARY_COS: {
            if is_nan(v) || abs(v) == bitcast<f32>(INF_BITS) { return bitcast<f32>(NAN_BITS); }
            return cos(reduce_angle(v));
        }
        case UNARY_TANH: {
            if is_nan(v) { return v; }
            return tanh_f32(v);
        }
        case UNARY_SIGMOID: { return sigmoid(v); }
        case UNARY_RELU: {
            // Like the reference (and PyTorch), NaN passes through.
            if is_nan(v) { return v; }
            return select(0.0, v, v > 0.0);
        }
        case UNARY_GELU: {
            if is_nan(v) { return v; }
            return 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
        }
        case UNARY_SILU: { return v * sigmoid(v); }
        case UNARY_SQUARE: { return v * v; }
        case UNARY_RECIP: { return 1.0 / v; }
        case UNARY_LEAKY_RELU: {
            if is_nan(v) { return v; }
            return select(p.p0 * v, v, v > 0.0);
        }
        case UNARY_CLAMP: {
            // x.max(lo).min(hi) with Rust semantics (a NaN x stays NaN; a
            // NaN bound is ignored, as f32::max/min ignore NaN).
            if is_nan(v) { return v; }
            var r = v;
            if !is_nan(p.p0) { r = max(r, p.p0); }
            if !is_nan(p.p1) { r = min(r, p.p1); }
            return r;
        }
        case UNARY_ERF: { return erf(v); }
        case UNARY_LOG1P: { return log1p_f32(v); }
        case UNARY_EXPM1: { return expm1_f32(v); }
        case UNARY_SIGN: {
            // NaN and -0.0 give +0.0, as torch.sign. Decided on the bits:
            // float compares against NaN are what drivers fold away.
            let bits = bitcast<u32>(v);
            let magnitude = bits & 0x7fffffffu;
            if magnitude == 0u || magnitude > 0x7f800000u { return 0.0; }
            return select(1.0, -1.0, bits >= 0x80000000u);
        }
        case UNARY_FLOOR: {
            if is_nan(v) { return v; }
            return floor(v);
        }
        case UNARY_CEIL: {
            if is_nan(v) { return v; }
            return ceil(v);
        }
        case UNARY_ROUND: {
            // WGSL's round() rounds halves to even, as torch.round.
            if is_nan(v) { return v; }
            return round(v);
        }
        case UNARY_SOFTPLUS: { return softplus_f32(v, p.p0, p.p1); }
        case UNARY_ELU: {
            if is_nan(v) { return v; }
            if v > 0.0 { return v; }
            return p.p0 * expm1_f32(v);
        }
        case UNARY_MISH: { return mish_f32(v); }
        case UNARY_HARDTANH: {
            if is_nan(v) { return v; }
            return min(max(v, p.p0), p.p1);
        }
        case UNARY_GELU_TANH: { return gelu_tanh_f32(v); }
        // Not a UnaryOp code: NaN, so a missing case cannot pass for another op.
        default: { return bitcast<f32>(NAN_BITS); }
    }
}

// Each thread handles EPT elements: thread `lid` of a tile of 256 * EPT
// elements takes `tile + lid + k * 256` (k < EPT), so every load and store
// instruction stays coalesced across the subgroup. A full tile issues all
// its loads before any store: with one 4-byte load in flight per thread an
// H200 reaches under half its HBM bandwidth, with eight about 90%. The host
// dispatches ceil(numel / EPT) threads.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

// Offset of logical element `i` in the strided input (row-major walk; the
// outermost dim needs no division, so a view the host coalesced to rank 1
// costs none).
fn offset_of(i: u32) -> u32 {
    var rem = i;
    var at = p.offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    return at + rem * p.strides[0];
}

@compute @workgroup_size(256)
fn unary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let v0 = x[offset_of(i)];
        let v1 = x[offset_of(i + 256u)];
        let v2 = x[offset_of(i + 512u)];
        let v3 = x[offset_of(i + 768u)];
        let v4 = x[offset_of(i + 1024u)];
        let v5 = x[offset_of(i + 1280u)];
        let v6 = x[offset_of(i + 1536u)];
        let v7 = x[offset_of(i + 1792u)];
        out[i] = apply(v0);
        out[i + 256u] = apply(v1);
        out[i + 512u] = apply(v2);
        out[i + 768u] = apply(v3);
        out[i + 1024u] = apply(v4);
        out[i + 1280u] = apply(v5);
        out[i + 1536u] = apply(v6);
        out[i + 1792u] = apply(v7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            out[j] = apply(x[offset_of(j)]);
        }
    }
}

override KIND: u32 = 3u;

@group(0) @binding(0) var<storage, read> x_words: array<u32>;
@group(0) @binding(1) var<storage, read_write> out_words: array<u32>;

// Logical element `i` of the 16-bit input, through `apply`, as 16 bits.
fn half_value(i: u32) -> u32 {
    let at = offset_of(i);
    return f32_to_half_bits(KIND, apply(word_to_f32(KIND, x_words[at >> 1u], at)));
}

// WPT output words (two elements each) per thread, strided by 256 inside a
// tile, all computed before any store; ceil(ceil(numel / 2) / WPT) threads.
const WPT: u32 = 4u;
const WORD_TILE: u32 = 1024u; // 256 * WPT

@compute @workgroup_size(256)
fn unary_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WORD_TILE;
    let k = tile + lid;
    if tile + WORD_TILE <= p.numel / 2u {
        let e0 = half_value(2u * k);
        let e1 = half_value(2u * k + 1u);
        let e2 = half_value(2u * k + 512u);
        let e3 = half_value(2u * k + 513u);
        let e4 = half_value(2u * k + 1024u);
        let e5 = half_value(2u * k + 1025u);
        let e6 = half_value(2u * k + 1536u);
        let e7 = half_value(2u * k + 1537u);
        out_words[k] = e0 | (e1 << 16u);
        out_words[k + 256u] = e2 | (e3 << 16u);
        out_words[k + 512u] = e4 | (e5 << 16u);
        out_words[k + 768u] = e6 | (e7 << 16u);
        return;
    }
    let words = (p.numel + 1u) / 2u;
    for (var j = 0u; j < WPT; j++) {
        let w = k + j * 256u;
        if w < words {
            var word = half_value(2u * w);
            if 2u * w + 1u < p.numel {
                word |= half_value(2u * w + 1u) << 16u;
            }
            out_words[w] = word;
        }
    }
}

// Entry `unary_vec4`: a dense input (the host coalesced it to rank 1 with
// stride 1) whose offset and element count are multiples of 4, read and
// written four elements per 16-byte access (as elementwise/binary_vec4.wgsl);
// `apply` per component, so the same bits as `unary`. VPT vectors per
// thread; ceil(numel / 4 / VPT) threads.
@group(0) @binding(0) var<storage, read> x_vec4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out_vec4: array<vec4<f32>>;

const VPT: u32 = 4u;
const VEC_TILE: u32 = 1024u; // 256 * VPT

fn apply4(v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(apply(v.x), apply(v.y), apply(v.z), apply(v.w));
}

@compute @workgroup_size(256)
fn unary_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.numel / 4u;
    let xo = p.offset / 4u;
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * VEC_TILE;
    let i = tile + lid;
    if tile + VEC_TILE <= n {
        let v0 = x_vec4[xo + i];
        let v1 = x_vec4[xo + i + 256u];
        let v2 = x_vec4[xo + i + 512u];
        let v3 = x_vec4[xo + i + 768u];
        out_vec4[i] = apply4(v0);
        out_vec4[i + 256u] = apply4(v1);
        out_vec4[i + 512u] = apply4(v2);
        out_vec4[i + 768u] = apply4(v3);
        return;
    }
    for (var k = 0u; k < VPT; k++) {
        let j = i + k * 256u;
        if j < n {
            out_vec4[j] = apply4(x_vec4[xo + j]);
        }
    }
}
