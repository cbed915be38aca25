// Entry points `cast_dtype` (`cast` is a reserved word in WGSL), for 32-bit
// outputs, and `cast_half`, for 16-bit ones.
// Dtype conversion of a strided view into a contiguous tensor, with Rust `as`
// semantics (what the CPU reference does).
// Bindings: 0 src (read, 32-bit words), 1 dst (read_write, contiguous words,
// from word 0). Immediates: CastParams (in elements of the source dtype).
// Overrides FROM and TO pick the dtypes: 0 = f32, 1 = i32, 2 = u32, 3 = f16,
// 4 = bf16 (the codes ops/cast.rs passes). FROM == TO, and i32 <-> u32
// (two's-complement reinterpretation), copy the bits unchanged. A 16-bit
// float goes through f32 (exact) to any other dtype, and anything goes
// through f32 to a 16-bit float, as the CPU backend does: so f16 -> i32
// truncates like f32 -> i32, and i32 -> f16 rounds twice (to f32, then to
// f16), exactly as `half::f16::from_f32(x as f32)`.

//! include common/nan.wgsl
//! include common/half.wgsl

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

// Whether FROM is a 16-bit float (two elements per source word).
fn from_half() -> bool {
    return FROM >= 3u;
}

// Source element `at` in its 32-bit form: the word itself, or a 16-bit
// float widened to f32 bits.
fn load(at: u32) -> u32 {
    if FROM == 3u { return f16_to_f32_bits(half_of_word(src[at >> 1u], at)); }
    if FROM == 4u { return bf16_to_f32_bits(half_of_word(src[at >> 1u], at)); }
    return src[at];
}

// A loaded element (see `load`: a widened half is f32 bits) in the 32-bit
// dtype TO (0, 1 or 2).
fn convert(w: u32) -> u32 {
    let wide = select(FROM, 0u, from_half());
    if wide == 0u && TO == 1u { return bitcast<u32>(f32_to_i32(bitcast<f32>(w))); }
    if wide == 0u && TO == 2u { return f32_to_u32(bitcast<f32>(w)); }
    if wide == 1u && TO == 0u { return bitcast<u32>(f32(bitcast<i32>(w))); }
    if wide == 2u && TO == 0u { return bitcast<u32>(f32(w)); }
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
        let w0 = load(offset_of(i));
        let w1 = load(offset_of(i + 256u));
        let w2 = load(offset_of(i + 512u));
        let w3 = load(offset_of(i + 768u));
        let w4 = load(offset_of(i + 1024u));
        let w5 = load(offset_of(i + 1280u));
        let w6 = load(offset_of(i + 1536u));
        let w7 = load(offset_of(i + 1792u));
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
            dst[j] = convert(load(offset_of(j)));
        }
    }
}

// Logical element `i` as the 16 bits of the 16-bit float TO: the raw bits
// when FROM == TO (a copy keeps every bit, NaN payloads included), else
// through f32.
fn half_element(i: u32) -> u32 {
    let at = offset_of(i);
    if FROM == TO {
        return half_of_word(src[at >> 1u], at);
    }
    var w = load(at);
    if FROM == 1u { w = bitcast<u32>(f32(bitcast<i32>(w))); }
    if FROM == 2u { w = bitcast<u32>(f32(w)); }
    if TO == 3u { return f32_to_f16_bits(w); }
    return f32_to_bf16_bits(w);
}

// Two elements, the pair of output word `k`, in that word (the second
// only if it exists: an odd count leaves the last word's high half 0).
fn half_word(k: u32) -> u32 {
    let i = 2u * k;
    var word = half_element(i);
    if i + 1u < p.numel {
        word |= half_element(i + 1u) << 16u;
    }
    return word;
}

// TO is 3 (f16) or 4 (bf16): the output holds two elements per word, and
// each thread writes whole words, so no two threads share one (no atomics).
// WPT words per thread, strided by 256 inside a tile as in `cast_dtype`;
// a full tile reads all its 2 * WPT elements before any store. The host
// dispatches ceil(ceil(numel / 2) / WPT) threads.
const WPT: u32 = 4u;
const WORD_TILE: u32 = 1024u; // 256 * WPT

@compute @workgroup_size(256)
fn cast_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WORD_TILE;
    let k = tile + lid;
    let words = (p.numel + 1u) / 2u;
    if tile + WORD_TILE <= p.numel / 2u {
        let e0 = half_element(2u * k);
        let e1 = half_element(2u * k + 1u);
        let e2 = half_element(2u * k + 512u);
        let e3 = half_element(2u * k + 513u);
        let e4 = half_element(2u * k + 1024u);
        let e5 = half_element(2u * k + 1025u);
        let e6 = half_element(2u * k + 1536u);
        let e7 = half_element(2u * k + 1537u);
        dst[k] = e0 | (e1 << 16u);
        dst[k + 256u] = e2 | (e3 << 16u);
        dst[k + 512u] = e4 | (e5 << 16u);
        dst[k + 768u] = e6 | (e7 << 16u);
        return;
    }
    // Last, partial tile: word by word, bounds-checked.
    for (var j = 0u; j < WPT; j++) {
        let w = k + j * 256u;
        if w < words {
            dst[w] = half_word(w);
        }
    }
}
