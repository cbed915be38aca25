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

// The operands of one k: A's 4 rows and B's 4 columns of this thread.
struct Step {
    a: vec4<f32>,
    b: vec4<f32>,
}

// This thread's first output row and column.
var<private> thread_row: u32;
var<private> thread_col: u32;
var<private> v0: vec4<f32>;
var<private> v1: vec4<f32>;
var<private> v2: vec4<f32>;
var<private> v3: vec4<f32>;

fn operands(k: u32) -> Step {
    return Step(
        vec4<f32>(a_at(thread_row, k), a_at(thread_row + 1u, k), a_at(thread_row + 2u, k), a_at(thread_row + 3u, k)),
        vec4<f32>(b_at(k, thread_col), b_at(k, thread_col + 1u), b_at(k, thread_col + 2u), b_at(k, thread_col + 3u)),
    );
}

fn accumulate(o: Step) {
    v0 += o.a.x * o.b;
    v1 += o.a.y * o.b;
    v2 += o.a.z * o.b;
    v3 += o.a.w * o.b;
}

@compute @workgroup_size(256)
fn matmul_thin(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    _ = place(g, TILE_M, TILE_N);
    thread_row = row0 + (lid / COLS) * 4u;
    thread_col = col0 + (lid % COLS) * 4u;
    v0 = vec4<f32>(0.0);
    v1 = vec4<f32>(0.0);
    v2 = vec4<f32>(0.0);
    v3 = vec4<f32>(0.0);
    // Two k's per round, all their loads issued before the first use.
    var k = 0u;
    while k + 1u < p.k {
        let o0 = operands(k);
        let o1 = operands(k + 1u);
        accumulate(o0);
        accumulate(o1);
        k += 2u;
    }
    if k < p.k {
        accumulate(operands(k));
    }
    store_block(thread_row, thread_col, v0, v1, v2, v3);
}
