// Broadcasting binary arithmetic where an operand or the output is a 16-bit
// float (F16, BF16), in one pass: each operand is loaded in its own dtype
// (f32 words or packed halves, common/half.wgsl) and widened exactly, `apply`
// runs in f32 (common/binary_op.wgsl, as binary.wgsl), and the result is
// rounded once to the output dtype. The same numbers as casting the halves
// to f32, running binary.wgsl and casting back, without the two extra passes.
// Bindings: 0 a (read, words), 1 b (read, words), 2 out (read_write, words).
// Immediates: BinaryParams. Overrides: OP = BinaryOp::code(); A_KIND,
// B_KIND, OUT_KIND: 0 = f32, 3 = f16, 4 = bf16 (cast.wgsl's dtype codes).
// Entry points: binary_half (16-bit output: two elements per output word,
// each thread writes whole words, so no two threads share one) and
// binary_half_to_f32 (f32 output, e.g. an F16 tensor plus an F32 one).

//! include common/binary_op.wgsl
//! include common/binary_params.wgsl
//! include common/half.wgsl

override OP: u32 = 0u;
override A_KIND: u32 = 0u;
override B_KIND: u32 = 0u;
override OUT_KIND: u32 = 3u;

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn load_a(at: u32) -> f32 {
    if A_KIND == 0u { return bitcast<f32>(a[at]); }
    return word_to_f32(A_KIND, a[at >> 1u], at);
}

fn load_b(at: u32) -> f32 {
    if B_KIND == 0u { return bitcast<f32>(b[at]); }
    return word_to_f32(B_KIND, b[at >> 1u], at);
}

// The f32 result of logical element `i`.
fn value(i: u32) -> f32 {
    let o = offsets_of(i);
    return apply(load_a(o.x), load_b(o.y));
}

// An f32 result as the 16 bits of OUT_KIND.
fn narrow(v: f32) -> u32 {
    return f32_to_half_bits(OUT_KIND, v);
}

// WPT output words per thread, strided by 256 inside a tile; a full tile
// computes all its 2 * WPT elements before any store. The host dispatches
// ceil(ceil(numel / 2) / WPT) threads.
const WPT: u32 = 4u;
const WORD_TILE: u32 = 1024u; // 256 * WPT

@compute @workgroup_size(256)
fn binary_half(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WORD_TILE;
    let k = tile + lid;
    if tile + WORD_TILE <= p.numel / 2u {
        let e0 = value(2u * k);
        let e1 = value(2u * k + 1u);
        let e2 = value(2u * k + 512u);
        let e3 = value(2u * k + 513u);
        let e4 = value(2u * k + 1024u);
        let e5 = value(2u * k + 1025u);
        let e6 = value(2u * k + 1536u);
        let e7 = value(2u * k + 1537u);
        out[k] = narrow(e0) | (narrow(e1) << 16u);
        out[k + 256u] = narrow(e2) | (narrow(e3) << 16u);
        out[k + 512u] = narrow(e4) | (narrow(e5) << 16u);
        out[k + 768u] = narrow(e6) | (narrow(e7) << 16u);
        return;
    }
    // Last, partial tile: word by word, bounds-checked (an odd count leaves
    // the last word's high half 0).
    let words = (p.numel + 1u) / 2u;
    for (var j = 0u; j < WPT; j++) {
        let w = k + j * 256u;
        if w < words {
            var word = narrow(value(2u * w));
            if 2u * w + 1u < p.numel {
                word |= narrow(value(2u * w + 1u)) << 16u;
            }
            out[w] = word;
        }
    }
}

// f32 output: EPT elements per thread, `tile + lid + k * 256`, as binary.wgsl.
const EPT: u32 = 8u;
const TILE: u32 = 2048u; // 256 * EPT

@compute @workgroup_size(256)
fn binary_half_to_f32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * TILE;
    let i = tile + lid;
    if tile + TILE <= p.numel {
        let v0 = value(i);
        let v1 = value(i + 256u);
        let v2 = value(i + 512u);
        let v3 = value(i + 768u);
        let v4 = value(i + 1024u);
        let v5 = value(i + 1280u);
        let v6 = value(i + 1536u);
        let v7 = value(i + 1792u);
        out[i] = bitcast<u32>(v0);
        out[i + 256u] = bitcast<u32>(v1);
        out[i + 512u] = bitcast<u32>(v2);
        out[i + 768u] = bitcast<u32>(v3);
        out[i + 1024u] = bitcast<u32>(v4);
        out[i + 1280u] = bitcast<u32>(v5);
        out[i + 1536u] = bitcast<u32>(v6);
        out[i + 1792u] = bitcast<u32>(v7);
        return;
    }
    for (var k = 0u; k < EPT; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            out[j] = bitcast<u32>(value(j));
        }
    }
}
