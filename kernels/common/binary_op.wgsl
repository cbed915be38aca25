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
        // Not a BinaryOp code: NaN, so a missing case cannot pass for another op.
        default: { return bitcast<f32>(NAN_BITS); }
    }
}
