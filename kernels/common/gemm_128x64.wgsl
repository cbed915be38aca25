// A 128 x 64 (rows x columns) GEMM core for matmul/matmul_128x64.wgsl, with
// the interface of common/gemm_64.wgsl (read it): 256 threads, each an
// 8 x 4 block of two 4 x 4 sub-blocks lying 64 rows apart, K in steps of 8
// double-buffered in workgroup memory (12.5 KiB), the next step gathered
// into registers while the current one is multiplied. Between the 64 x 64
// core (4 workgroup-memory reads per 32 FMAs) and the 128 x 128 one (2 per
// 32, but a 1024 x 1024 output is only 64 of its tiles): 3 reads per 32
// FMAs, and 128 tiles for such an output. A thread stages 4 A values and
// 2 B values per step (B_LOADS = 2).

const TILE_M: u32 = 128u; // output tile rows
const TILE_N: u32 = 64u;  // and columns
const HALF: u32 = 64u;    // distance between a thread's sub-blocks
const TILE_K: u32 = 8u;   // K step
const THREADS: u32 = 256u;
const ROW4_A: u32 = 33u;  // vec4s per staged A k-row (32 + 1 pad)
const ROW4_B: u32 = 17u;  // and B k-row (16 + 1 pad)
const STAGE_A: u32 = 264u; // TILE_K * ROW4_A: one buffer
const STAGE_B: u32 = 136u; // TILE_K * ROW4_B
const B_LOADS: u32 = 2u;

var<workgroup> a_tile: array<vec4<f32>, 528>;
var<workgroup> b_tile: array<vec4<f32>, 272>;

var<private> tid: u32;
var<private> ra0: f32;
var<private> ra1: f32;
var<private> ra2: f32;
var<private> ra3: f32;
var<private> rb0: f32;
var<private> rb1: f32;
// Unused (B_LOADS = 2); matmul_fetch.wgsl's fetch names them.
var<private> rb2: f32;
var<private> rb3: f32;

// cR: row (R < 4 ? ty*4+R : 64+ty*4+R-4), columns tx*4..
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;
var<private> c4: vec4<f32>;
var<private> c5: vec4<f32>;
var<private> c6: vec4<f32>;
var<private> c7: vec4<f32>;

// A's slots (128 rows x 8 k), as common/gemm_128.wgsl's: k-fast value i
// has row tid / 8 + 32 i and k = tid % 8; row-fast row tid % 128 and
// k = tid / 128 + 2 i.
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e / TILE_K, e % TILE_K);
}

fn mn_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e % TILE_M, e / TILE_M);
}

// B's (64 columns x 8 k): k-fast value i has column tid / 8 + 32 i and
// k = tid % 8; column-fast column tid % 64 and k = tid / 64 + 4 i.
fn b_k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e / TILE_K, e % TILE_K);
}

fn b_mn_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e % TILE_N, e / TILE_N);
}

fn put_a(buf: u32, i: u32, v: f32) {
    let s = a_slot(i);
    a_tile[buf + s.y * ROW4_A + s.x / 4u][s.x % 4u] = v;
}

fn put_b(buf: u32, i: u32, v: f32) {
    let s = b_slot(i);
    b_tile[buf + s.y * ROW4_B + s.x / 4u][s.x % 4u] = v;
}

// Buffer `half` (0 or 1) of both operands.
fn stage(half: u32) {
    let ab = half * STAGE_A;
    let bb = half * STAGE_B;
    put_a(ab, 0u, ra0);
    put_a(ab, 1u, ra1);
    put_a(ab, 2u, ra2);
    put_a(ab, 3u, ra3);
    put_b(bb, 0u, rb0);
    put_b(bb, 1u, rb1);
}

fn mac(ai: u32, bi: u32) {
    let a0 = a_tile[ai];
    let a1 = a_tile[ai + 16u];
    let b0 = b_tile[bi];
    c0 = fma(vec4<f32>(a0.x), b0, c0);
    c1 = fma(vec4<f32>(a0.y), b0, c1);
    c2 = fma(vec4<f32>(a0.z), b0, c2);
    c3 = fma(vec4<f32>(a0.w), b0, c3);
    c4 = fma(vec4<f32>(a1.x), b0, c4);
    c5 = fma(vec4<f32>(a1.y), b0, c5);
    c6 = fma(vec4<f32>(a1.z), b0, c6);
    c7 = fma(vec4<f32>(a1.w), b0, c7);
}

fn multiply(ai: u32, bi: u32) {
    mac(ai, bi);
    mac(ai + 1u * ROW4_A, bi + 1u * ROW4_B);
    mac(ai + 2u * ROW4_A, bi + 2u * ROW4_B);
    mac(ai + 3u * ROW4_A, bi + 3u * ROW4_B);
    mac(ai + 4u * ROW4_A, bi + 4u * ROW4_B);
    mac(ai + 5u * ROW4_A, bi + 5u * ROW4_B);
    mac(ai + 6u * ROW4_A, bi + 6u * ROW4_B);
    mac(ai + 7u * ROW4_A, bi + 7u * ROW4_B);
}

// Sums k in [k_begin, k_end) into the accumulators. Both bounds must be
// workgroup-uniform (the loop holds barriers).
fn gemm_k_loop(k_begin: u32, k_end: u32) {
    let tx = tid % 16u;
    let ty = tid / 16u;
    fetch(k_begin);
    for (var k0 = k_begin; k0 < k_end; k0 += 2u * TILE_K) {
        stage(0u);
        workgroupBarrier();
        let k1 = k0 + TILE_K;
        if k1 < k_end {
            fetch(k1);
        }
        multiply(ty, tx);
        if k1 < k_end {
            stage(1u);
            workgroupBarrier();
            if k1 + TILE_K < k_end {
                fetch(k1 + TILE_K);
            }
            multiply(STAGE_A + ty, STAGE_B + tx);
        }
    }
}

// Hands this thread's outputs to the kernel's store_block.
fn gemm_store(row0: u32, col0: u32) {
    let r = row0 + (tid / 16u) * 4u;
    let c = col0 + (tid % 16u) * 4u;
    store_block(r, c, c0, c1, c2, c3);
    store_block(r + HALF, c, c4, c5, c6, c7);
}
