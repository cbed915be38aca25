enable f16;
enable wgpu_cooperative_matrix;
// Batched GEMM on tensor cores for f32 tensors under
// set_float32_matmul_precision("medium"): the operands are rounded to f16
// as they are staged in workgroup memory, multiplied as 16 x 16 x 16
// cooperative-matrix tiles (coop_mat16x16, VK_KHR_cooperative_matrix) and
// summed in f32 accumulators; the output is f32. Operands, strides, split K
// and the immediates are those of the other matmul kernels
// (common/matmul_params.wgsl); only the tiling differs.
//
// Tiling: 128 x 256 output tiles, 256 threads = 8 subgroups of 32 lanes
// (the device only picks this kernel where subgroups are 32 wide), each
// subgroup a 64 x 64 block of 4 x 4 accumulator tiles; K in steps of 32,
// one buffer (the H100 probe, wgrad-bench coop_probe, found a second one
// no faster at this tile size). Edge tiles load zeros past M, N and K; output tiles that are
// not whole (or rows not 16-byte aligned) go through workgroup memory and
// are written element by element. The bias of `linear` (HAS_BIAS) is added
// to the finished f32 accumulators before either store, as a separate add
// would.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl

const TILE_M: u32 = 128u;
const TILE_N: u32 = 256u;
const TILE_K: u32 = 32u;
const THREADS: u32 = 256u;
// Subgroups per tile row (TILE_N / 64) and the 64 x 64 block of each.
const SUBGROUPS_N: u32 = 4u;
const WARP: u32 = 64u;
// Padded row lengths of the staged tiles (8 halves against bank conflicts;
// rows stay 16-byte aligned for the cooperative loads).
const A_ROW: u32 = 40u;   // TILE_K + 8
const B_ROW: u32 = 264u;  // TILE_N + 8
// Values each thread stages per K step.
const A_LOADS: u32 = 16u; // TILE_M * TILE_K / THREADS
const B_LOADS: u32 = 32u; // TILE_K * TILE_N / THREADS

var<workgroup> a_tile: array<f16, 5120>;   // TILE_M * A_ROW
var<workgroup> b_tile: array<f16, 8448>;   // TILE_K * B_ROW
// One 16 x 16 f32 tile per subgroup, for edge stores.
var<workgroup> edge: array<f32, 2048>;

var<private> tid: u32;

// Value i of a thread's A loads sits at tile row a_m + i * a_dm, k offset
// a_k + i * a_dk: k-fast (A's k unit-stride) rows tid / 32 + 8 i, k tid % 32;
// m-fast rows tid % 128, k tid / 128 + 2 i. Its address and tile slot are
// then first + i * step, worked out once per workgroup (the per-load index
// arithmetic, not the tensor cores, bounded the first version).
var<private> a_m: u32;
var<private> a_k: u32;
var<private> a_dm: u32;
var<private> a_dk: u32;
var<private> a_at: u32;     // address of value 0 at k = 0
var<private> a_step: u32;   // address step per value
// B likewise: n-fast columns tid % 256, k = i; k-fast columns tid / 32 + 8 i, k tid % 32.
var<private> b_n: u32;
var<private> b_k: u32;
var<private> b_dn: u32;
var<private> b_dk: u32;
var<private> b_at: u32;
var<private> b_step: u32;

fn place_loads() {
    if A_M_FAST == 1u {
        a_m = tid % TILE_M;
        a_k = tid / TILE_M;
        a_dm = 0u;
        a_dk = THREADS / TILE_M;
    } else {
        a_m = tid / TILE_K;
        a_k = tid % TILE_K;
        a_dm = THREADS / TILE_K;
        a_dk = 0u;
    }
    a_at = a_base + (row0 + a_m) * p.a_rs + a_k * p.a_cs;
    a_step = a_dm * p.a_rs + a_dk * p.a_cs;
    if B_K_FAST == 1u {
        b_n = tid / TILE_K;
        b_k = tid % TILE_K;
        b_dn = THREADS / TILE_K;
        b_dk = 0u;
    } else {
        b_n = tid % TILE_N;
        b_k = tid / TILE_N;
        b_dn = 0u;
        b_dk = THREADS / TILE_N;
    }
    b_at = b_base + b_k * p.b_rs + (col0 + b_n) * p.b_cs;
    b_step = b_dk * p.b_rs + b_dn * p.b_cs;
}

