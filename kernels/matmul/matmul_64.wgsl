// Batched f32 GEMM over strided operands, 64 x 64 tiles: out[b] = A[b] @ B[b].
// A[b] is M x K, B[b] is K x N, both read through arbitrary row/col strides
// and per-batch offsets (transposed, narrowed and broadcast views need no
// copy); out is contiguous [batch, M, N] starting at element 0.
// Split K: with k_chunk < K, workgroup split s sums only k in
// [s * k_chunk, (s + 1) * k_chunk) and writes out[s, batch, M, N]; a second
// kernel (sum_splits.wgsl) adds the splits up. Unsplit: k_chunk >= K.
//
// Tiling: 16 x 16 threads, 4 x 4 outputs each (rows ty*4.., columns
// tx*4..), written like matmul_128.wgsl: K steps of 16 double-buffered
// in workgroup memory (one barrier per step), the next step fetched into
// registers during the current one, and everything per thread in
// `var<private>` scalars with hand-unrolled loops (no dynamically indexed
// private arrays, no short inner loops for the driver to unroll).
// Workgroup memory: 2 operands x 2 buffers x 16 x 17 vec4 = 17 KiB.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write). Immediates: MatmulParams.

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    tiles_n: u32,   // ceil(N / 64)
    tiles_mn: u32,  // tiles_n * ceil(M / 64)
    groups: u32,    // tiles_mn * batch count * splits
    a_offset: u32,
    b_offset: u32,
    a_rs: u32,      // A row (m) stride
    a_cs: u32,      // A column (k) stride
    b_rs: u32,      // B row (k) stride
    b_cs: u32,      // B column (n) stride
    // Up to 4 batch dims, right-aligned (unused leading dims: size 1, stride 0).
    batch: array<u32, 4>,
    a_bstrides: array<u32, 4>,
    b_bstrides: array<u32, 4>,
    k_chunk: u32,   // K per split (a multiple of 16); >= K when not split
    batches: u32,   // number of batch matrices (product of `batch`)
}

var<immediate> p: MatmulParams;

// Which index of each operand runs fastest in memory picks how the threads
// walk a staged slice, so that neighbouring threads read neighbouring
// addresses (coalesced) for both plain and transposed views.
// A_M_FAST = 1: A's rows are unit-stride (e.g. a transposed view).
// B_K_FAST = 1: B's rows are unit-stride (e.g. transposed weights, x @ W^T).
override A_M_FAST: u32 = 0u;
override B_K_FAST: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const TILE: u32 = 64u;    // output tile edge
const TILE_K: u32 = 16u;  // K step
const THREADS: u32 = 256u;
// vec4s per staged k-row: 16 + 1 pad, so that the k-fast scalar stores
// (4 m values x 8 k values per 32 threads) land in 32 distinct banks.
const ROW4: u32 = 17u;
const STAGE: u32 = 272u;  // TILE_K * ROW4: one buffer
// Tile rows walked together: workgroups running at the same time share
// both A rows and B columns, which keeps the reused slices in L2.
const GROUP_ROWS: u32 = 8u;

// [buffer][k][m / 4] -> A[row0 + m, k0 + k] as component m % 4; b_tile with n.
var<workgroup> a_tile: array<vec4<f32>, 544>; // 2 * STAGE
var<workgroup> b_tile: array<vec4<f32>, 544>;

var<private> tid: u32;
var<private> row0: u32;
var<private> col0: u32;
var<private> a_base: u32;
var<private> b_base: u32;
var<private> k_stop: u32;

// The next slice, fetched while the current one is multiplied.
var<private> ra0: f32;
var<private> ra1: f32;
var<private> ra2: f32;
var<private> ra3: f32;
var<private> rb0: f32;
var<private> rb1: f32;
var<private> rb2: f32;
var<private> rb3: f32;

// Accumulators: cR holds row ty*4+R, columns tx*4...
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;

// Slice position of element `e` when the slice's k index is the unit-stride
// one: each 32 threads take 8 k x 4 rows (32-byte runs of global memory, and
// 32 distinct banks for the transposing stores).
fn k_fast_slot(e: u32) -> vec2<u32> {
    return vec2<u32>((e / 8u) % TILE, e % 8u + 8u * (e / 512u));
}

// (m, k) within the A slice of the element this thread loads as number `i`.
fn a_slot(i: u32) -> vec2<u32> {
    let e = tid + i * THREADS;
    if A_M_FAST == 1u {
        return vec2<u32>(e % TILE, e / TILE);
    }
    return k_fast_slot(e);
}

// (n, k) within the B slice of the element this thread loads as number `i`.
fn b_slot(i: u32) -> vec2<u32> {
    let e = tid + i * THREADS;
    if B_K_FAST == 1u {
        return k_fast_slot(e);
    }
    return vec2<u32>(e % TILE, e / TILE);
}

