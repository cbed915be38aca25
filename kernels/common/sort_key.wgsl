// Sort keys: a u32 whose unsigned order is the value order, the function
// wgrad_core::checks::sort::sort_key (NaN largest whatever its sign, -0.0
// equal to +0.0; inverted when descending). The including kernel reads
// elements as raw u32 bits; the override KIND says what they are:
// 0 f32, 1 i32, 2 u32 (KeyKind::code()).

override KIND: u32 = 0u;

fn sort_key(bits: u32, descending: bool) -> u32 {
    var key = bits;
    if KIND == 0u {
        if (bits & 0x7fffffffu) > 0x7f800000u {
            key = 0xffffffffu;
        } else if bits == 0x80000000u {
            key = 0x80000000u;
        } else if (bits & 0x80000000u) != 0u {
            key = ~bits;
        } else {
            key = bits | 0x80000000u;
        }
    } else if KIND == 1u {
        key = bits ^ 0x80000000u;
    }
    if descending {
        key = ~key;
    }
    return key;
}
