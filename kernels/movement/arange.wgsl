// arange: out[i] = dtype(start + i * step), bit-exact with the CPU backend,
// which evaluates `start + i as f64 * step` in f64 and then converts with
// Rust's `as` (f32: round to nearest even; i32/u32: truncate toward zero,
// saturating). WGSL has no f64 here, so this kernel emulates the two f64
// roundings (of the product and of the sum) with integer arithmetic: a
// double is (sign, 53-bit integer mantissa m, exponent e) = ±m * 2^e.
// Emulating both roundings, rather than computing the exact value once,
// matters because arange values are often exact f32 midpoints or sit at
// integer boundaries, where f64 rounding decides the result.
//
// Bindings: 0 out (read_write, 32-bit words, contiguous).
// Immediates: ArangeParams (start and step decomposed on the host).
// Override OUT_DTYPE: 0 f32, 1 i32, 2 u32.

struct ArangeParams {
    numel: u32,
    start_lo: u32,
    start_hi: u32,
    start_exp: i32,
    start_sign: u32,
    step_lo: u32,
    step_hi: u32,
    step_exp: i32,
    step_sign: u32,
    _pad: u32,
}

var<immediate> p: ArangeParams;
override OUT_DTYPE: u32 = 0u;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

// A finite double ±m * 2^e (m < 2^53, e >= -1074) or an infinity.
struct Soft64 {
    sign: u32,
    m: vec2<u32>, // (low 32 bits, high bits)
    e: i32,
    inf: bool,
}

// 32 x 32 -> 64-bit product as (lo, hi), through 16-bit halves.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// 128-bit unsigned integers as vec4 (x = least significant word).
fn is_zero128(a: vec4<u32>) -> bool {
    return (a.x | a.y | a.z | a.w) == 0u;
}

fn add128(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    var r = vec4<u32>();
    var carry = 0u;
    for (var k = 0; k < 4; k++) {
        let s = a[k] + b[k];
        let s2 = s + carry;
        carry = select(0u, 1u, s < a[k]) + select(0u, 1u, s2 < s);
        r[k] = s2;
    }
    return r;
}

// a - b for a >= b.
fn sub128(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    var r = vec4<u32>();
    var borrow = 0u;
    for (var k = 0; k < 4; k++) {
        let d = a[k] - b[k];
        let d2 = d - borrow;
        borrow = select(0u, 1u, a[k] < b[k]) + select(0u, 1u, d < borrow);
        r[k] = d2;
    }
    return r;
}

fn ge128(a: vec4<u32>, b: vec4<u32>) -> bool {
    for (var k = 3; k >= 0; k--) {
        if a[k] != b[k] {
            return a[k] > b[k];
        }
    }
    return true;
}

// Number of significant bits (0 for zero).
fn bit_length128(a: vec4<u32>) -> u32 {
    for (var k = 3; k >= 0; k--) {
        if a[k] != 0u {
            return u32(k) * 32u + 32u - countLeadingZeros(a[k]);
        }
    }
    return 0u;
}

fn shl128(a: vec4<u32>, n: u32) -> vec4<u32> {
    if n >= 128u {
        return vec4<u32>();
    }
    let ws = i32(n / 32u);
    let bs = n % 32u;
    var r = vec4<u32>();
    for (var k = 3; k >= ws; k--) {
        var w = a[k - ws] << bs;
        // Shifts by 32 are taken modulo 32 in WGSL: skip the carry-in then.
        if bs != 0u && k - ws - 1 >= 0 {
            w |= a[k - ws - 1] >> (32u - bs);
        }
        r[k] = w;
    }
    return r;
}

fn shr128(a: vec4<u32>, n: u32) -> vec4<u32> {
    if n >= 128u {
        return vec4<u32>();
    }
    let ws = i32(n / 32u);
    let bs = n % 32u;
    var r = vec4<u32>();
    for (var k = 0; k + ws < 4; k++) {
        var w = a[k + ws] >> bs;
        if bs != 0u && k + ws + 1 < 4 {
            w |= a[k + ws + 1] << (32u - bs);
        }
        r[k] = w;
    }
    return r;
}

// Whether any of the low `n` bits of `a` are set.
fn low_bits_set(a: vec4<u32>, n: u32) -> bool {
    if n >= 128u {
        return !is_zero128(a);
    }
    return !is_zero128(a ^ shl128(shr128(a, n), n));
}

// Rounds ±n * 2^e to `prec` significant bits, round to nearest even, on the
// grid of a format whose smallest exponent is `emin` (subnormals). Returns a
// finite value; the caller checks the exponent for overflow.
fn round_to(sign: u32, n: vec4<u32>, e: i32, prec: u32, emin: i32) -> Soft64 {
    if is_zero128(n) {
        return Soft64(sign, vec2<u32>(), emin, false);
    }
    let s = max(i32(bit_length128(n)) - i32(prec), emin - e);
    if s <= 0 {
        let m = shl128(n, u32(-s));
        return Soft64(sign, m.xy, e + s, false);
    }
    var q = shr128(n, u32(s));
    let half = (shr128(n, u32(s - 1)).x & 1u) == 1u;
    let sticky = low_bits_set(n, u32(s - 1));
    if half && (sticky || (q.x & 1u) == 1u) {
        q = add128(q, vec4<u32>(1u, 0u, 0u, 0u));
    }
    var ex = e + s;
    if bit_length128(q) > prec {
        q = shr128(q, 1u); // carried into a new bit: 2^prec -> 2^(prec-1)
        ex += 1;
    }
    return Soft64(sign, q.xy, ex, false);
}

