// Batched f32 GEMM for products over a short K (at most 16: a classifier
// head's input gradient, [1024, 10] x [10, 1024]), whose cost is writing
// the output: each thread computes 4 x 4 outputs straight from the
// operands (cached in L1), with no workgroup-memory staging and no
// barrier, and stores them as the tiled kernels do. 32 x 128 output tiles
// per workgroup of 256 threads (8 rows of threads by 32 columns).
// Operands, strides, batches, bias, ReLU epilogue, ReLU mask and the ones
// column: common/matmul_params.wgsl (never split: k_chunk >= K). Works for
// any K; the plan sends it only short ones.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/matmul_store.wgsl

const TILE_M: u32 = 32u;
const TILE_N: u32 = 128u;
const COLS: u32 = 32u; // threads per row of threads

// A[row, k] through the ReLU mask (0 past M).
fn a_at(row: u32, k: u32) -> f32 {
    if row >= p.m {
        return 0.0;
    }
    let at = a_base + row * p.a_rs + k * p.a_cs;
    return relu_masked(a[at], at);
}

// B[k, col] (0 past N); with ONES_COLUMN its last column is ones.
fn b_at(k: u32, col: u32) -> f32 {
    if col >= p.n {
        return 0.0;
    }
    if ONES_COLUMN == 1u && col + 1u == p.n {
        return 1.0;
    }
    return b[b_base + k * p.b_rs + col * p.b_cs];
}

@compute @workgroup_size(256)
fn matmul_thin(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    _ = place(g, TILE_M, TILE_N);
    let row = row0 + (lid / COLS) * 4u;
    let col = col0 + (lid % COLS) * 4u;
    var v0 = vec4<f32>(0.0);
    var v1 = vec4<f32>(0.0);
    var v2 = vec4<f32>(0.0);
    var v3 = vec4<f32>(0.0);
    // Two k's per round, all their loads issued before the first use.
    var k = 0u;
    while k + 1u < p.k {
        let a0 = vec4<f32>(a_at(row, k), a_at(row + 1u, k), a_at(row + 2u, k), a_at(row + 3u, k));
        let b0 = vec4<f32>(b_at(k, col), b_at(k, col + 1u), b_at(k, col + 2u), b_at(k, col + 3u));
        let k1 = k + 1u;
        let a1 = vec4<f32>(a_at(row, k1), a_at(row + 1u, k1), a_at(row + 2u, k1), a_at(row + 3u, k1));
        let b1 = vec4<f32>(b_at(k1, col), b_at(k1, col + 1u), b_at(k1, col + 2u), b_at(k1, col + 3u));
        v0 += a0.x * b0;
        v1 += a0.y * b0;
        v2 += a0.z * b0;
        v3 += a0.w * b0;
        v0 += a1.x * b1;
        v1 += a1.y * b1;
        v2 += a1.z * b1;
        v3 += a1.w * b1;
        k += 2u;
    }
    if k < p.k {
        let a0 = vec4<f32>(a_at(row, k), a_at(row + 1u, k), a_at(row + 2u, k), a_at(row + 3u, k));
        let b0 = vec4<f32>(b_at(k, col), b_at(k, col + 1u), b_at(k, col + 2u), b_at(k, col + 3u));
        v0 += a0.x * b0;
        v1 += a0.y * b0;
        v2 += a0.z * b0;
        v3 += a0.w * b0;
    }
    store_block(row, col, v0, v1, v2, v3);
}
