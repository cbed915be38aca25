// The register-tiled 64 x 64 GEMM core shared by matmul/matmul_64.wgsl and
// the implicit-GEMM convolutions (kernels/conv/*.wgsl): 256 threads,
// 4 x 4 outputs each (rows ty*4.., columns tx*4..), K in steps of 16
// double-buffered in workgroup memory (one barrier per step), the next step
// gathered into registers while the current one is multiplied.
//
// The including kernel supplies the operands: `fn fetch(k0: u32)` gathers
// its 4 A and 4 B values of the K step starting at k0 into ra0..ra3 /
// rb0..rb3 (zero outside the operands, so edge tiles need no special case),
// and `fn a_slot(i: u32) -> vec2<u32>` / `fn b_slot(i: u32) -> vec2<u32>`
// say which (m, k) / (n, k) of the step its value number i is (built from
// `k_fast_slot` or `mn_fast_slot`, whichever walks memory contiguously).
// `gemm_k_loop(k_begin, k_end)` then accumulates into c0..c3 (cR holds row
// ty*4+R, columns tx*4..) and `gemm_store(row0, col0)` hands them to the
// kernel's `fn store_block(row, col, v0, v1, v2, v3)` (vR: row row+R,
// columns col..col+3). common/gemm_128.wgsl has the same interface
// with 128 x 128 tiles.

//! include common/gemm_square_stage.wgsl

const TILE: u32 = 64u;    // output tile edge
const TILE_M: u32 = TILE; // output tile rows (common/conv_tile.wgsl)
const TILE_N: u32 = TILE; // and columns
const TILE_K: u32 = 16u;  // K step
const THREADS: u32 = 256u;
const ROW4: u32 = 17u;    // vec4s per staged k-row (16 + 1 pad)
const STAGE: u32 = 272u;  // TILE_K * ROW4: one buffer
const KSTRIDE: u32 = 4u;  // THREADS / TILE: k distance of a thread's mn-fast values

// [buffer][k][m / 4] -> A[m, k] as component m % 4; b_tile with n.
var<workgroup> a_tile: array<vec4<f32>, 544>;
var<workgroup> b_tile: array<vec4<f32>, 544>;

var<private> tid: u32;
var<private> ra0: f32;
var<private> ra1: f32;
var<private> ra2: f32;
var<private> ra3: f32;
var<private> rb0: f32;
var<private> rb1: f32;
var<private> rb2: f32;
var<private> rb3: f32;
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;

// Slot of element e when the step's k index is the contiguous one: each 32
// threads take 8 k x 4 rows. Value i of a thread has k = tid % 8 + 8 * (i / 2)
// and row tid / 8 + 32 * (i % 2).
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>((e / 8u) % TILE, e % 8u + 8u * (e / 512u));
}

// Slot of element e when the row (m or n) index is the contiguous one:
// value i of a thread has row tid % 64 and k = tid / 64 + 4 * i.
fn mn_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e % TILE, e / TILE);
}

fn mac(ai: u32, bi: u32) {
    let a0 = a_tile[ai];
    let b0 = b_tile[bi];
    c0 = fma(vec4<f32>(a0.x), b0, c0);
    c1 = fma(vec4<f32>(a0.y), b0, c1);
    c2 = fma(vec4<f32>(a0.z), b0, c2);
    c3 = fma(vec4<f32>(a0.w), b0, c3);
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
    mac(ai + 8u * ROW4, bi + 8u * ROW4);
    mac(ai + 9u * ROW4, bi + 9u * ROW4);
    mac(ai + 10u * ROW4, bi + 10u * ROW4);
    mac(ai + 11u * ROW4, bi + 11u * ROW4);
    mac(ai + 12u * ROW4, bi + 12u * ROW4);
    mac(ai + 13u * ROW4, bi + 13u * ROW4);
    mac(ai + 14u * ROW4, bi + 14u * ROW4);
    mac(ai + 15u * ROW4, bi + 15u * ROW4);
}

// Sums k in [k_begin, k_end) into c0..c3. Both bounds must be
// workgroup-uniform (the loop holds barriers).
fn gemm_k_loop(k_begin: u32, k_end: u32) {
    let tx = tid % 16u;
    let ty = tid / 16u;
    c0 = vec4<f32>(0.0);
    c1 = vec4<f32>(0.0);
    c2 = vec4<f32>(0.0);
    c3 = vec4<f32>(0.0);
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
    store_block(row0 + (tid / 16u) * 4u, col0 + (tid % 16u) * 4u, c0, c1, c2, c3);
}
