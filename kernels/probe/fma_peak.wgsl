// Throughput probes for the fp32 GEMM cores (benchmarks only, nothing in
// the library dispatches them). Each thread keeps 64 f32 accumulators as
// 16 vec4s, as common/gemm_128.wgsl does, so the probes isolate what bounds
// that core:
//   fma_peak        fused multiply-adds on registers alone: the FMA issue
//                   rate the driver gets out of the GPU (its clock);
//   fma_peak_shared gemm_128's inner step exactly (4 vec4 workgroup reads
//                   per 64 FMAs, 8 k per step, one barrier per step), with
//                   no global loads or staging.
//   fma_peak_shared_nobar  the same without the barrier;
//   fma_peak_shared_ahead  the same with each k's operands read from
//                   workgroup memory one k ahead, into registers;
//   fma_peak_stage  the shared step plus gemm_128's staging: scalar global
//                   loads through runtime strides with bounds checks (A
//                   k-contiguous, B n-contiguous), scalar stores into the
//                   other buffer;
//   fma_peak_stage4 the same staging with vec4 global loads (A: one vec4
//                   along k, stored as 4 scalars; B: one vec4 along n,
//                   stored whole).
// A thread does `iters` x 64 FMAs (x 8 in the shared probes) and writes one
// value so nothing can be dropped.
//
// Bindings (every probe, read or not): 0 out (read_write, one f32 per
// thread), 1 src (read, f32) and 2 src4 (read, the same data as vec4s).
// Immediates: ProbeParams.

struct ProbeParams {
    iters: u32,
    // Added to every start value; 0 in practice, unknown to the compiler.
    seed: f32,
    // Row stride (elements) of the staging probes' 128-row source
    // matrices, and their element count (bounds checks, as gemm_128's).
    stride: u32,
    len: u32,
}

var<immediate> p: ProbeParams;

@group(0) @binding(0) var<storage, read_write> out: array<f32>;

const ROW4: u32 = 33u;    // vec4s per staged k-row, as gemm_128
const STAGE: u32 = 264u;

var<workgroup> a_tile: array<vec4<f32>, 528>;
var<workgroup> b_tile: array<vec4<f32>, 528>;

var<private> c00: vec4<f32>;
var<private> c01: vec4<f32>;
var<private> c10: vec4<f32>;
var<private> c11: vec4<f32>;
var<private> c20: vec4<f32>;
var<private> c21: vec4<f32>;
var<private> c30: vec4<f32>;
var<private> c31: vec4<f32>;
var<private> c40: vec4<f32>;
var<private> c41: vec4<f32>;
var<private> c50: vec4<f32>;
var<private> c51: vec4<f32>;
var<private> c60: vec4<f32>;
var<private> c61: vec4<f32>;
var<private> c70: vec4<f32>;
var<private> c71: vec4<f32>;

fn start(lid: u32) {
    let x = vec4<f32>(f32(lid) * 1e-6 + p.seed);
    c00 = x;
    c01 = x + 0.01;
    c10 = x + 0.02;
    c11 = x + 0.03;
    c20 = x + 0.04;
    c21 = x + 0.05;
    c30 = x + 0.06;
    c31 = x + 0.07;
    c40 = x + 0.08;
    c41 = x + 0.09;
    c50 = x + 0.10;
    c51 = x + 0.11;
    c60 = x + 0.12;
    c61 = x + 0.13;
    c70 = x + 0.14;
    c71 = x + 0.15;
}

fn finish(gid: u32) {
    let s = c00 + c01 + c10 + c11 + c20 + c21 + c30 + c31 + c40 + c41 + c50 + c51 + c60 + c61 + c70 + c71;
    out[gid] = s.x + s.y + s.z + s.w;
}

