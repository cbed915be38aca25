// Gradient of the per-sample cross-entropy (kernels/nn/cross_entropy.wgsl)
// w.r.t. the logits, fused into one pass per row: the online (max, sum of
// exp) fold and workgroup tree, then every thread writes its elements of
//   dlogits[n, c] = grad[n] * (softmax[n, c] - (1 - ls) * [c == t_n] - ls / C)
// (an all-zero row where t_n == ignore_index): common/cross_entropy_rows.wgsl.
//
// A workgroup of 256 threads serves 256 / lanes rows with `lanes` threads
// per row. Logits, target and grad are strided views; the output is a
// contiguous [N, C].
// Bindings: 0 logits (read), 1 target (read, i32), 2 grad (read),
// 3 out (read_write), 4 divisor (read; only with HAS_DIVISOR), 5 fault.
// A target outside 0..C that is not ignore_index raises fault code 5 and
// is clamped.

//! include common/cross_entropy_rows.wgsl

struct CrossEntropyParams {
    rows: u32,
    n: u32,              // classes C
    x_offset: u32,
    x_row_stride: u32,
    x_col_stride: u32,
    t_offset: u32,
    t_stride: u32,
    lanes: u32,
    smoothing: u32,      // f32 bits
    ignore_index: u32,   // i32 bits
    g_offset: u32,
    g_stride: u32,
    d_offset: u32,       // backward with HAS_DIVISOR: the divisor's element
}

const WG: u32 = 256u;
const FAULT_CROSS_ENTROPY_TARGET: u32 = 5u;

var<immediate> p: CrossEntropyParams;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> labels: array<i32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// HAS_DIVISOR = 1 (the fused 'mean' reduction): grad is divided by
// divisor[d_offset], the count of samples not ignored, as the mean's own
// backward would (one dispatch instead of a division and this pass).
@group(0) @binding(4) var<storage, read> divisor: array<f32>;
@group(0) @binding(5) var<storage, read_write> fault: array<atomic<u32>, 4>;

override HAS_DIVISOR: u32 = 0u;

var<workgroup> smax: array<f32, 256>;
var<workgroup> ssum: array<f32, 256>;

fn upstream(row: u32) -> f32 {
    let g = grad[p.g_offset + row * p.g_stride];
    if HAS_DIVISOR == 1u {
        return g / divisor[p.d_offset];
    }
    return g;
}

fn store_grad(at: u32, d: f32) {
    out[at] = d;
}

@compute @workgroup_size(256)
fn cross_entropy_backward_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    grad_rows(wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y, lid, p.lanes);
}
