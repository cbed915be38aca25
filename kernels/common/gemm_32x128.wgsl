// A 32 x 128 register-tiled GEMM core, for products with at most 32 rows
// (the input gradient of a convolution with 32 or fewer input channels per
// group, where half of a 64 x 64 tile's rows would be zeros). The
// interface of common/gemm_64.wgsl (read it), with these differences:
// 256 threads, 4 x 4 outputs each (rows ty*4.., ty = tid / 32; columns
// tx*4.., tx = tid % 32); K in steps of 16, double-buffered in workgroup
// memory (21 KiB); `fetch` gathers 2 A values (ra0, ra1) and 8 B values
// (rb0..rb7) a step; `k_fast_slot` walks A's 32 x 16 step (value i: row
// tid / 16 + 16 i, k = tid % 16) and `mn_fast_slot` B's 16 x 128 step
// (value i: column tid % 128, k = tid / 128 + 2 i), the two orders the
// input gradient loads its operands in.

const TILE_M: u32 = 32u;  // output tile rows
const TILE_N: u32 = 128u; // output tile columns
const TILE_K: u32 = 16u;  // K step
const THREADS: u32 = 256u;
const ROW4_A: u32 = 9u;   // vec4s per staged k-row of A (8 + 1 pad)
const ROW4_B: u32 = 33u;  // and of B (32 + 1 pad)
const STAGE_A: u32 = 144u; // TILE_K * ROW4_A: one buffer
const STAGE_B: u32 = 528u; // TILE_K * ROW4_B
const KSTRIDE: u32 = 2u;  // THREADS / TILE_N: k distance of a thread's mn-fast values

// [buffer][k][m / 4] -> A[m, k] as component m % 4; b_tile with n.
var<workgroup> a_tile: array<vec4<f32>, 288>;
var<workgroup> b_tile: array<vec4<f32>, 1056>;

var<private> tid: u32;
var<private> ra0: f32;
var<private> ra1: f32;
var<private> rb0: f32;
var<private> rb1: f32;
var<private> rb2: f32;
var<private> rb3: f32;
var<private> rb4: f32;
var<private> rb5: f32;
var<private> rb6: f32;
var<private> rb7: f32;
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;

// (row, k) of A value e = tid + i * THREADS: 16 neighbouring threads read
// 16 neighbouring k of one row.
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e / TILE_K, e % TILE_K);
}

// (column, k) of B value e = tid + i * THREADS: neighbouring threads read
// neighbouring columns.
fn mn_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e % TILE_N, e / TILE_N);
}

fn put_a(buf: u32, i: u32, v: f32) {
    let s = a_slot(i);
    a_tile[buf * STAGE_A + s.y * ROW4_A + s.x / 4u][s.x % 4u] = v;
}

fn put_b(buf: u32, i: u32, v: f32) {
    let s = b_slot(i);
    b_tile[buf * STAGE_B + s.y * ROW4_B + s.x / 4u][s.x % 4u] = v;
}

fn stage(buf: u32) {
    put_a(buf, 0u, ra0);
    put_a(buf, 1u, ra1);
    put_b(buf, 0u, rb0);
    put_b(buf, 1u, rb1);
    put_b(buf, 2u, rb2);
    put_b(buf, 3u, rb3);
    put_b(buf, 4u, rb4);
    put_b(buf, 5u, rb5);
    put_b(buf, 6u, rb6);
    put_b(buf, 7u, rb7);
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
    mac(ai + 1u * ROW4_A, bi + 1u * ROW4_B);
    mac(ai + 2u * ROW4_A, bi + 2u * ROW4_B);
    mac(ai + 3u * ROW4_A, bi + 3u * ROW4_B);
    mac(ai + 4u * ROW4_A, bi + 4u * ROW4_B);
    mac(ai + 5u * ROW4_A, bi + 5u * ROW4_B);
    mac(ai + 6u * ROW4_A, bi + 6u * ROW4_B);
    mac(ai + 7u * ROW4_A, bi + 7u * ROW4_B);
    mac(ai + 8u * ROW4_A, bi + 8u * ROW4_B);
    mac(ai + 9u * ROW4_A, bi + 9u * ROW4_B);
    mac(ai + 10u * ROW4_A, bi + 10u * ROW4_B);
    mac(ai + 11u * ROW4_A, bi + 11u * ROW4_B);
    mac(ai + 12u * ROW4_A, bi + 12u * ROW4_B);
    mac(ai + 13u * ROW4_A, bi + 13u * ROW4_B);
    mac(ai + 14u * ROW4_A, bi + 14u * ROW4_B);
    mac(ai + 15u * ROW4_A, bi + 15u * ROW4_B);
}

// Sums k in [k_begin, k_end) into c0..c3. Both bounds must be
// workgroup-uniform (the loop holds barriers).
fn gemm_k_loop(k_begin: u32, k_end: u32) {
    let tx = tid % 32u;
    let ty = tid / 32u;
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
    store_block(row0 + (tid / 32u) * 4u, col0 + (tid % 32u) * 4u, c0, c1, c2, c3);
}