fn mac4(a0: vec4<f32>, a1: vec4<f32>, b0: vec4<f32>, b1: vec4<f32>) {
    c00 = fma(vec4<f32>(a0.x), b0, c00);
    c01 = fma(vec4<f32>(a0.x), b1, c01);
    c10 = fma(vec4<f32>(a0.y), b0, c10);
    c11 = fma(vec4<f32>(a0.y), b1, c11);
    c20 = fma(vec4<f32>(a0.z), b0, c20);
    c21 = fma(vec4<f32>(a0.z), b1, c21);
    c30 = fma(vec4<f32>(a0.w), b0, c30);
    c31 = fma(vec4<f32>(a0.w), b1, c31);
    c40 = fma(vec4<f32>(a1.x), b0, c40);
    c41 = fma(vec4<f32>(a1.x), b1, c41);
    c50 = fma(vec4<f32>(a1.y), b0, c50);
    c51 = fma(vec4<f32>(a1.y), b1, c51);
    c60 = fma(vec4<f32>(a1.z), b0, c60);
    c61 = fma(vec4<f32>(a1.z), b1, c61);
    c70 = fma(vec4<f32>(a1.w), b0, c70);
    c71 = fma(vec4<f32>(a1.w), b1, c71);
}

@compute @workgroup_size(256)
fn fma_peak(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    // Operands that stay in registers; close to 1 so nothing overflows.
    let a0 = vec4<f32>(0.9999, 0.9998, 0.9997, 0.9996) + p.seed;
    let a1 = vec4<f32>(0.9995, 0.9994, 0.9993, 0.9992) + p.seed;
    let b0 = vec4<f32>(1e-4, 2e-4, 3e-4, 4e-4) + p.seed;
    let b1 = vec4<f32>(5e-4, 6e-4, 7e-4, 8e-4) + p.seed;
    for (var i = 0u; i < p.iters; i++) {
        mac4(a0, a1, b0, b1);
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@compute @workgroup_size(256)
fn fma_peak_shared(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 528u; i += 256u) {
        a_tile[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b_tile[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters; i++) {
        workgroupBarrier();
        let buf = (i % 2u) * STAGE;
        for (var k = 0u; k < 8u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            mac4(a_tile[ai], a_tile[ai + 16u], b_tile[bi], b_tile[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@compute @workgroup_size(256)
fn fma_peak_shared_nobar(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 528u; i += 256u) {
        a_tile[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b_tile[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    workgroupBarrier();
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters; i++) {
        let buf = (i % 2u) * STAGE;
        for (var k = 0u; k < 8u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            mac4(a_tile[ai], a_tile[ai + 16u], b_tile[bi], b_tile[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@compute @workgroup_size(256)
fn fma_peak_shared_ahead(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 528u; i += 256u) {
        a_tile[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b_tile[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters; i++) {
        workgroupBarrier();
        let buf = (i % 2u) * STAGE;
        var a0 = a_tile[buf + ty];
        var a1 = a_tile[buf + ty + 16u];
        var b0 = b_tile[buf + tx];
        var b1 = b_tile[buf + tx + 16u];
        for (var k = 1u; k < 8u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            let na0 = a_tile[ai];
            let na1 = a_tile[ai + 16u];
            let nb0 = b_tile[bi];
            let nb1 = b_tile[bi + 16u];
            mac4(a0, a1, b0, b1);
            a0 = na0;
            a1 = na1;
            b0 = nb0;
            b1 = nb1;
        }
        mac4(a0, a1, b0, b1);
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@group(0) @binding(1) var<storage, read> src: array<f32>;

// gemm_128's scalar staging of one 8-k step: A value j of this thread is
// row tid / 8 + 32 j, k = tid % 8 (A k-contiguous); B value j is row
// k = tid / 128 + 2 j, column tid % 128 (B n-contiguous); both read from
// `src` through the runtime stride, bounds-checked.
fn stage_scalar(lid: u32, k0: u32, buf: u32) {
    var av: array<f32, 4>;
    var bv: array<f32, 4>;
    for (var j = 0u; j < 4u; j++) {
        let r = lid / 8u + 32u * j;
        let c = k0 + lid % 8u;
        let at = r * p.stride + c;
        av[j] = select(0.0, src[at], at < p.len);
        let kr = k0 + lid / 128u + 2u * j;
        let bt = kr * p.stride + lid % 128u;
        bv[j] = select(0.0, src[bt], bt < p.len);
    }
    for (var j = 0u; j < 4u; j++) {
        let r = lid / 8u + 32u * j;
        a_tile[buf + (lid % 8u) * ROW4 + r / 4u][r % 4u] = av[j];
        let n = lid % 128u;
        b_tile[buf + (lid / 128u + 2u * j) * ROW4 + n / 4u][n % 4u] = bv[j];
    }
}

fn stage_step(lid: u32, i: u32) {
    let tx = lid % 16u;
    let ty = lid / 16u;
    let buf = (i % 2u) * STAGE;
    for (var k = 0u; k < 8u; k++) {
        let ai = buf + ty + k * ROW4;
        let bi = buf + tx + k * ROW4;
        mac4(a_tile[ai], a_tile[ai + 16u], b_tile[bi], b_tile[bi + 16u]);
    }
}

@compute @workgroup_size(256)
fn fma_peak_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    stage_scalar(lid, 0u, 0u);
    for (var i = 0u; i < p.iters; i++) {
        workgroupBarrier();
        // The next step's values go to the other buffer while this one is
        // multiplied (gemm_128 holds them in registers across the
        // multiply; the probe stores them after it).
        stage_step(lid, i);
        stage_scalar(lid, ((i + 1u) * 8u) % 1024u, ((i + 1u) % 2u) * STAGE);
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@group(0) @binding(2) var<storage, read> src4: array<vec4<f32>>;

// A: 128 rows x 8 k as 256 vec4s (row tid / 2, k 4 (tid % 2) ..+4), stored
// as 4 scalars into 4 k-rows; B: 8 k-rows x 128 n as 256 vec4s (row tid /
// 32, n 4 (tid % 32) ..+4), stored whole. `stride` counts vec4s here.
fn stage_vec4(lid: u32, k0: u32, buf: u32) {
    let r = lid / 2u;
    let kq = (lid % 2u) * 4u;
    let at = r * p.stride + (k0 + kq) / 4u;
    let av = select(vec4<f32>(0.0), src4[at], at < p.len);
    let kr = k0 + lid / 32u;
    let bt = kr * p.stride + lid % 32u;
    let bv = select(vec4<f32>(0.0), src4[bt], bt < p.len);
    a_tile[buf + kq * ROW4 + r / 4u][r % 4u] = av.x;
    a_tile[buf + (kq + 1u) * ROW4 + r / 4u][r % 4u] = av.y;
    a_tile[buf + (kq + 2u) * ROW4 + r / 4u][r % 4u] = av.z;
    a_tile[buf + (kq + 3u) * ROW4 + r / 4u][r % 4u] = av.w;
    b_tile[buf + (lid / 32u) * ROW4 + lid % 32u] = bv;
}

@compute @workgroup_size(256)
fn fma_peak_stage4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    stage_vec4(lid, 0u, 0u);
    for (var i = 0u; i < p.iters; i++) {
        workgroupBarrier();
        stage_step(lid, i);
        stage_vec4(lid, ((i + 1u) * 8u) % 1024u, ((i + 1u) % 2u) * STAGE);
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

// 16 k per barrier. Padded rows (33 vec4s, 33.8 KiB: beyond lavapipe's
// 32 KiB) or unpadded rows whose vec4 columns are XOR-swizzled by k % 8
// (32 KiB; the column of row-vec4 v at k is v ^ (k % 8), which keeps the
// two halves 16 vec4s apart).
var<workgroup> a16: array<vec4<f32>, 1056>;
var<workgroup> b16: array<vec4<f32>, 1056>;
var<workgroup> a16s: array<vec4<f32>, 1024>;
var<workgroup> b16s: array<vec4<f32>, 1024>;

@compute @workgroup_size(256)
fn fma_peak_k16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 1056u; i += 256u) {
        a16[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b16[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters; i += 2u) {
        workgroupBarrier();
        let buf = (i % 4u) * 264u;
        for (var k = 0u; k < 16u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            mac4(a16[ai], a16[ai + 16u], b16[bi], b16[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@compute @workgroup_size(256)
fn fma_peak_k16_swizzled(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 1024u; i += 256u) {
        a16s[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b16s[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters; i += 2u) {
        workgroupBarrier();
        let buf = (i % 4u) * 256u;
        for (var k = 0u; k < 16u; k++) {
            let ai = buf + (ty ^ (k % 8u)) + k * 32u;
            let bi = buf + (tx ^ (k % 8u)) + k * 32u;
            mac4(a16s[ai], a16s[ai + 16u], b16s[bi], b16s[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

// fma_peak_shared with every thread of a warp reading the same b vec4s
// (one address per load: is the inner step bound by workgroup-memory
// wavefronts?), and with a barrier every 4 k instead of 8 (how does the
// rate move with the barrier count?).
@compute @workgroup_size(256)
fn fma_peak_shared_bcast(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 528u; i += 256u) {
        a_tile[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b_tile[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid / 32u;
    let ty = lid / 64u;
    for (var i = 0u; i < p.iters; i++) {
        workgroupBarrier();
        let buf = (i % 2u) * STAGE;
        for (var k = 0u; k < 8u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            mac4(a_tile[ai], a_tile[ai + 16u], b_tile[bi], b_tile[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

@compute @workgroup_size(256)
fn fma_peak_shared_k4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    start(lid);
    for (var i = lid; i < 528u; i += 256u) {
        a_tile[i] = vec4<f32>(1e-3 * f32(i % 7u) + p.seed);
        b_tile[i] = vec4<f32>(1e-3 * f32(i % 5u) + p.seed);
    }
    let tx = lid % 16u;
    let ty = lid / 16u;
    for (var i = 0u; i < p.iters * 2u; i++) {
        workgroupBarrier();
        let buf = (i % 2u) * STAGE;
        for (var k = 0u; k < 4u; k++) {
            let ai = buf + ty + k * ROW4;
            let bi = buf + tx + k * ROW4;
            mac4(a_tile[ai], a_tile[ai + 16u], b_tile[bi], b_tile[bi + 16u]);
        }
    }
    finish(gid.x + gid.y * nwg.x * 256u);
}

// A real 128 x 128-tile product with no workgroup memory and no barrier:
// every operand read straight from global memory (L1 hits after the first
// warp), in the same 4-vec4-loads-per-64-FMAs pattern as gemm_128's inner
// step. C[M, N] = At^T B with both operands k-major (At [K, M], B [K, N]),
// packed in `src4`: At first, B at vec4 `k * M / 4`. M = N = 4 `stride`
// (vec4s per row), K = `len`; M and N multiples of 128, K of 4. `out`
// takes C row-major.
//   gemm_l1        one k per loop iteration;
//   gemm_l1_k4     four k per iteration, the 16 loads issued first;
//   gemm_l1_ahead  four k per iteration, the next four's loads issued
//                  before this four's FMAs (registers double-buffered).
fn l1_zero() {
    c00 = vec4<f32>(0.0);
    c01 = c00;
    c10 = c00;
    c11 = c00;
    c20 = c00;
    c21 = c00;
    c30 = c00;
    c31 = c00;
    c40 = c00;
    c41 = c00;
    c50 = c00;
    c51 = c00;
    c60 = c00;
    c61 = c00;
    c70 = c00;
    c71 = c00;
}

fn l1_put(m: u32, n: u32, v: vec4<f32>) {
    let at = m * p.stride * 4u + n;
    out[at] = v.x;
    out[at + 1u] = v.y;
    out[at + 2u] = v.z;
    out[at + 3u] = v.w;
}

fn l1_store(m0: u32, n0: u32) {
    l1_put(m0, n0, c00);
    l1_put(m0, n0 + 64u, c01);
    l1_put(m0 + 1u, n0, c10);
    l1_put(m0 + 1u, n0 + 64u, c11);
    l1_put(m0 + 2u, n0, c20);
    l1_put(m0 + 2u, n0 + 64u, c21);
    l1_put(m0 + 3u, n0, c30);
    l1_put(m0 + 3u, n0 + 64u, c31);
    l1_put(m0 + 64u, n0, c40);
    l1_put(m0 + 64u, n0 + 64u, c41);
    l1_put(m0 + 65u, n0, c50);
    l1_put(m0 + 65u, n0 + 64u, c51);
    l1_put(m0 + 66u, n0, c60);
    l1_put(m0 + 66u, n0 + 64u, c61);
    l1_put(m0 + 67u, n0, c70);
    l1_put(m0 + 67u, n0 + 64u, c71);
}

// This workgroup's tile (row, column) in 128s, or none past the grid.
fn l1_tile(wg: vec3<u32>, nwg: vec3<u32>) -> vec2<u32> {
    let tiles = p.stride / 32u;
    let w = wg.x + wg.y * nwg.x;
    return vec2<u32>(w / tiles, w % tiles);
}

@compute @workgroup_size(256)
fn gemm_l1(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k++) {
        mac4(src4[ai], src4[ai + 16u], src4[bi], src4[bi + 16u]);
        ai += row;
        bi += row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

@compute @workgroup_size(256)
fn gemm_l1_k4(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k += 4u) {
        let a00 = src4[ai];
        let a01 = src4[ai + 16u];
        let b00 = src4[bi];
        let b01 = src4[bi + 16u];
        let a10 = src4[ai + row];
        let a11 = src4[ai + row + 16u];
        let b10 = src4[bi + row];
        let b11 = src4[bi + row + 16u];
        let a20 = src4[ai + 2u * row];
        let a21 = src4[ai + 2u * row + 16u];
        let b20 = src4[bi + 2u * row];
        let b21 = src4[bi + 2u * row + 16u];
        let a30 = src4[ai + 3u * row];
        let a31 = src4[ai + 3u * row + 16u];
        let b30 = src4[bi + 3u * row];
        let b31 = src4[bi + 3u * row + 16u];
        mac4(a00, a01, b00, b01);
        mac4(a10, a11, b10, b11);
        mac4(a20, a21, b20, b21);
        mac4(a30, a31, b30, b31);
        ai += 4u * row;
        bi += 4u * row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

@compute @workgroup_size(256)
fn gemm_l1_ahead(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    var a0 = array<vec4<f32>, 8>();
    var b0 = array<vec4<f32>, 8>();
    for (var j = 0u; j < 4u; j++) {
        a0[2u * j] = src4[ai + j * row];
        a0[2u * j + 1u] = src4[ai + j * row + 16u];
        b0[2u * j] = src4[bi + j * row];
        b0[2u * j + 1u] = src4[bi + j * row + 16u];
    }
    for (var k = 4u; k <= p.len; k += 4u) {
        ai += 4u * row;
        bi += 4u * row;
        // Past the end the loads wrap to row 0 (in bounds, unused).
        let more = k < p.len;
        let an = select(t.x * 32u + ty, ai, more);
        let bn = select(p.len * row + t.y * 32u + tx, bi, more);
        let a10 = src4[an];
        let a11 = src4[an + 16u];
        let b10 = src4[bn];
        let b11 = src4[bn + 16u];
        let a20 = src4[an + row];
        let a21 = src4[an + row + 16u];
        let b20 = src4[bn + row];
        let b21 = src4[bn + row + 16u];
        let a30 = src4[an + 2u * row];
        let a31 = src4[an + 2u * row + 16u];
        let b30 = src4[bn + 2u * row];
        let b31 = src4[bn + 2u * row + 16u];
        let a40 = src4[an + 3u * row];
        let a41 = src4[an + 3u * row + 16u];
        let b40 = src4[bn + 3u * row];
        let b41 = src4[bn + 3u * row + 16u];
        mac4(a0[0], a0[1], b0[0], b0[1]);
        mac4(a0[2], a0[3], b0[2], b0[3]);
        mac4(a0[4], a0[5], b0[4], b0[5]);
        mac4(a0[6], a0[7], b0[6], b0[7]);
        a0 = array<vec4<f32>, 8>(a10, a11, a20, a21, a30, a31, a40, a41);
        b0 = array<vec4<f32>, 8>(b10, b11, b20, b21, b30, b31, b40, b41);
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

// gemm_l1_k4 with A k-contiguous ([M, K] row-major, as a Linear's input):
// each thread reads its 8 rows as one vec4 along k each (a warp's 32
// threads touch 2 rows per load) and regroups them per k in registers.
@compute @workgroup_size(256)
fn gemm_l1_nn(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    let arow = p.len / 4u;
    var ai = (t.x * 128u + ty * 4u) * arow;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k += 4u) {
        let r0 = src4[ai];
        let r1 = src4[ai + arow];
        let r2 = src4[ai + 2u * arow];
        let r3 = src4[ai + 3u * arow];
        let r4 = src4[ai + 64u * arow];
        let r5 = src4[ai + 65u * arow];
        let r6 = src4[ai + 66u * arow];
        let r7 = src4[ai + 67u * arow];
        let b00 = src4[bi];
        let b01 = src4[bi + 16u];
        let b10 = src4[bi + row];
        let b11 = src4[bi + row + 16u];
        let b20 = src4[bi + 2u * row];
        let b21 = src4[bi + 2u * row + 16u];
        let b30 = src4[bi + 3u * row];
        let b31 = src4[bi + 3u * row + 16u];
        mac4(vec4<f32>(r0.x, r1.x, r2.x, r3.x), vec4<f32>(r4.x, r5.x, r6.x, r7.x), b00, b01);
        mac4(vec4<f32>(r0.y, r1.y, r2.y, r3.y), vec4<f32>(r4.y, r5.y, r6.y, r7.y), b10, b11);
        mac4(vec4<f32>(r0.z, r1.z, r2.z, r3.z), vec4<f32>(r4.z, r5.z, r6.z, r7.z), b20, b21);
        mac4(vec4<f32>(r0.w, r1.w, r2.w, r3.w), vec4<f32>(r4.w, r5.w, r6.w, r7.w), b30, b31);
        ai += 1u;
        bi += 4u * row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

// gemm_l1_k4's loop with 2 or 8 k per batch, and with the tiles visited in
// groups of 8 tile-rows (consecutive workgroups share B panels and a few A
// panels in L2).
fn l1_tile_grouped(wg: vec3<u32>, nwg: vec3<u32>) -> vec2<u32> {
    let tiles = p.stride / 32u;
    let w = wg.x + wg.y * nwg.x;
    let per_group = 8u * tiles;
    let first = (w / per_group) * 8u;
    let rows = min(8u, tiles - min(first, tiles));
    let inner = w % per_group;
    return vec2<u32>(first + inner % max(rows, 1u), inner / max(rows, 1u));
}

@compute @workgroup_size(256)
fn gemm_l1_k2(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k += 2u) {
        let a00 = src4[ai];
        let a01 = src4[ai + 16u];
        let b00 = src4[bi];
        let b01 = src4[bi + 16u];
        let a10 = src4[ai + row];
        let a11 = src4[ai + row + 16u];
        let b10 = src4[bi + row];
        let b11 = src4[bi + row + 16u];
        mac4(a00, a01, b00, b01);
        mac4(a10, a11, b10, b11);
        ai += 2u * row;
        bi += 2u * row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

@compute @workgroup_size(256)
fn gemm_l1_k8(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k += 8u) {
        let a00 = src4[ai];
        let a01 = src4[ai + 16u];
        let b00 = src4[bi];
        let b01 = src4[bi + 16u];
        let a10 = src4[ai + row];
        let a11 = src4[ai + row + 16u];
        let b10 = src4[bi + row];
        let b11 = src4[bi + row + 16u];
        let a20 = src4[ai + 2u * row];
        let a21 = src4[ai + 2u * row + 16u];
        let b20 = src4[bi + 2u * row];
        let b21 = src4[bi + 2u * row + 16u];
        let a30 = src4[ai + 3u * row];
        let a31 = src4[ai + 3u * row + 16u];
        let b30 = src4[bi + 3u * row];
        let b31 = src4[bi + 3u * row + 16u];
        let a40 = src4[ai + 4u * row];
        let a41 = src4[ai + 4u * row + 16u];
        let b40 = src4[bi + 4u * row];
        let b41 = src4[bi + 4u * row + 16u];
        let a50 = src4[ai + 5u * row];
        let a51 = src4[ai + 5u * row + 16u];
        let b50 = src4[bi + 5u * row];
        let b51 = src4[bi + 5u * row + 16u];
        let a60 = src4[ai + 6u * row];
        let a61 = src4[ai + 6u * row + 16u];
        let b60 = src4[bi + 6u * row];
        let b61 = src4[bi + 6u * row + 16u];
        let a70 = src4[ai + 7u * row];
        let a71 = src4[ai + 7u * row + 16u];
        let b70 = src4[bi + 7u * row];
        let b71 = src4[bi + 7u * row + 16u];
        mac4(a00, a01, b00, b01);
        mac4(a10, a11, b10, b11);
        mac4(a20, a21, b20, b21);
        mac4(a30, a31, b30, b31);
        mac4(a40, a41, b40, b41);
        mac4(a50, a51, b50, b51);
        mac4(a60, a61, b60, b61);
        mac4(a70, a71, b70, b71);
        ai += 8u * row;
        bi += 8u * row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}

@compute @workgroup_size(256)
fn gemm_l1_k4g(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = l1_tile_grouped(wg, nwg);
    if t.x >= p.stride / 32u {
        return;
    }
    l1_zero();
    let tx = lid % 16u;
    let ty = lid / 16u;
    let row = p.stride;
    var ai = t.x * 32u + ty;
    var bi = p.len * row + t.y * 32u + tx;
    for (var k = 0u; k < p.len; k += 4u) {
        let a00 = src4[ai];
        let a01 = src4[ai + 16u];
        let b00 = src4[bi];
        let b01 = src4[bi + 16u];
        let a10 = src4[ai + row];
        let a11 = src4[ai + row + 16u];
        let b10 = src4[bi + row];
        let b11 = src4[bi + row + 16u];
        let a20 = src4[ai + 2u * row];
        let a21 = src4[ai + 2u * row + 16u];
        let b20 = src4[bi + 2u * row];
        let b21 = src4[bi + 2u * row + 16u];
        let a30 = src4[ai + 3u * row];
        let a31 = src4[ai + 3u * row + 16u];
        let b30 = src4[bi + 3u * row];
        let b31 = src4[bi + 3u * row + 16u];
        mac4(a00, a01, b00, b01);
        mac4(a10, a11, b10, b11);
        mac4(a20, a21, b20, b21);
        mac4(a30, a31, b30, b31);
        ai += 4u * row;
        bi += 4u * row;
    }
    l1_store(t.x * 128u + ty * 4u, t.y * 128u + tx * 4u);
}
