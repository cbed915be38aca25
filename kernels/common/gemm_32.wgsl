// A 32 x 32 GEMM core for small products, with the interface of
// common/gemm_64.wgsl (fetch, a_slot/b_slot from k_fast_slot or
// mn_fast_slot, gemm_k_loop, gemm_store -> store_block).
//
// Why: a product of few output tiles runs one workgroup per SM, and there
// a K step costs its latency, not its FMAs (H100: 0.77 us per 16-wide
// step of one 64 x 64 tile, docs/BENCHMARKS.md). So the small MLPs'
// products were split along K and paid a second dispatch to add the
// splits. Here the 256 threads are 4 groups of 64, and each group sums its
// own quarter of every 32-wide K step (8 k) into a 32 x 32 tile, 4 x 4
// outputs per thread (rows ty*4.., columns tx*4..): per K step a thread
// does half the FMAs of gemm_64's for twice the K, on a quarter of the
// output, so the same product has 4 times the workgroups and an eighth of
// the steps per workgroup. The groups' sums meet in workgroup memory at
// the end, added in group order (deterministic). K steps are
// double-buffered (18 KiB), one barrier per step.

//! include common/gemm_square_stage.wgsl

const TILE: u32 = 32u;    // output tile edge
const TILE_M: u32 = TILE; // output tile rows
const TILE_N: u32 = TILE; // and columns
const STEP_K: u32 = 32u;  // K per step, 8 per group
const GROUP_K: u32 = 8u;
const THREADS: u32 = 256u;
const ROW4: u32 = 9u;     // vec4s per staged k-row (8 + 1 pad)
const STAGE: u32 = 288u;  // STEP_K * ROW4: one buffer

// [buffer][k][m / 4] -> A[m, k] as component m % 4; b_tile with n. At the
// end, groups 1..3's sums (a_tile: groups 1 and 2, b_tile: group 3).
var<workgroup> a_tile: array<vec4<f32>, 576>;
var<workgroup> b_tile: array<vec4<f32>, 576>;

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

// Slot of element e when the step's k index is the contiguous one: each
// warp reads one row's 32 k. Value i of a thread has k = tid % 32 and row
// tid / 32 + 8 i.
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>(e / STEP_K, e % STEP_K);
}

// Slot of element e when the row (m or n) index is the contiguous one:
// value i of a thread has row tid % 32 and k = tid / 32 + 8 i.
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

// This thread's group's 8 k of the staged step.
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

// Sums k in [k_begin, k_end) into c0..c3 of group 0's threads (the other
// groups' c are spent). Both bounds must be workgroup-uniform (the loop
// holds barriers).
fn gemm_k_loop(k_begin: u32, k_end: u32) {
    let group = tid / 64u;
    let lane = tid % 64u;
    let ai = group * GROUP_K * ROW4 + lane / 8u;
    let bi = group * GROUP_K * ROW4 + lane % 8u;
    c0 = vec4<f32>(0.0);
    c1 = vec4<f32>(0.0);
    c2 = vec4<f32>(0.0);
    c3 = vec4<f32>(0.0);
    fetch(k_begin);
    for (var k0 = k_begin; k0 < k_end; k0 += 2u * STEP_K) {
        stage(0u);
        workgroupBarrier();
        let k1 = k0 + STEP_K;
        if k1 < k_end {
            fetch(k1);
        }
        multiply(ai, bi);
        if k1 < k_end {
            stage(STAGE);
            workgroupBarrier();
            if k1 + STEP_K < k_end {
                fetch(k1 + STEP_K);
            }
            multiply(STAGE + ai, STAGE + bi);
        }
    }
    // Everyone is past the last multiply before the tiles are reused.
    workgroupBarrier();
    let at = (lane % 64u) * 4u;
    if group == 1u {
        a_tile[at] = c0;
        a_tile[at + 1u] = c1;
        a_tile[at + 2u] = c2;
        a_tile[at + 3u] = c3;
    } else if group == 2u {
        a_tile[256u + at] = c0;
        a_tile[257u + at] = c1;
        a_tile[258u + at] = c2;
        a_tile[259u + at] = c3;
    } else if group == 3u {
        b_tile[at] = c0;
        b_tile[at + 1u] = c1;
        b_tile[at + 2u] = c2;
        b_tile[at + 3u] = c3;
    }
    workgroupBarrier();
    if group == 0u {
        c0 = c0 + a_tile[at] + a_tile[256u + at] + b_tile[at];
        c1 = c1 + a_tile[at + 1u] + a_tile[257u + at] + b_tile[at + 1u];
        c2 = c2 + a_tile[at + 2u] + a_tile[258u + at] + b_tile[at + 2u];
        c3 = c3 + a_tile[at + 3u] + a_tile[259u + at] + b_tile[at + 3u];
    }
}

// Group 0 hands the tile's sums to the kernel's store_block.
fn gemm_store(row0: u32, col0: u32) {
    if tid < 64u {
        store_block(row0 + (tid / 8u) * 4u, col0 + (tid % 8u) * 4u, c0, c1, c2, c3);
    }
}