fn load_a(i: u32, k0: u32) -> f32 {
    let s = a_slot(i);
    let r = row0 + s.x;
    let c = k0 + s.y;
    if r < p.m && c < k_stop {
        return a[a_base + r * p.a_rs + c * p.a_cs];
    }
    return 0.0; // zero padding makes edge tiles exact without special cases
}

fn load_b(i: u32, k0: u32) -> f32 {
    let s = b_slot(i);
    let c = col0 + s.x;
    let r = k0 + s.y;
    if r < k_stop && c < p.n {
        return b[b_base + r * p.b_rs + c * p.b_cs];
    }
    return 0.0;
}

fn fetch(k0: u32) {
    ra0 = load_a(0u, k0);
    ra1 = load_a(1u, k0);
    ra2 = load_a(2u, k0);
    ra3 = load_a(3u, k0);
    rb0 = load_b(0u, k0);
    rb1 = load_b(1u, k0);
    rb2 = load_b(2u, k0);
    rb3 = load_b(3u, k0);
}

fn put_a(buf: u32, i: u32, v: f32) {
    let s = a_slot(i);
    a_tile[buf + s.y * ROW4 + s.x / 4u][s.x % 4u] = v;
}

fn put_b(buf: u32, i: u32, v: f32) {
    let s = b_slot(i);
    b_tile[buf + s.y * ROW4 + s.x / 4u][s.x % 4u] = v;
}

fn stage(buf: u32) {
    put_a(buf, 0u, ra0);
    put_a(buf, 1u, ra1);
    put_a(buf, 2u, ra2);
    put_a(buf, 3u, ra3);
    put_b(buf, 0u, rb0);
    put_b(buf, 1u, rb1);
    put_b(buf, 2u, rb2);
    put_b(buf, 3u, rb3);
}

// One k of the staged slice: ai / bi index this thread's A / B vec4.
fn mac(ai: u32, bi: u32) {
    let a0 = a_tile[ai];
    let b0 = b_tile[bi];
    c0 = fma(vec4<f32>(a0.x), b0, c0);
    c1 = fma(vec4<f32>(a0.y), b0, c1);
    c2 = fma(vec4<f32>(a0.z), b0, c2);
    c3 = fma(vec4<f32>(a0.w), b0, c3);
}

// All k of a staged slice: ai / bi index this thread's first A / B vec4
// of the buffer.
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

fn write4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if row >= p.m {
        return;
    }
    let at = base + row * p.n + col;
    if col < p.n { out[at] = v.x; }
    if col + 1u < p.n { out[at + 1u] = v.y; }
    if col + 2u < p.n { out[at + 2u] = v.z; }
    if col + 3u < p.n { out[at + 3u] = v.w; }
}

@compute @workgroup_size(256)
fn matmul_64(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    // g = (split * batches + batch index) * tiles_mn + tile.
    let mat = g / p.tiles_mn;
    let t = g % p.tiles_mn;
    let bi = mat % p.batches;
    let split = mat / p.batches;

    // Tile order: bands of GROUP_ROWS tile rows, column-major within a band.
    let tiles_m = p.tiles_mn / p.tiles_n;
    let band = GROUP_ROWS * p.tiles_n;
    let first = (t / band) * GROUP_ROWS;
    let rows = min(tiles_m - first, GROUP_ROWS);
    let in_band = t % band;
    row0 = (first + in_band % rows) * TILE;
    col0 = (in_band / rows) * TILE;

    // Batch offsets of this matrix in A and B (broadcast dims have stride 0).
    var rem = bi;
    var ab = p.a_offset;
    var bb = p.b_offset;
    for (var d = 3; d >= 0; d--) {
        let size = p.batch[d];
        let idx = rem % size;
        rem /= size;
        ab += idx * p.a_bstrides[d];
        bb += idx * p.b_bstrides[d];
    }
    a_base = ab;
    b_base = bb;

    // This split's share of K (a `let`: the loop below holds a barrier, so
    // its bound must be visibly workgroup-uniform).
    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;

    let tx = lid % 16u;
    let ty = lid / 16u;

    // Two K steps per iteration, one per buffer, so that every
    // workgroup-memory index is a thread coordinate plus a constant (the
    // driver can fold the index clamps and use immediate offsets).
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

    // Output (or this split's partial sums) is contiguous [.., M, N].
    let base = mat * p.m * p.n;
    let r = row0 + ty * 4u;
    let c = col0 + tx * 4u;
    write4(base, r, c, c0);
    write4(base, r + 1u, c, c1);
    write4(base, r + 2u, c, c2);
    write4(base, r + 3u, c, c3);
}
