// Batched f32 GEMM over strided operands: out[b] = A[b] @ B[b].
// A[b] is M x K, B[b] is K x N, both read through arbitrary row/col strides
// and per-batch offsets (transposed, narrowed and broadcast views need no
// copy); out is contiguous [batch, M, N] starting at element 0.
// Split K: with k_chunk < K, workgroup split s sums only k in
// [s * k_chunk, (s + 1) * k_chunk) and writes out[s, batch, M, N]; a second
// kernel (sum_splits.wgsl) adds the splits up. Unsplit: k_chunk >= K.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write). Immediates: MatmulParams.
//
// Tiling: one workgroup of 16 x 16 threads computes a 64 x 64 output tile;
// each thread owns a 4 x 4 micro-tile (rows ty*4.., cols tx*4..). K is walked
// in steps of 16: each step stages a 64 x 16 slice of A and a 16 x 64 slice
// of B in workgroup memory (k-major, so a thread's 4 rows / 4 cols are one
// vec4), and the next step's slice is fetched into registers while the
// current one is multiplied.
//
// Workgroups are a folded 1-D grid over (batch, tile row, tile col) with the
// tile column fastest, so neighbouring workgroups share the same A rows.

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

// Which index of each operand runs fastest in memory picks how the 256
// threads walk a staged slice, so that neighbouring threads read
// neighbouring addresses (coalesced) for both plain and transposed views.
// A_M_FAST = 1: A's rows are unit-stride (e.g. a transposed view).
// B_K_FAST = 1: B's rows are unit-stride (e.g. transposed weights, x @ W^T).
override A_M_FAST: u32 = 0u;
override B_K_FAST: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const TILE: u32 = 64u;     // output tile edge (rows and cols)
const TILE_K: u32 = 16u;   // K step
const THREADS: u32 = 256u;
const LOADS: u32 = 4u;     // TILE * TILE_K / THREADS elements per operand per thread
// Row length of a staged slice in vec4s: 64 floats + 4 pad. The pad spreads
// the k-fast stores (stride of one row) over more banks: 2-way instead of
// 16-way conflicts, while keeping every row vec4-aligned.
const ROW4: u32 = 17u;

// a_tile[k * ROW4 + m / 4][m % 4] = A[row0 + m, k0 + k]; b_tile likewise with n.
var<workgroup> a_tile: array<vec4<f32>, 272>; // TILE_K * ROW4
var<workgroup> b_tile: array<vec4<f32>, 272>;

// (m, k) within the slice of A loaded as element `i` by thread `lid`.
fn a_slot(lid: u32, i: u32) -> vec2<u32> {
    let e = lid + i * THREADS;
    if A_M_FAST == 1u {
        return vec2<u32>(e % TILE, e / TILE);
    }
    return vec2<u32>(e / TILE_K, e % TILE_K);
}

// (n, k) within the slice of B loaded as element `i` by thread `lid`.
fn b_slot(lid: u32, i: u32) -> vec2<u32> {
    let e = lid + i * THREADS;
    if B_K_FAST == 1u {
        return vec2<u32>(e / TILE_K, e % TILE_K);
    }
    return vec2<u32>(e % TILE, e / TILE);
}

fn load_a(base: u32, row0: u32, k0: u32, k_end: u32, lid: u32, i: u32) -> f32 {
    let s = a_slot(lid, i);
    let r = row0 + s.x;
    let c = k0 + s.y;
    if r < p.m && c < k_end {
        return a[base + r * p.a_rs + c * p.a_cs];
    }
    return 0.0; // zero padding makes edge tiles exact without special cases
}

fn load_b(base: u32, col0: u32, k0: u32, k_end: u32, lid: u32, i: u32) -> f32 {
    let s = b_slot(lid, i);
    let c = col0 + s.x;
    let r = k0 + s.y;
    if r < k_end && c < p.n {
        return b[base + r * p.b_rs + c * p.b_cs];
    }
    return 0.0;
}

@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    let tile_col = g % p.tiles_n;
    let tile_row = (g % p.tiles_mn) / p.tiles_n;
    // g = (split * batches + batch index) * tiles_mn + tile.
    let mat = g / p.tiles_mn;
    let bi = mat % p.batches;
    let split = mat / p.batches;
    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);

    // Batch offsets of this matrix in A and B (broadcast dims have stride 0).
    var rem = bi;
    var a_base = p.a_offset;
    var b_base = p.b_offset;
    for (var d = 3; d >= 0; d--) {
        let size = p.batch[d];
        let idx = rem % size;
        rem /= size;
        a_base += idx * p.a_bstrides[d];
        b_base += idx * p.b_bstrides[d];
    }

    let row0 = tile_row * TILE;
    let col0 = tile_col * TILE;
    let tx = lid % 16u;
    let ty = lid / 16u;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    // Register staging of the next slice (fetched while the current one is used).
    var ra: array<f32, 4>;
    var rb: array<f32, 4>;
    for (var i = 0u; i < LOADS; i++) {
        ra[i] = load_a(a_base, row0, k_begin, k_end, lid, i);
        rb[i] = load_b(b_base, col0, k_begin, k_end, lid, i);
    }

    for (var k0 = k_begin; k0 < k_end; k0 += TILE_K) {
        for (var i = 0u; i < LOADS; i++) {
            let sa = a_slot(lid, i);
            a_tile[sa.y * ROW4 + sa.x / 4u][sa.x % 4u] = ra[i];
            let sb = b_slot(lid, i);
            b_tile[sb.y * ROW4 + sb.x / 4u][sb.x % 4u] = rb[i];
        }
        workgroupBarrier();

        let next = k0 + TILE_K;
        if next < k_end {
            for (var i = 0u; i < LOADS; i++) {
                ra[i] = load_a(a_base, row0, next, k_end, lid, i);
                rb[i] = load_b(b_base, col0, next, k_end, lid, i);
            }
        }

        for (var kk = 0u; kk < TILE_K; kk++) {
            let av = a_tile[kk * ROW4 + ty];
            let bv = b_tile[kk * ROW4 + tx];
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }

    // Output (or this split's partial sums) is contiguous [.., M, N].
    let out_base = mat * p.m * p.n;
    let col = col0 + tx * 4u;
    let row = row0 + ty * 4u;
    write_row(out_base, row, col, acc0);
    write_row(out_base, row + 1u, col, acc1);
    write_row(out_base, row + 2u, col, acc2);
    write_row(out_base, row + 3u, col, acc3);
}

fn write_row(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if row >= p.m {
        return;
    }
    let at = base + row * p.n + col;
    if col < p.n { out[at] = v.x; }
    if col + 1u < p.n { out[at + 1u] = v.y; }
    if col + 2u < p.n { out[at + 2u] = v.z; }
    if col + 3u < p.n { out[at + 3u] = v.w; }
}
