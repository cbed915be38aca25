// IEEE special values by bit pattern, and a NaN test that survives fast-math:
// WGSL may assume no NaNs in float comparisons, so test the bits instead.

const NAN_BITS: u32 = 0x7fc00000u;
const INF_BITS: u32 = 0x7f800000u;

fn is_nan(v: f32) -> bool {
    let bits = bitcast<u32>(v);
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u;
}
