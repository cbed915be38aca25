// Counter-based random numbers, bit-for-bit the generator of
// wgrad_core::random: element i = f(seed keys, i). The host computes the
// keys with `seed_keys(seed)` and passes them as immediates.
// Bindings: 0 out (read_write, f32, contiguous). Immediates: RandomParams.
//
// `rand_uniform` reproduces `uniform` exactly: every step is a correctly
// rounded f32 operation, and the multiply is kept apart from the add (see
// `unfused`) so that a compiler cannot contract them into an FMA.
// `rand_normal` is Box–Muller like `normal`; its log and cos are evaluated
// here in plain f32 arithmetic (musl's logf and sin/cos kernels) rather than
// with the builtins, whose precision is implementation-defined: a fast
// log that is off by 2^-22 absolute near 1 would turn -2*ln(u1) negative
// and the result NaN. The difference to the CPU is a few f32 ulps.

struct RandomParams {
    numel: u32,
    key0: u32,
    key1: u32,
    // Bits of low / mean.
    a: u32,
    // Bits of high / std.
    b: u32,
    // Always 0; XOR-ed into an intermediate so the compiler cannot see
    // through it (and so cannot fuse a multiply into the following add).
    zero: u32,
}

var<immediate> p: RandomParams;

//! include common/counter_rng.wgsl

@group(0) @binding(0) var<storage, read_write> out: array<f32>;

fn random_bits(stream: u32, counter: u32) -> u32 {
    return counter_bits(p.key0, p.key1, stream, counter);
}

fn unfused(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ p.zero);
}

// cos(r) and sin(r) for |r| <= pi/4 (musl __cosdf / __sindf coefficients).
fn cos_kernel(r: f32) -> f32 {
    let z = r * r;
    let w = z * z;
    let c = 0.0416666233237390631894 + z * -0.00138867637746099294692;
    return ((1.0 + z * -0.499999997251031003120) + w * c) + (w * z) * (z * 0.0000243904487962774090654);
}

fn sin_kernel(r: f32) -> f32 {
    let z = r * r;
    let w = z * z;
    let s = z * r;
    let t = -0.000198393348360966317347 + z * 0.0000027183114939898219064;
    return (r + s * (-0.166666666416265235595 + z * 0.0083333293858894631756)) + s * w * t;
}

// cos(x) for 0 <= x < 2*pi + a little (the Box–Muller angle).
fn cos_angle(x: f32) -> f32 {
    let j = round(x * 0.636619772367581343076); // 2/pi
    // Cody–Waite: pi/2 in three parts; the first two have few enough bits (8 and 20)
    // that j * part is exact for j <= 4.
    let r = ((x - j * 1.5703125) - j * 4.8382673412561417e-4) - j * 6.0771006e-11;
    switch u32(j) & 3u {
        case 0u: { return cos_kernel(r); }
        case 1u: { return -sin_kernel(r); }
        case 2u: { return -cos_kernel(r); }
        default: { return sin_kernel(r); }
    }
}

@compute @workgroup_size(256)
fn rand_uniform(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let low = bitcast<f32>(p.a);
    let high = bitcast<f32>(p.b);
    let scaled = unfused((high - low) * bits_to_unit(random_bits(0u, i)));
    out[i] = low + scaled;
}

@compute @workgroup_size(256)
fn rand_normal(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let mean = bitcast<f32>(p.a);
    let sd = bitcast<f32>(p.b);
    // u1 in (0, 1]: the log is finite (u1 >= 2^-24 is a normal float).
    let u1 = 1.0 - bits_to_unit(random_bits(0u, i));
    let u2 = bits_to_unit(random_bits(1u, i));
    let r = sqrt(-2.0 * ln(u1));
    let angle = unfused(6.28318530717958647692 * u2);
    out[i] = mean + sd * r * cos_angle(angle);
}