fn load_a(i: u32, k0: u32) -> f32 {
    let k = k0 + a_k + i * a_dk;
    if row0 + a_m + i * a_dm < p.m && k < k_stop {
        return a[a_at + i * a_step + k0 * p.a_cs];
    }
    return 0.0; // zero padding makes edge tiles exact without special cases
}

fn load_b(i: u32, k0: u32) -> f32 {
    let k = k0 + b_k + i * b_dk;
    if k < k_stop && col0 + b_n + i * b_dn < p.n {
        return b[b_at + i * b_step + k0 * p.b_rs];
    }
    return 0.0;
}

fn put_a(i: u32, v: f32) {
    a_tile[(a_m + i * a_dm) * A_ROW + a_k + i * a_dk] = f16(v);
}

fn put_b(i: u32, v: f32) {
    b_tile[(b_k + i * b_dk) * B_ROW + b_n + i * b_dn] = f16(v);
}

// Gathers the K step at k0 of A and B into the f16 tiles, 16 loads issued
// before their stores: written out because the driver does not unroll a
// loop whose body stores what it loads, and one load in flight at a time
// ran at a tenth of the tensor cores' speed.
fn stage(k0: u32) {
    {
        let v0 = load_a(0u, k0);
        let v1 = load_a(1u, k0);
        let v2 = load_a(2u, k0);
        let v3 = load_a(3u, k0);
        let v4 = load_a(4u, k0);
        let v5 = load_a(5u, k0);
        let v6 = load_a(6u, k0);
        let v7 = load_a(7u, k0);
        let v8 = load_a(8u, k0);
        let v9 = load_a(9u, k0);
        let v10 = load_a(10u, k0);
        let v11 = load_a(11u, k0);
        let v12 = load_a(12u, k0);
        let v13 = load_a(13u, k0);
        let v14 = load_a(14u, k0);
        let v15 = load_a(15u, k0);
        put_a(0u, v0);
        put_a(1u, v1);
        put_a(2u, v2);
        put_a(3u, v3);
        put_a(4u, v4);
        put_a(5u, v5);
        put_a(6u, v6);
        put_a(7u, v7);
        put_a(8u, v8);
        put_a(9u, v9);
        put_a(10u, v10);
        put_a(11u, v11);
        put_a(12u, v12);
        put_a(13u, v13);
        put_a(14u, v14);
        put_a(15u, v15);
    }
    {
        let v0 = load_b(0u, k0);
        let v1 = load_b(1u, k0);
        let v2 = load_b(2u, k0);
        let v3 = load_b(3u, k0);
        let v4 = load_b(4u, k0);
        let v5 = load_b(5u, k0);
        let v6 = load_b(6u, k0);
        let v7 = load_b(7u, k0);
        let v8 = load_b(8u, k0);
        let v9 = load_b(9u, k0);
        let v10 = load_b(10u, k0);
        let v11 = load_b(11u, k0);
        let v12 = load_b(12u, k0);
        let v13 = load_b(13u, k0);
        let v14 = load_b(14u, k0);
        let v15 = load_b(15u, k0);
        put_b(0u, v0);
        put_b(1u, v1);
        put_b(2u, v2);
        put_b(3u, v3);
        put_b(4u, v4);
        put_b(5u, v5);
        put_b(6u, v6);
        put_b(7u, v7);
        put_b(8u, v8);
        put_b(9u, v9);
        put_b(10u, v10);
        put_b(11u, v11);
        put_b(12u, v12);
        put_b(13u, v13);
        put_b(14u, v14);
        put_b(15u, v15);
    }
    {
        let v0 = load_b(16u, k0);
        let v1 = load_b(17u, k0);
        let v2 = load_b(18u, k0);
        let v3 = load_b(19u, k0);
        let v4 = load_b(20u, k0);
        let v5 = load_b(21u, k0);
        let v6 = load_b(22u, k0);
        let v7 = load_b(23u, k0);
        let v8 = load_b(24u, k0);
        let v9 = load_b(25u, k0);
        let v10 = load_b(26u, k0);
        let v11 = load_b(27u, k0);
        let v12 = load_b(28u, k0);
        let v13 = load_b(29u, k0);
        let v14 = load_b(30u, k0);
        let v15 = load_b(31u, k0);
        put_b(16u, v0);
        put_b(17u, v1);
        put_b(18u, v2);
        put_b(19u, v3);
        put_b(20u, v4);
        put_b(21u, v5);
        put_b(22u, v6);
        put_b(23u, v7);
        put_b(24u, v8);
        put_b(25u, v9);
        put_b(26u, v10);
        put_b(27u, v11);
        put_b(28u, v12);
        put_b(29u, v13);
        put_b(30u, v14);
        put_b(31u, v15);
    }
}

