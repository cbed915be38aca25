//! Floor division and Python-style remainder: the f32 reference (PyTorch's
//! `div_floor_floating` and `remainder` kernels, step for step, so the
//! fixtures match bit for bit) and the I32 arithmetic of the ops that keep
//! integer operands integer.

use super::BinaryOp;

/// `torch.div(a, b, rounding_mode="floor")` on f32, as PyTorch computes it:
/// through `fmod`, so `a - mod` is an exact multiple of `b` and the quotient
/// is rounded to the nearest integer afterwards (a plain `floor(a / b)`
/// would be one off where `a / b` rounds up to an integer). A zero divisor
/// gives `a / b` (inf or NaN); a zero result keeps the sign of `a / b`.
pub fn floor_divide_f32(a: f32, b: f32) -> f32 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut q = div.floor();
        if div - q > 0.5 {
            q += 1.0;
        }
        q
    } else {
        0.0_f32.copysign(a / b)
    }
}

/// `torch.remainder` on f32: `fmod(a, b)`, moved by `b` when its sign
/// differs from the divisor's (Python's `%`). NaN for a zero divisor.
pub fn remainder_f32(a: f32, b: f32) -> f32 {
    let m = a % b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else {
        m
    }
}

impl BinaryOp {
    /// Whether two I32 operands give an I32 result (PyTorch's type
    /// promotion): every op but true division, which gives F32.
    pub fn keeps_int(self) -> bool {
        !matches!(self, BinaryOp::Div)
    }

    /// Whether a zero divisor is an error on integers (PyTorch's
    /// `ZeroDivisionError`): floor division and remainder.
    pub fn divides(self) -> bool {
        matches!(self, BinaryOp::FloorDiv | BinaryOp::Remainder)
    }

    /// The op on two i32 values with two's-complement wrapping (as PyTorch's
    /// int32 arithmetic on every device). A zero divisor of floor division
    /// or remainder gives 0 here; callers reject it first (on the CPU an
    /// error, on the GPU the device fault). Ops that do not keep integers
    /// ([`keeps_int`](Self::keeps_int) is false) also give 0.
    pub fn apply_i32(self, a: i32, b: i32) -> i32 {
        match self {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Maximum => a.max(b),
            BinaryOp::Minimum => a.min(b),
            BinaryOp::FloorDiv if b != 0 => {
                let q = a.wrapping_div(b);
                if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            BinaryOp::Remainder if b != 0 => {
                let r = a.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) {
                    r.wrapping_add(b)
                } else {
                    r
                }
            }
            BinaryOp::Pow => int_pow(a, b),
            BinaryOp::FloorDiv | BinaryOp::Remainder | BinaryOp::Div => 0,
        }
    }
}

/// `a ** b` on int32 as PyTorch computes it (`powi`): by squaring, wrapping
/// on overflow; a negative exponent gives 0 except for a base of 1 (1) or
/// -1 (-1 for odd exponents, else 1).
fn int_pow(a: i32, b: i32) -> i32 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 if b % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut base, mut e, mut r) = (a, b.unsigned_abs(), 1i32);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_floor_division_and_remainder_follow_python() {
        for (a, b, q, r) in [
            (7, 2, 3, 1),
            (-7, 2, -4, 1),
            (7, -2, -4, -1),
            (-7, -2, 3, -1),
            (6, 3, 2, 0),
            (-6, 3, -2, 0),
            (0, -5, 0, 0),
            (i32::MIN, -1, i32::MIN, 0),
        ] {
            assert_eq!(BinaryOp::FloorDiv.apply_i32(a, b), q, "{a} // {b}");
            assert_eq!(BinaryOp::Remainder.apply_i32(a, b), r, "{a} % {b}");
        }
        assert_eq!(BinaryOp::Add.apply_i32(i32::MAX, 1), i32::MIN);
    }

    #[test]
    fn float_floor_division_and_remainder_follow_torch() {
        assert_eq!(floor_divide_f32(7.5, 2.0), 3.0);
        assert_eq!(floor_divide_f32(-7.5, 2.0), -4.0);
        assert_eq!(floor_divide_f32(7.5, -2.0), -4.0);
        assert_eq!(remainder_f32(-7.5, 2.0), 0.5);
        assert_eq!(remainder_f32(7.5, -2.0), -0.5);
        assert!(floor_divide_f32(-0.5, 2.0) == -1.0);
        assert!(floor_divide_f32(0.5, -2.0) == -1.0);
        assert!(floor_divide_f32(0.0, -2.0).is_sign_negative());
        assert_eq!(floor_divide_f32(1.0, 0.0), f32::INFINITY);
        assert!(remainder_f32(1.0, 0.0).is_nan());
        assert!(remainder_f32(f32::NAN, 1.0).is_nan());
        assert_eq!(remainder_f32(3.0, f32::INFINITY), 3.0);
    }
}
