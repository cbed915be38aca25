// The 16-bit float dtypes (F16, BF16) on 32-bit words, and their
// conversions to and from f32, all in integer arithmetic on bit patterns.
//
// Storage: element i of a half tensor is the low 16 bits of word i / 2 when
// i is even, the high 16 bits when odd (little-endian: the buffer's bytes
// are the host `[f16]` slice). Nothing here needs the SHADER_F16 feature.
//
// Why by hand: WGSL's pack2x16float / unpack2x16float may do anything on
// overflow and NaN, f32 arithmetic may flush subnormals (NVIDIA's Vulkan
// driver does), and the result must equal the CPU backend's `half` crate
// bit for bit. So these functions mirror `half` 2.x (`f32_to_f16_fallback`,
// `f16_to_f32_fallback`, `f32_to_bf16`, `bf16_to_f32`, which its x86 F16C
// path agrees with): round to nearest even, overflow to infinity,
// subnormals kept, and a NaN stays a NaN with the quiet bit set and the top
// of its payload kept.
//
// Every value below is a u32 holding a bit pattern: a 16-bit one in its low
// half, or an f32's bits.

// The 16 bits of half element `at` of `words` (as laid out above).
fn half_of_word(word: u32, at: u32) -> u32 {
    return (word >> ((at & 1u) * 16u)) & 0xffffu;
}

// f16 -> f32: exact (every f16, subnormals included, is a normal f32).
fn f16_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let exp = (h >> 10u) & 0x1fu;
    let man = h & 0x3ffu;
    if exp == 0x1fu {
        if man == 0u {
            return sign | 0x7f800000u;
        }
        return sign | 0x7fc00000u | (man << 13u);
    }
    if exp == 0u {
        if man == 0u {
            return sign;
        }
        // man * 2^-24 with its leading one at bit p = 31 - clz: exponent
        // field p - 24 + 127, the bits below the leading one shifted up to
        // the top of the 23-bit fraction.
        let lz = countLeadingZeros(man);
        return sign | ((134u - lz) << 23u) | ((man << (lz - 8u)) & 0x7fffffu);
    }
    return sign | ((exp + 112u) << 23u) | (man << 13u);
}

// bf16 -> f32: the top half of the f32 (NaN quieted, as `half` does).
fn bf16_to_f32_bits(h: u32) -> u32 {
    if (h & 0x7fffu) > 0x7f80u {
        return (h | 0x40u) << 16u;
    }
    return h << 16u;
}

// Whether the bits below `round_bit` (a power of two) round the kept part
// up: the round bit set and either a sticky bit below it or the kept
// part's lowest bit (the bit above) set: round to nearest, ties to even.
fn rounds_up(bits: u32, round_bit: u32) -> bool {
    return (bits & round_bit) != 0u && (bits & (3u * round_bit - 1u)) != 0u;
}

// f32 -> f16, round to nearest even.
fn f32_to_f16_bits(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let exp = x & 0x7f800000u;
    let man = x & 0x007fffffu;
    if exp == 0x7f800000u {
        // Infinity, or NaN: quiet bit set, top 9 payload bits kept.
        let quiet = select(0u, 0x200u, man != 0u);
        return sign | 0x7c00u | quiet | (man >> 13u);
    }
    let half_exp = i32(exp >> 23u) - 112;
    if half_exp >= 0x1f {
        return sign | 0x7c00u;
    }
    if half_exp <= 0 {
        // Subnormal result (or zero): the value with its hidden bit, shifted
        // so that 2^-24 is the last bit kept (a shift of 14 to 24).
        if half_exp < -10 {
            return sign;
        }
        let m = man | 0x00800000u;
        let shift = u32(14 - half_exp);
        let kept = m >> shift;
        return sign | (kept + select(0u, 1u, rounds_up(m, 1u << (shift - 1u))));
    }
    // A carry out of the fraction moves into the exponent, and from the
    // largest finite value to infinity, as it should.
    let kept = sign | (u32(half_exp) << 10u) | (man >> 13u);
    return kept + select(0u, 1u, rounds_up(man, 0x1000u));
}

// f32 -> bf16, round to nearest even.
fn f32_to_bf16_bits(x: u32) -> u32 {
    if (x & 0x7fffffffu) > 0x7f800000u {
        return ((x >> 16u) | 0x40u) & 0xffffu;
    }
    return (x >> 16u) + select(0u, 1u, rounds_up(x, 0x8000u));
}

// Element `at` of a tensor of dtype `kind` (cast.wgsl's codes: 0 f32, 3 f16,
// 4 bf16) as f32, given the 32-bit word it sits in (word `at` for f32, word
// `at / 2` for the 16-bit dtypes).
fn word_to_f32(kind: u32, word: u32, at: u32) -> f32 {
    if kind == 3u { return bitcast<f32>(f16_to_f32_bits(half_of_word(word, at))); }
    if kind == 4u { return bitcast<f32>(bf16_to_f32_bits(half_of_word(word, at))); }
    return bitcast<f32>(word);
}

// An f32 as the 16 bits of `kind` (3 f16, 4 bf16), rounded to nearest even.
fn f32_to_half_bits(kind: u32, v: f32) -> u32 {
    if kind == 4u { return f32_to_bf16_bits(bitcast<u32>(v)); }
    return f32_to_f16_bits(bitcast<u32>(v));
}