// Writes a 16 x 16 accumulator tile at (row, col) of the output, through
// this subgroup's slice of `edge` and with bounds checks. Every thread of
// the workgroup calls it (it holds barriers).
fn store_edge(t: coop_mat16x16<f32, C>, sg: u32, lane: u32, row: u32, col: u32) {
    let base = sg * 256u;
    let stride = 16u;
    coopStoreT(t, &edge[base], stride);
    workgroupBarrier();
    for (var e = lane; e < 256u; e += 32u) {
        let r = row + e / 16u;
        let c = col + e % 16u;
        if r < p.m && c < p.n {
            out[out_base + r * p.n + c] = edge[base + e];
        }
    }
    workgroupBarrier();
}

// A 16 x 16 accumulator tile each row of which is the bias of output
// columns col..col+15 (0 past N), built in this subgroup's slice of `edge`.
// Every thread of the workgroup calls it (it holds barriers).
fn bias_tile(sg: u32, lane: u32, col: u32) -> coop_mat16x16<f32, C> {
    let base = sg * 256u;
    for (var e = lane; e < 256u; e += 32u) {
        edge[base + e] = bias_at(col + e % 16u);
    }
    workgroupBarrier();
    let stride = 16u;
    let t = coopLoadT<coop_mat16x16<f32, C>>(&edge[base], stride);
    workgroupBarrier();
    return t;
}

