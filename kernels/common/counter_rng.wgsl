// The counter-based generator of wgrad_core::random, bit for bit: the
// lowbias32 hash, the keyed bits of (stream, counter), the 24-bit unit
// float, and a plain-arithmetic natural log (musl's logf) for the samplers
// that need one (Box-Muller, exponential keys), because the builtin log's
// precision is implementation-defined.

fn mix32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// wgrad_core::random::random_bits under keys (key0, key1).
fn counter_bits(key0: u32, key1: u32, stream: u32, counter: u32) -> u32 {
    let k1 = key1 ^ (stream * 0x27d4eb2fu);
    return mix32((mix32(counter ^ key0) + k1) ^ 0x165667b1u);
}

fn bits_to_unit(bits: u32) -> f32 {
    // 24 bits convert exactly; the scale is a power of two.
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}

// Natural log for normal positive finite x (musl logf, float version).
fn ln(x: f32) -> f32 {
    var ix = bitcast<u32>(x);
    if ix == 0x3f800000u {
        return 0.0;
    }
    // Reduce x into [sqrt(2)/2, sqrt(2)): x = 2^k * m.
    ix += 0x3f800000u - 0x3f3504f3u;
    let k = i32(ix >> 23u) - 0x7f;
    ix = (ix & 0x007fffffu) + 0x3f3504f3u;
    let m = bitcast<f32>(ix);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (0.40000972152 + w * 0.24279078841);
    let t2 = z * (0.66666662693 + w * 0.28498786688);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = f32(k);
    return s * (hfsq + r) + dk * 9.0580006145e-06 - hfsq + f + dk * 6.9313812256e-01;
}

