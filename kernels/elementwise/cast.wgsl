// Entry point `cast_dtype` (`cast` is a reserved word in WGSL).
// Dtype conversion of a strided view into a contiguous tensor, with Rust `as`
// semantics (what the CPU reference does).
// Bindings: 0 src (read, 32-bit words), 1 dst (read_write, contiguous words).
// Immediates: CastParams. Overrides FROM and TO pick the dtypes:
// 0 = f32, 1 = i32, 2 = u32 (the codes ops/cast.rs passes). FROM == TO, and
// i32 <-> u32 (two's-complement reinterpretation), copy the word unchanged.

//! include common/nan.wgsl

struct CastParams {
    numel: u32,
    rank: u32,
    offset: u32,
    shape: array<u32, 6>,
    strides: array<u32, 6>,
}

var<immediate> p: CastParams;
override FROM: u32 = 0u;
override TO: u32 = 0u;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

// f32 -> i32: truncate toward zero, saturate, NaN -> 0. Spelled out because
// out-of-range float-to-int conversion is not pinned down on every backend.
fn f32_to_i32(v: f32) -> i32 {
    if is_nan(v) { return 0; }
    if v >= 2147483648.0 { return 2147483647; }
    if v <= -2147483648.0 { return i32(-2147483647) - 1; }
    return i32(v);
}

// f32 -> u32: truncate toward zero, saturate (negatives -> 0), NaN -> 0.
fn f32_to_u32(v: f32) -> u32 {
    if is_nan(v) || v <= 0.0 { return 0u; }
    if v >= 4294967296.0 { return 4294967295u; }
    return u32(v);
}

fn convert(w: u32) -> u32 {
    if FROM == 0u && TO == 1u { return bitcast<u32>(f32_to_i32(bitcast<f32>(w))); }
    if FROM == 0u && TO == 2u { return f32_to_u32(bitcast<f32>(w)); }
    if FROM == 1u && TO == 0u { return bitcast<u32>(f32(bitcast<i32>(w))); }
    if FROM == 2u && TO == 0u { return bitcast<u32>(f32(w)); }
    return w;
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
fn cast_dtype(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let w0 = src[offset_of(i)];
        let w1 = src[offset_of(i + 256u)];
        let w2 = src[offset_of(i + 512u)];
        let w3 = src[offset_of(i + 768u)];
        let w4 = src[offset_of(i + 1024u)];
        let w5 = src[offset_of(i + 1280u)];
        let w6 = src[offset_of(i + 1536u)];
        let w7 = src[offset_of(i + 1792u)];
        dst[i] = convert(w0);
        dst[i + 256u] = convert(w1);
        dst[i + 512u] = convert(w2);
        dst[i + 768u] = convert(w3);
        dst[i + 1024u] = convert(w4);
        dst[i + 1280u] = convert(w5);
        dst[i + 1536u] = convert(w6);
        dst[i + 1792u] = convert(w7);
        return;
    }
    // Last, partial tile: element by element, bounds-checked.
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            dst[j] = convert(src[offset_of(j)]);
        }
    }
}