// Rounds to a double, overflowing to infinity past the largest finite one.
fn round_f64(sign: u32, n: vec4<u32>, e: i32) -> Soft64 {
    var r = round_to(sign, n, e, 53u, -1074);
    if r.e > 971 {
        r.inf = true;
    }
    return r;
}

fn is_zero64(a: Soft64) -> bool {
    return (a.m.x | a.m.y) == 0u;
}

// f64 sum a + b of two finite doubles, correctly rounded.
fn add64(x: Soft64, y: Soft64) -> Soft64 {
    if is_zero64(x) && is_zero64(y) {
        return Soft64(x.sign & y.sign, vec2<u32>(), -1074, false); // -0 only if both are
    }
    if is_zero64(y) {
        return x;
    }
    if is_zero64(x) {
        return y;
    }
    var a = x;
    var b = y;
    if b.e > a.e {
        a = y;
        b = x;
    }
    // a has the larger exponent, so it is normal (m >= 2^52) unless both are
    // subnormal (then d = 0). Place a 64 bits up so b keeps 64 bits of
    // alignment room; bits of b shifted out past that only matter as a
    // sticky bit, far below a's rounding position.
    let d = u32(a.e - b.e);
    let big = vec4<u32>(0u, 0u, a.m.x, a.m.y);
    var small = vec4<u32>(b.m.x, b.m.y, 0u, 0u);
    if d <= 64u {
        small = shl128(small, 64u - d);
    } else {
        let lost = low_bits_set(small, d - 64u);
        small = shr128(small, d - 64u);
        if lost {
            small.x |= 1u;
        }
    }
    let e = a.e - 64;
    if a.sign == b.sign {
        return round_f64(a.sign, add128(big, small), e);
    }
    if ge128(big, small) {
        let diff = sub128(big, small);
        if is_zero128(diff) {
            return Soft64(0u, vec2<u32>(), -1074, false); // x + (-x) = +0
        }
        return round_f64(a.sign, diff, e);
    }
    return round_f64(b.sign, sub128(small, big), e);
}

fn to_f32_bits(v: Soft64) -> u32 {
    let sign_bit = v.sign << 31u;
    if v.inf {
        return sign_bit | 0x7f800000u;
    }
    let r = round_to(v.sign, vec4<u32>(v.m.x, v.m.y, 0u, 0u), v.e, 24u, -149);
    if r.e > 104 {
        return sign_bit | 0x7f800000u;
    }
    let m = r.m.x;
    if m >= 0x800000u {
        return sign_bit | (u32(r.e + 150) << 23u) | (m & 0x7fffffu);
    }
    return sign_bit | m; // subnormal (or zero): exponent field 0
}

// |v| truncated toward zero, saturated to 2^32 (enough for both int types).
fn trunc_magnitude(v: Soft64) -> vec2<u32> {
    // (value, saturated flag)
    if v.inf {
        return vec2<u32>(0u, 1u);
    }
    let m = vec4<u32>(v.m.x, v.m.y, 0u, 0u);
    var mag = vec4<u32>();
    if v.e >= 0 {
        if v.e >= 64 {
            return vec2<u32>(0u, select(0u, 1u, !is_zero64(v)));
        }
        mag = shl128(m, u32(v.e));
    } else {
        mag = shr128(m, u32(-v.e));
    }
    if (mag.y | mag.z | mag.w) != 0u {
        return vec2<u32>(0u, 1u);
    }
    return vec2<u32>(mag.x, 0u);
}

fn to_i32_bits(v: Soft64) -> u32 {
    let t = trunc_magnitude(v);
    if v.sign == 1u {
        if t.y == 1u || t.x > 0x80000000u {
            return 0x80000000u; // i32::MIN
        }
        return 0u - t.x;
    }
    if t.y == 1u || t.x > 0x7fffffffu {
        return 0x7fffffffu;
    }
    return t.x;
}

fn to_u32_bits(v: Soft64) -> u32 {
    if v.sign == 1u {
        return 0u; // negative values (and -0.x) saturate/truncate to 0
    }
    let t = trunc_magnitude(v);
    if t.y == 1u {
        return 0xffffffffu;
    }
    return t.x;
}

@compute @workgroup_size(256)
fn arange(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    // i * step, exactly (i < 2^32, mantissa < 2^53: at most 85 bits), then rounded.
    let lo = mul_wide(i, p.step_lo);
    let hi = mul_wide(i, p.step_hi);
    let mid = lo.y + hi.x;
    let carry = select(0u, 1u, mid < lo.y);
    let product = vec4<u32>(lo.x, mid, hi.y + carry, 0u);
    let t = round_f64(p.step_sign, product, p.step_exp);
    let start = Soft64(p.start_sign, vec2<u32>(p.start_lo, p.start_hi), p.start_exp, false);
    var v = t;
    if !t.inf {
        v = add64(start, t);
    }
    switch OUT_DTYPE {
        case 1u: { out[i] = to_i32_bits(v); }
        case 2u: { out[i] = to_u32_bits(v); }
        default: { out[i] = to_f32_bits(v); }
    }
}
