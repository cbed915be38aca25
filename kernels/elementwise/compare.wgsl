// Broadcasting comparison of two strided views (or of one view and a scalar),
// writing a contiguous u32 mask of 0/1.
// Bindings: 0 a (read), 1 b (read; ignored when SCALAR = 1, bind any buffer),
// 2 out (read_write, contiguous). Elements are read as 32-bit words and
// reinterpreted per INT.
// Immediates: CompareParams (`scalar` is used only when SCALAR = 1).
// Overrides: OP = wgrad_core::CompareOp::code() (case constants COMPARE_*);
// INT = 0 for f32 operands, 1 for i32 operands; SCALAR = 1 compares `a` with
// the f32 `scalar` instead of reading `b`. (sort_key.wgsl's KIND stays at
// its default, f32: only f32 operands go through its keys.)

//! include common/nan.wgsl
//! include common/sort_key.wgsl

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

// Floats in IEEE order by their bits (common/sort_key.wgsl's keys, +0 and
// -0 alike), not by float comparisons: GPUs that flush subnormals to zero
// (NVIDIA) compare a subnormal equal to 0, where the CPU and PyTorch do not
// (`x.bool()` of 1e-40 is true).
fn order_f32(x: u32, y: u32) -> i32 {
    if is_nan(bitcast<f32>(x)) || is_nan(bitcast<f32>(y)) { return UNORDERED; }
    let kx = sort_key(x, false);
    let ky = sort_key(y, false);
    if kx < ky { return LESS; }
    if kx > ky { return GREATER; }
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

// The mask value of `ord` under OP: 1 if the comparison holds, else 0.
// IEEE: every comparison with NaN (UNORDERED) is false except `!=`.
fn holds(ord: i32) -> u32 {
    switch OP {
        case COMPARE_EQ: { return select(0u, 1u, ord == EQUAL); }
        case COMPARE_NE: { return select(0u, 1u, ord != EQUAL); }
        case COMPARE_LT: { return select(0u, 1u, ord == LESS); }
        case COMPARE_LE: { return select(0u, 1u, ord == LESS || ord == EQUAL); }
        case COMPARE_GT: { return select(0u, 1u, ord == GREATER); }
        case COMPARE_GE: { return select(0u, 1u, ord == GREATER || ord == EQUAL); }
        // Not a CompareOp code: 2, a mask value no comparison produces.
        default: { return 2u; }
    }
}

// Both operands of logical element `i` (row-major walk over the broadcast
// shape; the outermost dim needs no division). In scalar mode only `a` is read.
fn load(i: u32) -> vec2<u32> {
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
    if SCALAR == 1u {
        return vec2<u32>(a[ia], 0u);
    }
    return vec2<u32>(a[ia], b[ib]);
}

fn result(v: vec2<u32>) -> u32 {
    var ord: i32;
    if SCALAR == 1u {
        if INT == 1u {
            ord = order_i32_f32(bitcast<i32>(v.x), p.scalar);
        } else {
            ord = order_f32(v.x, bitcast<u32>(p.scalar));
        }
    } else if INT == 1u {
        ord = order_i32(bitcast<i32>(v.x), bitcast<i32>(v.y));
    } else {
        ord = order_f32(v.x, v.y);
    }
    return holds(ord);
}

// Each thread handles EPT elements: thread `lid` of a tile of 256 * EPT
// elements takes `tile + lid + k * 256` (k < EPT), so every load and store
// instruction stays coalesced across the subgroup. A full tile issues all
// its loads before any store: with one 4-byte load in flight per thread an
// H200 reaches under half its HBM bandwidth, with eight about 90%. The host
// dispatches ceil(numel / EPT) threads.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

@compute @workgroup_size(256)
fn compare(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let v0 = load(i);
        let v1 = load(i + 256u);
        let v2 = load(i + 512u);
        let v3 = load(i + 768u);
        let v4 = load(i + 1024u);
        let v5 = load(i + 1280u);
        let v6 = load(i + 1536u);
        let v7 = load(i + 1792u);
        out[i] = result(v0);
        out[i + 256u] = result(v1);
        out[i + 512u] = result(v2);
        out[i + 768u] = result(v3);
        out[i + 1024u] = result(v4);
        out[i + 1280u] = result(v5);
        out[i + 1536u] = result(v6);
        out[i + 1792u] = result(v7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            out[j] = result(load(j));
        }
    }
}
