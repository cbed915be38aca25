// Batched f32 GEMM for products with a short output side, at most 16 rows
// or 16 columns: classifier heads (x @ W^T with 10 outputs), their weight
// gradients (10 rows) and row sums alone (`linear`'s bias gradient: a
// product whose only column is the ones column). The tiled kernels pad
// such a side to 32-128 and need a split-K pass to keep the GPU busy;
// here one dispatch does it all: each workgroup takes WIDE_LANES indices
// of the long side and the whole short side, its 256 threads share K
// between them (the short side staged in workgroup memory 256 k's at a
// time), and a tree in workgroup memory adds up their sums.
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
// K per round: the short side's values for these k's are staged in
// workgroup memory first (loaded by all threads at once, each read from
// there by every long-side index that needs it), then every thread sums
// its k's of the round.
const CHUNK: u32 = 256u;

// Round staging: short-side elements 4g..4g+3 at k = round start + c are
// tiles[g * CHUNK + c]. Then the threads' sums: group g of thread lid at
// tiles[g * THREADS + lid].
var<workgroup> tiles: array<vec4<f32>, 1024>;

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

// Elements 4g..4g+3 of the short side at k.
fn short4(g: u32, k: u32) -> vec4<f32> {
    let i = 4u * g;
    return vec4<f32>(short_at(i, k), short_at(i + 1u, k), short_at(i + 2u, k), short_at(i + 3u, k));
}

// Element w of the long side at k (0 past K).
fn long_at(w: u32, k: u32) -> f32 {
    if k >= p.k {
        return 0.0;
    }
    if SHORT_M == 1u {
        return b_at(k, w);
    }
    return a_at(w, k);
}

// Adds long-side value v times the staged short side at round column c.
fn accumulate(v: f32, c: u32) {
    acc0 += v * tiles[c];
    if short_len > 4u {
        acc1 += v * tiles[CHUNK + c];
    }
    if short_len > 8u {
        acc2 += v * tiles[2u * CHUNK + c];
    }
    if short_len > 12u {
        acc3 += v * tiles[3u * CHUNK + c];
    }
}

// Output (row, col) = v plus the bias, through the ReLU epilogue and
// OUT_RELU_MASK.
fn store_one(row: u32, col: u32, v: f32) {
    var x = v;
    if HAS_BIAS == 1u {
        x += bias_at(col);
    }
    if ACT_RELU == 1u {
        x = relu4(vec4<f32>(x)).x;
    }
    let at = out_at(row, col);
    out[at] = out_relu_masked(x, at);
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
    let groups = (select(p.n, p.m, SHORT_M == 1u) + 3u) / 4u;
    let live = w < long_len;

    acc0 = vec4<f32>(0.0);
    acc1 = vec4<f32>(0.0);
    acc2 = vec4<f32>(0.0);
    acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < p.k; k0 += CHUNK) {
        // Stage the round's short side (the previous round is done reading).
        workgroupBarrier();
        let k = k0 + lid;
        for (var gi = 0u; gi < groups; gi++) {
            var v = vec4<f32>(0.0);
            if k < p.k {
                v = short4(gi, k);
            }
            tiles[gi * CHUNK + lid] = v;
        }
        workgroupBarrier();
        if live {
            // This thread's k's of the round, four long-side loads issued
            // together before any is used.
            for (var c = kk; c < CHUNK; c += 4u * k_lanes) {
                let v0 = long_at(w, k0 + c);
                let v1 = long_at(w, k0 + c + k_lanes);
                let v2 = long_at(w, k0 + c + 2u * k_lanes);
                let v3 = long_at(w, k0 + c + 3u * k_lanes);
                accumulate(v0, c);
                accumulate(v1, c + k_lanes);
                accumulate(v2, c + 2u * k_lanes);
                accumulate(v3, c + 3u * k_lanes);
            }
        }
    }

    workgroupBarrier();
    tiles[lid] = acc0;
    tiles[THREADS + lid] = acc1;
    tiles[2u * THREADS + lid] = acc2;
    tiles[3u * THREADS + lid] = acc3;
    workgroupBarrier();
    // Halve the K lanes each step: lane kk adds lane kk + s (a fixed order,
    // so every run sums alike).
    for (var s = k_lanes / 2u; s > 0u; s /= 2u) {
        if kk < s {
            let other = lid + s * kk_step;
            for (var gi = 0u; gi < groups; gi++) {
                tiles[gi * THREADS + lid] += tiles[gi * THREADS + other];
            }
        }
        workgroupBarrier();
    }
    if kk == 0u && live {
        let n_short = select(p.n, p.m, SHORT_M == 1u);
        for (var i = 0u; i < n_short; i++) {
            let v = tiles[(i / 4u) * THREADS + lid][i % 4u];
            if SHORT_M == 1u {
                store_one(i, w, v);
            } else {
                store_one(w, i, v);
            }
        }
    }
}
