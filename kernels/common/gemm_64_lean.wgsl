// The lean 64 x 64 GEMM core: the tile of common/gemm_64.wgsl (and its
// interface: read it) on 128 threads instead of 256, each a 4 x 8 block
// made of two 4 x 4 sub-blocks lying 32 columns apart, K in steps of 8
// double-buffered in workgroup memory (8.5 KiB), the next step gathered
// into registers while the current one is multiplied. A K step's
// workgroup-memory reads per multiply-add: one A and two B vec4s per 32,
// against one and one per 16 in the 256-thread core. Value i of a
// thread's mn-fast loads is row tid % 64, k = tid / 64 + 2 * i.

//! include common/gemm_square_stage.wgsl

const TILE: u32 = 64u;    // output tile edge
const TILE_M: u32 = TILE; // output tile rows (common/conv_tile.wgsl)
const TILE_N: u32 = TILE; // and columns
const HALF: u32 = 32u;    // distance between a thread's two column blocks
const TILE_K: u32 = 8u;   // K step
const THREADS: u32 = 128u;
const ROW4: u32 = 17u;    // vec4s per staged k-row (16 + 1 pad)
const STAGE: u32 = 136u;  // TILE_K * ROW4: one buffer
const KSTRIDE: u32 = 2u;  // THREADS / TILE: k distance of a thread's mn-fast values

var<workgroup> a_tile: array<vec4<f32>, 272>;
var<workgroup> b_tile: array<vec4<f32>, 272>;

var<private> tid: u32;
var<private> ra0: f32;
var<private> ra1: f32;
var<private> ra2: f32;
var<private> ra3: f32;
var<private> rb0: f32;
var<private> rb1: f32;
var<private> rb2: f32;
var<private> rb3: f32;

// cRC: row ty*4+R, columns tx*4.. (C = 0) or 32+tx*4.. (C = 1).
var<private> c00: vec4<f32>;
var<private> c01: vec4<f32>;
var<private> c10: vec4<f32>;
var<private> c11: vec4<f32>;
var<private> c20: vec4<f32>;
var<private> c21: vec4<f32>;
var<private> c30: vec4<f32>;
var<private> c31: vec4<f32>;

// Slot of element e when the step's k index is the contiguous one: value i
// of a thread has row tid / 8 + 16 * i and k = tid % 8.
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e / TILE_K, e % TILE_K);
}

// Slot of element e when the row index is the contiguous one.
fn mn_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e % TILE, e / TILE);
}

fn mac(ai: u32, bi: u32) {
    let a0 = a_tile[ai];
    let b0 = b_tile[bi];
    let b1 = b_tile[bi + 8u];
    c00 = fma(vec4<f32>(a0.x), b0, c00);
    c01 = fma(vec4<f32>(a0.x), b1, c01);
    c10 = fma(vec4<f32>(a0.y), b0, c10);
    c11 = fma(vec4<f32>(a0.y), b1, c11);
    c20 = fma(vec4<f32>(a0.z), b0, c20);
    c21 = fma(vec4<f32>(a0.z), b1, c21);
    c30 = fma(vec4<f32>(a0.w), b0, c30);
    c31 = fma(vec4<f32>(a0.w), b1, c31);
}

fn multiply(ai: u32, bi: u32) {
    mac(ai, bi);
    mac(ai + 1u * ROW4, bi + 1u * ROW4);
    mac(ai + 2u * ROW4, bi + 2u * ROW4);
    mac(ai + 3u * ROW4, bi + 3u * ROW4);
    mac(ai + 4u * ROW4, bi + 4u * ROW4);
    mac(ai + 5u * ROW4, bi + 5u * ROW4);
    mac(ai + 6u * ROW4, bi + 6u * ROW4);
    mac(ai + 7u * ROW4, bi + 7u * ROW4);
}

// Sums k in [k_begin, k_end) into the accumulators. Both bounds must be
// workgroup-uniform (the loop holds barriers).
fn gemm_k_loop(k_begin: u32, k_end: u32) {
    let tx = tid % 8u;
    let ty = tid / 8u;
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
            stage(STAGE);
            workgroupBarrier();
            if k1 + TILE_K < k_end {
                fetch(k1 + TILE_K);
            }
            multiply(STAGE + ty, STAGE + tx);
        }
    }
}

// Hands this thread's outputs to the kernel's store_block.
fn gemm_store(row0: u32, col0: u32) {
    let r = row0 + (tid / 8u) * 4u;
    let c = col0 + (tid % 8u) * 4u;
    store_block(r, c, c00, c10, c20, c30);
    store_block(r, c + HALF, c01, c11, c21, c31);
}