@compute @workgroup_size(256)
fn matmul_coop(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    let split = place(g, TILE_M, TILE_N);
    let tile_row = row0;
    let tile_col = col0;

    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;
    place_loads();

    // This subgroup's 64 x 64 block within the tile.
    let sm = sg / SUBGROUPS_N;
    let sn = sg % SUBGROUPS_N;
    let a_at = sm * WARP * A_ROW;
    let b_at = sn * WARP;

    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = k_begin; k0 < k_end; k0 += TILE_K) {
        stage(k0);
        workgroupBarrier();
        for (var kk = 0u; kk < TILE_K; kk += 16u) {
            let ia0 = a_at + kk;
            let ia1 = ia0 + 16u * A_ROW;
            let ia2 = ia0 + 32u * A_ROW;
            let ia3 = ia0 + 48u * A_ROW;
            let a_row = A_ROW;
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ia0], a_row);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ia1], a_row);
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ia2], a_row);
            let a3 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[ia3], a_row);
            let ib0 = kk * B_ROW + b_at;
            let ib1 = ib0 + 16u;
            let ib2 = ib0 + 32u;
            let ib3 = ib0 + 48u;
            let b_row = B_ROW;
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[ib0], b_row);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[ib1], b_row);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[ib2], b_row);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[ib3], b_row);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
            c20 = coopMultiplyAdd(a2, b0, c20);
            c21 = coopMultiplyAdd(a2, b1, c21);
            c22 = coopMultiplyAdd(a2, b2, c22);
            c23 = coopMultiplyAdd(a2, b3, c23);
            c30 = coopMultiplyAdd(a3, b0, c30);
            c31 = coopMultiplyAdd(a3, b1, c31);
            c32 = coopMultiplyAdd(a3, b2, c32);
            c33 = coopMultiplyAdd(a3, b3, c33);
        }
        workgroupBarrier();
    }

    let r0 = tile_row + sm * WARP;
    let q0 = tile_col + sn * WARP;
    if HAS_BIAS == 1u {
        // One bias tile per 16-column block, added to its four row tiles
        // (workgroup-uniform: an override).
        let bias0 = bias_tile(sg, lane, q0);
        c00 = c00 + bias0;
        c10 = c10 + bias0;
        c20 = c20 + bias0;
        c30 = c30 + bias0;
        let bias1 = bias_tile(sg, lane, q0 + 16u);
        c01 = c01 + bias1;
        c11 = c11 + bias1;
        c21 = c21 + bias1;
        c31 = c31 + bias1;
        let bias2 = bias_tile(sg, lane, q0 + 32u);
        c02 = c02 + bias2;
        c12 = c12 + bias2;
        c22 = c22 + bias2;
        c32 = c32 + bias2;
        let bias3 = bias_tile(sg, lane, q0 + 48u);
        c03 = c03 + bias3;
        c13 = c13 + bias3;
        c23 = c23 + bias3;
        c33 = c33 + bias3;
    }
    // Whole tile in bounds with 16-byte aligned rows: straight to memory
    // (workgroup-uniform, so the edge path's barriers stay uniform).
    let whole = tile_row + TILE_M <= p.m && tile_col + TILE_N <= p.n && p.n % 4u == 0u;
    if whole {
        // Every index and stride a `let` of its own: naga 30's SPIR-V
        // writer panics ("expression is not cached") on arithmetic inside
        // a cooperative load's or store's pointer.
        let n = p.n;
        let o00 = out_base + r0 * n + q0;
        let o01 = o00 + 16u;
        let o02 = o00 + 32u;
        let o03 = o00 + 48u;
        let o10 = o00 + 16u * n;
        let o11 = o10 + 16u;
        let o12 = o10 + 32u;
        let o13 = o10 + 48u;
        let o20 = o00 + 32u * n;
        let o21 = o20 + 16u;
        let o22 = o20 + 32u;
        let o23 = o20 + 48u;
        let o30 = o00 + 48u * n;
        let o31 = o30 + 16u;
        let o32 = o30 + 32u;
        let o33 = o30 + 48u;
        coopStoreT(c00, &out[o00], n);
        coopStoreT(c01, &out[o01], n);
        coopStoreT(c02, &out[o02], n);
        coopStoreT(c03, &out[o03], n);
        coopStoreT(c10, &out[o10], n);
        coopStoreT(c11, &out[o11], n);
        coopStoreT(c12, &out[o12], n);
        coopStoreT(c13, &out[o13], n);
        coopStoreT(c20, &out[o20], n);
        coopStoreT(c21, &out[o21], n);
        coopStoreT(c22, &out[o22], n);
        coopStoreT(c23, &out[o23], n);
        coopStoreT(c30, &out[o30], n);
        coopStoreT(c31, &out[o31], n);
        coopStoreT(c32, &out[o32], n);
        coopStoreT(c33, &out[o33], n);
    } else {
        store_edge(c00, sg, lane, r0, q0);
        store_edge(c01, sg, lane, r0, q0 + 16u);
        store_edge(c02, sg, lane, r0, q0 + 32u);
        store_edge(c03, sg, lane, r0, q0 + 48u);
        store_edge(c10, sg, lane, r0 + 16u, q0);
        store_edge(c11, sg, lane, r0 + 16u, q0 + 16u);
        store_edge(c12, sg, lane, r0 + 16u, q0 + 32u);
        store_edge(c13, sg, lane, r0 + 16u, q0 + 48u);
        store_edge(c20, sg, lane, r0 + 32u, q0);
        store_edge(c21, sg, lane, r0 + 32u, q0 + 16u);
        store_edge(c22, sg, lane, r0 + 32u, q0 + 32u);
        store_edge(c23, sg, lane, r0 + 32u, q0 + 48u);
        store_edge(c30, sg, lane, r0 + 48u, q0);
        store_edge(c31, sg, lane, r0 + 48u, q0 + 16u);
        store_edge(c32, sg, lane, r0 + 48u, q0 + 32u);
        store_edge(c33, sg, lane, r0 + 48u, q0 + 48u);
    }
}
