// Batched f32 GEMM for products with a short output side, at most 16 rows
// or 16 columns: classifier heads (x @ W^T with 10 outputs), their weight
// gradients (10 rows) and row sums alone (`linear`'s bias gradient: a
// product whose only column is the ones column). The tiled kernels pad
// such a side to 32-128 and need a split-K pass to keep the GPU busy;
// here one dispatch does it all: each workgroup takes WIDE_LANES indices
// of the long side and the whole short side, its 256 threads share K
// between them, and a tree in workgroup memory adds up their sums.
//
// SHORT_M = 0: the columns (N <= 16) are the short side, a workgroup's
// indices are rows; SHORT_M = 1: the rows (M <= 16) are, its indices are
// columns. WIDE_FAST = 1: the long side's index is the unit-stride one of
// its operand, so neighbouring threads take neighbouring indices (and
// K_LANES = 256 / WIDE_LANES k's apart); WIDE_FAST = 0: K is, so
// neighbouring threads take neighbouring k. Either way a warp's loads of
// the long operand are coalesced; the short operand (at most 16 x K) stays
// in the caches.
//
// Operands, strides, batches, bias, ReLU epilogue, ReLU mask and the ones
// column: common/matmul_params.wgsl. Never split (k_chunk >= K); the
// immediates' tile counts are per WIDE_LANES long-side indices (tiles of
// WIDE_LANES x 16 or 16 x WIDE_LANES).
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.

//! include common/matmul_params.wgsl
//! include common/matmul_store.wgsl

override SHORT_M: u32 = 0u;
override WIDE_FAST: u32 = 0u;
override WIDE_LANES: u32 = 8u;

const THREADS: u32 = 256u;
// The longest short side (four vec4 sums per thread).
const SHORT: u32 = 16u;

// Each thread's sums, element i of the short side at i * THREADS + lid.
var<workgroup> partial: array<f32, 4096>;

var<private> acc0: vec4<f32>;
var<private> acc1: vec4<f32>;
var<private> acc2: vec4<f32>;
var<private> acc3: vec4<f32>;
var<private> short_len: u32;

// A[row, k], masked by A_RELU_MASK.
fn a_at(row: u32, k: u32) -> f32 {
    let at = a_base + row * p.a_rs + k * p.a_cs;
    return relu_masked(a[at], at);
}

// B[k, col]; with ONES_COLUMN its last column is ones (never read).
fn b_at(k: u32, col: u32) -> f32 {
    if ONES_COLUMN == 1u && col + 1u == p.n {
        return 1.0;
    }
    return b[b_base + k * p.b_rs + col * p.b_cs];
}

// Element i of the short side at k (0 past its end).
fn short_at(i: u32, k: u32) -> f32 {
    if i >= short_len {
        return 0.0;
    }
    if SHORT_M == 1u {
        return a_at(i, k);
    }
    return b_at(k, i);
}

// Element w of the long side at k.
fn long_at(w: u32, k: u32) -> f32 {
    if SHORT_M == 1u {
        return b_at(k, w);
    }
    return a_at(w, k);
}

// Adds long-side value v times the short side at k.
fn accumulate(v: f32, k: u32) {
    acc0 += v * vec4<f32>(short_at(0u, k), short_at(1u, k), short_at(2u, k), short_at(3u, k));
    if short_len > 4u {
        acc1 += v * vec4<f32>(short_at(4u, k), short_at(5u, k), short_at(6u, k), short_at(7u, k));
    }
    if short_len > 8u {
        acc2 += v * vec4<f32>(short_at(8u, k), short_at(9u, k), short_at(10u, k), short_at(11u, k));
    }
    if short_len > 12u {
        acc3 += v * vec4<f32>(short_at(12u, k), short_at(13u, k), short_at(14u, k), short_at(15u, k));
    }
}

// Output (row, col) = v plus the bias, through the ReLU epilogue.
fn store_one(row: u32, col: u32, v: f32) {
    var x = v;
    if HAS_BIAS == 1u {
        x += bias_at(col);
    }
    if ACT_RELU == 1u {
        x = relu4(vec4<f32>(x)).x;
    }
    out[out_at(row, col)] = x;
}

@compute @workgroup_size(256)
fn matmul_skinny(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    let k_lanes = THREADS / WIDE_LANES;
    var lane: u32;
    var kk: u32;
    // The partner a tree step adds: the same lane, kk + 1 (times s).
    var kk_step: u32;
    if WIDE_FAST == 1u {
        lane = lid % WIDE_LANES;
        kk = lid / WIDE_LANES;
        kk_step = WIDE_LANES;
    } else {
        kk = lid % k_lanes;
        lane = lid / k_lanes;
        kk_step = 1u;
    }
    var w: u32;
    var long_len: u32;
    if SHORT_M == 1u {
        _ = place(g, SHORT, WIDE_LANES);
        w = col0 + lane;
        long_len = p.n;
        short_len = p.m;
    } else {
        _ = place(g, WIDE_LANES, SHORT);
        w = row0 + lane;
        long_len = p.m;
        short_len = p.n;
    }

    acc0 = vec4<f32>(0.0);
    acc1 = vec4<f32>(0.0);
    acc2 = vec4<f32>(0.0);
    acc3 = vec4<f32>(0.0);
    if w < long_len {
        // Four k's per round, their long-side loads issued together (each
        // round waits on memory once, not four times).
        var k = kk;
        let step = k_lanes;
        while k + 3u * step < p.k {
            let v0 = long_at(w, k);
            let v1 = long_at(w, k + step);
            let v2 = long_at(w, k + 2u * step);
            let v3 = long_at(w, k + 3u * step);
            accumulate(v0, k);
            accumulate(v1, k + step);
            accumulate(v2, k + 2u * step);
            accumulate(v3, k + 3u * step);
            k += 4u * step;
        }
        while k < p.k {
            accumulate(long_at(w, k), k);
            k += step;
        }
    }

    let s0 = lid;
    partial[s0] = acc0.x;
    partial[THREADS + s0] = acc0.y;
    partial[2u * THREADS + s0] = acc0.z;
    partial[3u * THREADS + s0] = acc0.w;
    partial[4u * THREADS + s0] = acc1.x;
    partial[5u * THREADS + s0] = acc1.y;
    partial[6u * THREADS + s0] = acc1.z;
    partial[7u * THREADS + s0] = acc1.w;
    partial[8u * THREADS + s0] = acc2.x;
    partial[9u * THREADS + s0] = acc2.y;
    partial[10u * THREADS + s0] = acc2.z;
    partial[11u * THREADS + s0] = acc2.w;
    partial[12u * THREADS + s0] = acc3.x;
    partial[13u * THREADS + s0] = acc3.y;
    partial[14u * THREADS + s0] = acc3.z;
    partial[15u * THREADS + s0] = acc3.w;
    workgroupBarrier();
    // Halve the K lanes each step: lane kk adds lane kk + s (a fixed order,
    // so every run sums alike).
    let n_short = select(p.n, p.m, SHORT_M == 1u);
    for (var s = k_lanes / 2u; s > 0u; s /= 2u) {
        if kk < s {
            let other = lid + s * kk_step;
            for (var i = 0u; i < n_short; i++) {
                partial[i * THREADS + lid] += partial[i * THREADS + other];
            }
        }
        workgroupBarrier();
    }
    if kk == 0u && w < long_len {
        for (var i = 0u; i < n_short; i++) {
            let v = partial[i * THREADS + lid];
            if SHORT_M == 1u {
                store_one(i, w, v);
            } else {
                store_one(w, i, v);
            }
        }
    }
}
