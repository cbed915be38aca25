// The f32 arithmetic of wgrad_core::BinaryOp, shared by elementwise/binary.wgsl
// (two tensors) and elementwise/scalar.wgsl (tensor and scalar). The
// including kernel declares `override OP: u32` = BinaryOp::code(); the case
// constants BINARY_* are generated from BinaryOp::ALL.

//! include common/nan.wgsl

// Rust's f32::powf (C pow) on top of WGSL pow, which is only defined for a positive base.
fn powf(lhs: f32, rhs: f32) -> f32 {
    if rhs == 0.0 || lhs == 1.0 { return 1.0; } // even when the other operand is NaN
    if is_nan(lhs) || is_nan(rhs) { return bitcast<f32>(NAN_BITS); }
    let m = abs(lhs);
    let inf = bitcast<f32>(INF_BITS);
    let integral = rhs == trunc(rhs); // true for rhs = +-inf as well
    // Odd integer exponent: rhs - 2 floor(rhs / 2) == 1 (exact in f32; an i32
    // conversion would misjudge |rhs| >= 2^31; inf - inf = NaN gives false).
    let odd = integral && rhs - 2.0 * floor(rhs * 0.5) == 1.0;
    let negative = (bitcast<u32>(lhs) & 0x80000000u) != 0u; // includes -0.0 and -inf
    if negative && m != 0.0 && m != inf && !integral {
        return bitcast<f32>(NAN_BITS); // finite negative base, fractional exponent
    }
    var r: f32;
    if m == 1.0 {
        r = 1.0; // (-1)^(+-inf) = 1
    } else if m == 0.0 {
        r = select(inf, 0.0, rhs > 0.0);
    } else if m == inf {
        r = select(0.0, inf, rhs > 0.0);
    } else if abs(rhs) == inf {
        r = select(0.0, inf, (m > 1.0) == (rhs > 0.0));
    } else {
        r = pow(m, rhs);
    }
    return select(r, -r, negative && odd);
}

// C fmod, exact like Rust's `%` (WGSL's f32 `%` is `a - b * trunc(a / b)`
// with a rounded quotient, and fma may not be fused): musl's fmodf, long
// division on the integer significands, one shift per binade between a and b.
fn fmodf(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    var ea = i32((ua >> 23u) & 0xffu);
    var eb = i32((ub >> 23u) & 0xffu);
    let sa = ua & 0x80000000u;
    if (ub << 1u) == 0u || is_nan(b) || ea == 0xff { return bitcast<f32>(NAN_BITS); }
    if (ua << 1u) <= (ub << 1u) {
        if (ua << 1u) == (ub << 1u) { return bitcast<f32>(sa); }
        return a;
    }
    var xa = ua;
    var xb = ub;
    if ea == 0 {
        var i = ua << 9u;
        while (i >> 31u) == 0u { ea -= 1; i <<= 1u; }
        xa = ua << u32(1 - ea);
    } else {
        xa = (ua & 0x007fffffu) | 0x00800000u;
    }
    if eb == 0 {
        var i = ub << 9u;
        while (i >> 31u) == 0u { eb -= 1; i <<= 1u; }
        xb = ub << u32(1 - eb);
    } else {
        xb = (ub & 0x007fffffu) | 0x00800000u;
    }
    for (; ea > eb; ea -= 1) {
        let i = xa - xb;
        if (i >> 31u) == 0u {
            if i == 0u { return bitcast<f32>(sa); }
            xa = i;
        }
        xa <<= 1u;
    }
    let i = xa - xb;
    if (i >> 31u) == 0u {
        if i == 0u { return bitcast<f32>(sa); }
        xa = i;
    }
    while (xa >> 23u) == 0u { xa <<= 1u; ea -= 1; }
    if ea > 0 {
        xa = (xa - 0x00800000u) | (u32(ea) << 23u);
    } else {
        xa >>= u32(1 - ea);
    }
    return bitcast<f32>(xa | sa);
}

// torch.remainder: fmod moved by b when its sign differs from the divisor's.
fn remainderf(a: f32, b: f32) -> f32 {
    let m = fmodf(a, b);
    if is_nan(m) { return m; }
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) { return m + b; }
    return m;
}

// torch.div(rounding_mode="floor") step for step as PyTorch's
// div_floor_floating (wgrad_core::ops::floor_divide_f32).
fn floor_dividef(a: f32, b: f32) -> f32 {
    if b == 0.0 {
        // a / 0 spelled out: under `b == 0` a compiler may fold the division.
        if a == 0.0 || is_nan(a) { return bitcast<f32>(NAN_BITS); }
        let sign = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
        return bitcast<f32>(INF_BITS | sign);
    }
    let m = fmodf(a, b);
    // NaN operands and an infinite dividend (fmod NaN) give NaN; tested on
    // the bits, since comparisons may assume no NaNs.
    if is_nan(m) { return bitcast<f32>(NAN_BITS); }
    var d = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) { d -= 1.0; }
    if d != 0.0 {
        var q = floor(d);
        if d - q > 0.5 { q += 1.0; }
        return q;
    }
    let neg = (bitcast<u32>(a / b) & 0x80000000u) != 0u;
    return select(0.0, bitcast<f32>(0x80000000u), neg);
}

fn apply(lhs: f32, rhs: f32) -> f32 {
    switch OP {
        case BINARY_ADD: { return lhs + rhs; }
        case BINARY_SUB: { return lhs - rhs; }
        case BINARY_MUL: { return lhs * rhs; }
        case BINARY_DIV: { return lhs / rhs; }
        case BINARY_POW: { return powf(lhs, rhs); }
        // NaN-propagating like torch.maximum/minimum (WGSL max/min are not).
        case BINARY_MAXIMUM: { if is_nan(lhs) || is_nan(rhs) { return bitcast<f32>(NAN_BITS); } return max(lhs, rhs); }
        case BINARY_MINIMUM: { if is_nan(lhs) || is_nan(rhs) { return bitcast<f32>(NAN_BITS); } return min(lhs, rhs); }
        case BINARY_FLOOR_DIVIDE: { return floor_dividef(lhs, rhs); }
        case BINARY_REMAINDER: { return remainderf(lhs, rhs); }
        // Not a BinaryOp code: NaN, so a missing case cannot pass for another op.
        default: { return bitcast<f32>(NAN_BITS); }
    }
}
