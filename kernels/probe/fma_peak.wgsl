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
