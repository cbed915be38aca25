// randint: element i is low + the high word of bits(i) * range (Lemire's
// multiply-shift; range 0 means all 2^32 values), bit for bit
// wgrad_core::random::uniform_int. randperm draws its sort keys with
// range 0.
// Bindings: 0 out (read_write, i32 as raw u32). Immediates: RandintParams.

//! include common/counter_rng.wgsl

struct RandintParams {
    numel: u32,
    key0: u32,
    key1: u32,
    // Bits of the i32 low end.
    low: u32,
    // high - low; 0 for the full 32-bit range.
    range: u32,
}

var<immediate> p: RandintParams;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

// High 32 bits of the 64-bit product a * b, from 16-bit halves.
fn mul_hi(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let hi_lo = a_hi * b_lo;
    // At most 0xffff + 0xffff + 0xfffe0001 = 0xffffffff: no overflow.
    let cross = ((a_lo * b_lo) >> 16u) + (hi_lo & 0xffffu) + a_lo * b_hi;
    return a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u);
}

@compute @workgroup_size(256)
fn randint(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let bits = counter_bits(p.key0, p.key1, 0u, i);
    var offset = bits;
    if p.range != 0u {
        offset = mul_hi(bits, p.range);
    }
    out[i] = p.low + offset;
}
