// f32 binary arithmetic between a strided view and one scalar, writing contiguous.
// Bindings: 0 x (read), 1 out (read_write, contiguous).
// Immediates: ScalarParams (the scalar travels here; no buffer is uploaded for it).
// Override OP selects the operation (codes of wgrad_core::BinaryOp: 0 add,
// 1 sub, 2 mul, 3 div, 4 pow, 5 maximum, 6 minimum); override LEFT = 1 puts
// the scalar on the left (`s - x`, `s ^ x`), 0 on the right (`x - s`).
// `apply` is the same function as in binary.wgsl (WGSL has no includes);
// keep the two in step.

struct ScalarParams {
    numel: u32,
    rank: u32,
    offset: u32,
    scalar: f32,
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: ScalarParams;
override OP: u32 = 0u;
override LEFT: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

const NAN_BITS: u32 = 0x7fc00000u;
const INF_BITS: u32 = 0x7f800000u;

fn is_nan(v: f32) -> bool {
    // WGSL may assume no NaNs in float comparisons; test the bit pattern instead.
    let bits = bitcast<u32>(v);
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u;
}

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
        case 0u: { return lhs + rhs; }
        case 1u: { return lhs - rhs; }
        case 2u: { return lhs * rhs; }
        case 3u: { return lhs / rhs; }
        case 4u: { return powf(lhs, rhs); }
        // NaN-propagating like torch.maximum/minimum (WGSL max/min are not).
        case 5u: { if is_nan(lhs) || is_nan(rhs) { return bitcast<f32>(NAN_BITS); } return max(lhs, rhs); }
        default: { if is_nan(lhs) || is_nan(rhs) { return bitcast<f32>(NAN_BITS); } return min(lhs, rhs); }
    }
}

// The scalar on the side LEFT asks for.
fn op(v: f32) -> f32 {
    if LEFT == 1u {
        return apply(p.scalar, v);
    }
    return apply(v, p.scalar);
}

// Each thread handles EPT elements: thread `lid` of a tile of 256 * EPT
// elements takes `tile + lid + k * 256` (k < EPT), so every load and store
// instruction stays coalesced across the subgroup. A full tile issues all
// its loads before any store: with one 4-byte load in flight per thread an
// H200 reaches under half its HBM bandwidth, with eight about 90%. The host
// dispatches ceil(numel / EPT) threads.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

// Offset of logical element `i` in the strided input (row-major walk; the
// outermost dim needs no division, so a view the host coalesced to rank 1
// costs none).
fn offset_of(i: u32) -> u32 {
    var rem = i;
    var at = p.offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        at += (rem % dim) * p.strides[d];
        rem /= dim;
    }
    return at + rem * p.strides[0];
}

@compute @workgroup_size(256)
fn binary_scalar(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let v0 = x[offset_of(i)];
        let v1 = x[offset_of(i + 256u)];
        let v2 = x[offset_of(i + 512u)];
        let v3 = x[offset_of(i + 768u)];
        let v4 = x[offset_of(i + 1024u)];
        let v5 = x[offset_of(i + 1280u)];
        let v6 = x[offset_of(i + 1536u)];
        let v7 = x[offset_of(i + 1792u)];
        out[i] = op(v0);
        out[i + 256u] = op(v1);
        out[i + 512u] = op(v2);
        out[i + 768u] = op(v3);
        out[i + 1024u] = op(v4);
        out[i + 1280u] = op(v5);
        out[i + 1536u] = op(v6);
        out[i + 1792u] = op(v7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            out[j] = op(x[offset_of(j)]);
        }
    }
}
