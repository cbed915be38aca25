//! Scalar math written so that loops over it vectorise.
//!
//! `f32::exp` is a call into libm per element, which no compiler turns into
//! vector code; softmax, cross-entropy and the exponential activations spend
//! most of their CPU time there. [`exp`] is straight-line arithmetic (no
//! branches, no table lookups), so a loop of it compiles to SIMD code on
//! any target, within 1 ulp of the exact value (tested against f64 below).

/// Largest input whose exponential is finite in f32 is about 88.72; above
/// this clamp the result is +inf anyway, and the clamp keeps the exponent
/// arithmetic below in range.
const EXP_HI: f32 = 89.0;
/// Below about -103.97 the exponential rounds to 0 even as a subnormal.
const EXP_LO: f32 = -104.0;
/// `ln 2` split in two (Cody-Waite): `LN2_HI` has few enough significant
/// bits that `n * LN2_HI` is exact for every `n` the clamp allows.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5 * 2^23`: adding it rounds a float of magnitude below 2^22 to an
/// integer held in the low mantissa bits (round-to-nearest, no libm call).
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `e^x` in f32, within 1 ulp of the exact value; NaN stays NaN,
/// `-inf` gives 0 and `+inf` gives `+inf`, as `f32::exp` does.
///
/// `x = n ln2 + r` with `|r| <= ln2 / 2`; `e^r` from a degree-6
/// polynomial (Cephes' `expf` coefficients), then scaled by `2^n` in two
/// halves so that subnormal results and `n = 128` need no special case.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // `clamp` keeps NaN as NaN, which then flows through every step.
    let x = x.clamp(EXP_LO, EXP_HI);
    let t = x * std::f32::consts::LOG2_E + ROUND_MAGIC;
    let n_f = t - ROUND_MAGIC;
    // The integer n sits in the low bits of `t` (offset by the magic's).
    let n = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = x - n_f * LN2_HI - n_f * LN2_LO;
    let r2 = r * r;
    let poly = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
        * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let er = poly * r2 + r + 1.0;
    // 2^n as two normal powers of two (n in [-151, 129] here).
    let n1 = n >> 1;
    let n2 = n - n1;
    let pow2 = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    er * pow2(n1) * pow2(n2)
}

/// `1 / sqrt(2 * pi)`, the peak of the standard normal density.
pub(crate) const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// `sigmoid'(x) = s(x) * s(-x)`, as `e / (1 + e)^2` with `e = exp(-|x|)` so
/// that neither tail cancels or overflows.
pub(crate) fn sigmoid_derivative(x: f32) -> f32 {
    let e = exp(-x.abs());
    e / ((1.0 + e) * (1.0 + e))
}

/// Logistic sigmoid, written to avoid overflow for large |x|.
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + exp(-x))
    } else {
        let e = exp(x);
        e / (1.0 + e)
    }
}

/// Error function (`torch.erf`): a Taylor series for |x| < 0.5, `1 - erfc`
/// beyond (Numerical Recipes' `erfcc`, relative error < 1.2e-7). `kernels/common/activation.wgsl`
/// uses the same formulas, so CPU and GPU erf and GELU agree.
///
/// Both branches are computed and one selected, so loops over it (GELU
/// forward and backward) vectorise; each value is exactly what the
/// branching form gives.
#[inline]
pub fn erf(x: f32) -> f32 {
    // Near 0 the Taylor series (to x^13; the next term is below 5e-10 at
    // |x| = 0.5) keeps full relative precision, which 1 - erfc cannot.
    let x2 = x * x;
    let series = x
        * (std::f32::consts::FRAC_2_SQRT_PI
            + x2 * (-0.376_126_4
                + x2 * (0.112_837_92
                    + x2 * (-0.026_866_17
                        + x2 * (0.005_223_977_6
                            + x2 * (-0.000_854_832_5 + x2 * 0.000_120_553_33))))));
    // erfc by Numerical Recipes' Chebyshev fit (relative error < 1.2e-7).
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_2 + t * 0.170_872_77))))))));
    let erfc = t * exp(-z * z + poly);
    let tail = if x < 0.0 { erfc - 1.0 } else { 1.0 - erfc };
    if z < 0.5 { series } else { tail }
}

/// Exact GELU (`torch.nn.functional.gelu`, `approximate="none"`):
/// `x * Phi(x)`.
#[inline]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Derivative of [`gelu`]: `Phi(x) + x * phi(x)`.
#[inline]
pub fn gelu_derivative(x: f32) -> f32 {
    let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
    let pdf = exp(-0.5 * x * x) * FRAC_1_SQRT_2PI;
    cdf + x * pdf
}

#[cfg(test)]
mod tests {
    use super::exp;

    /// Distance in units in the last place between `got` and the f64 truth.
    fn ulps(got: f32, x: f32) -> f64 {
        let want = (x as f64).exp();
        let ulp = (want as f32).abs().max(f32::MIN_POSITIVE * f32::EPSILON);
        let spacing = f32::from_bits(ulp.to_bits() + 1) - ulp;
        ((got as f64) - want).abs() / spacing as f64
    }

    #[test]
    fn exp_is_within_one_ulp_across_the_range() {
        // Every 331st f32 bit pattern between -104 and 89 (about 7M values
        // spread over every exponent), plus the range ends.
        let mut worst: (f64, f32) = (0.0, 0.0);
        let mut check = |x: f32| {
            let e = ulps(exp(x), x);
            if e > worst.0 {
                worst = (e, x);
            }
        };
        for bits in (0u32..=89.0f32.to_bits()).step_by(331) {
            check(f32::from_bits(bits));
        }
        for bits in (0x8000_0000u32..=(-104.0f32).to_bits()).step_by(331) {
            check(f32::from_bits(bits));
        }
        for x in [88.72, 88.7228, -87.33, -103.9, -103.97, 1e-30, -1e-30] {
            check(x);
        }
        // Measured: 0.98 ulp at worst.
        assert!(worst.0 <= 1.0, "{} ulp at x = {}", worst.0, worst.1);
    }

    #[test]
    fn exp_special_values_match_std() {
        for x in [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            88.72,
            88.73,
            89.0,
            100.0,
            1e30,
            f32::INFINITY,
            -87.0,
            -100.0,
            -103.0,
            -104.0,
            -1e30,
            f32::NEG_INFINITY,
        ] {
            let (got, want) = (exp(x), x.exp());
            assert!(
                got == want || (got - want).abs() <= want * 2.0 * f32::EPSILON,
                "exp({x}) = {got}, std gives {want}"
            );
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert!(exp(f32::NAN).is_nan());
    }
}
