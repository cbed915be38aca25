// Broadcasting comparison of two strided views (or of one view and a scalar),
// writing a contiguous u32 mask of 0/1.
// Bindings: 0 a (read), 1 b (read; ignored when SCALAR = 1, bind any buffer),
// 2 out (read_write, contiguous). Elements are read as 32-bit words and
// reinterpreted per INT.
// Immediates: CompareParams (`scalar` is used only when SCALAR = 1).
// Overrides: OP = wgrad_core::CompareOp::code() (0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge);
// INT = 0 for f32 operands, 1 for i32 operands; SCALAR = 1 compares `a` with
// the f32 `scalar` instead of reading `b`.

struct CompareParams {
    numel: u32,
    rank: u32,
    a_offset: u32,
    b_offset: u32,
    scalar: f32,
    shape: array<u32, 6>,
    a_strides: array<u32, 6>,
    b_strides: array<u32, 6>,
}

var<immediate> p: CompareParams;
override OP: u32 = 0u;
override INT: u32 = 0u;
override SCALAR: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// Result of a three-way comparison: less, equal, greater, or unordered (NaN).
const LESS: i32 = -1;
const EQUAL: i32 = 0;
const GREATER: i32 = 1;
const UNORDERED: i32 = 2;

fn is_nan(v: f32) -> bool {
    // WGSL may assume no NaNs in float comparisons; test the bit pattern instead.
    let bits = bitcast<u32>(v);
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u;
}

fn order_f32(x: f32, y: f32) -> i32 {
    if is_nan(x) || is_nan(y) { return UNORDERED; }
    if x < y { return LESS; }
    if x > y { return GREATER; }
    return EQUAL;
}

fn order_i32(x: i32, y: i32) -> i32 {
    if x < y { return LESS; }
    if x > y { return GREATER; }
    return EQUAL;
}

// Exact order of an integer and a float, as if both were widened to f64
// (what the CPU reference does): no rounding of `x` to f32, so it holds for
// every i32, not only |x| < 2^24. With f = floor(y) (an integer, exactly
// representable as i32 when -2^31 <= y < 2^31): x < f means x < y, x > f
// means x > y (y < f + 1 <= x), and x == f means equal iff y has no fraction.
fn order_i32_f32(x: i32, y: f32) -> i32 {
    if is_nan(y) { return UNORDERED; }
    if y >= 2147483648.0 { return LESS; }
    if y < -2147483648.0 { return GREATER; }
    let f = floor(y);
    let fi = i32(f);
    if x < fi { return LESS; }
    if x > fi { return GREATER; }
    if y == f { return EQUAL; }
    return LESS;
}

fn holds(ord: i32) -> bool {
    // IEEE: every comparison with NaN is false except `!=`.
    if ord == UNORDERED { return OP == 1u; }
    switch OP {
        case 0u: { return ord == EQUAL; }
        case 1u: { return ord != EQUAL; }
        case 2u: { return ord == LESS; }
        case 3u: { return ord != GREATER; }
        case 4u: { return ord == GREATER; }
        default: { return ord != LESS; }
    }
}

@compute @workgroup_size(256)
fn compare(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    // Row-major walk; the outermost dim needs no division.
    var rem = i;
    var ia = p.a_offset;
    var ib = p.b_offset;
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        ia += k * p.a_strides[d];
        ib += k * p.b_strides[d];
    }
    ia += rem * p.a_strides[0];
    ib += rem * p.b_strides[0];
    let x = a[ia];
    var ord: i32;
    if SCALAR == 1u {
        if INT == 1u {
            ord = order_i32_f32(bitcast<i32>(x), p.scalar);
        } else {
            ord = order_f32(bitcast<f32>(x), p.scalar);
        }
    } else {
        let y = b[ib];
        if INT == 1u {
            ord = order_i32(bitcast<i32>(x), bitcast<i32>(y));
        } else {
            ord = order_f32(bitcast<f32>(x), bitcast<f32>(y));
        }
    }
    out[i] = select(0u, 1u, holds(ord));
}
