// Gradient of the per-sample cross-entropy (kernels/nn/cross_entropy.wgsl)
// w.r.t. the logits, fused into one pass per row: the same online
// (max, sum of exp) fold and workgroup tree, then every thread writes its
// elements of
//   dlogits[n, c] = grad[n] * (softmax[n, c] - (1 - ls) * [c == t_n] - ls / C)
// (an all-zero row where t_n == ignore_index).
//
// A workgroup of 256 threads serves 256 / lanes rows with `lanes` threads
// per row. Logits, target and grad are strided views; the output is a
// contiguous [N, C].
// Bindings: 0 logits (read), 1 target (read, i32), 2 grad (read),
// 3 out (read_write), 4 divisor (read; only with HAS_DIVISOR), 5 fault.
// A target outside 0..C that is not ignore_index raises fault code 5 and
// is clamped.

//! include common/nan.wgsl
//! include common/fault.wgsl
//! include common/logits_max_sum.wgsl

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

@compute @workgroup_size(256)
fn cross_entropy_backward_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    let lanes = p.lanes;
    let per_group = WG / lanes;
    let t = lid % lanes;
    let r = lid / lanes;
    let row = group * per_group + r;
    let live = row < p.rows;
    let base = p.x_offset + row * p.x_row_stride;

    var m = bitcast<f32>(0xff800000u); // -inf
    var s = 0.0;
    // The target and the upstream gradient first: their loads are under
    // way while the row's are.
    var tgt = 0;
    var g = 0.0;
    if live {
        tgt = labels[p.t_offset + row * p.t_stride];
        g = grad[p.g_offset + row * p.g_stride];
        if HAS_DIVISOR == 1u {
            g = g / divisor[p.d_offset];
        }
        let ms = logits_max_sum(base, t, lanes);
        m = ms.x;
        s = ms.y;
    }

    let slot = r * lanes + t;
    smax[slot] = m;
    ssum[slot] = s;
    workgroupBarrier();
    for (var step = lanes / 2u; step > 0u; step /= 2u) {
        if t < step {
            let m_a = smax[slot];
            let m_b = smax[slot + step];
            let m_new = nan_max(m_a, m_b);
            ssum[slot] = ssum[slot] * rescale(m_a, m_new) + ssum[slot + step] * rescale(m_b, m_new);
            smax[slot] = m_new;
        }
        workgroupBarrier();
    }

    if live {
        let row_max = smax[r * lanes];
        let total = ssum[r * lanes];
        let smoothing = bitcast<f32>(p.smoothing);
        let uniform_part = smoothing / f32(max(p.n, 1u));
        let ignored = tgt == bitcast<i32>(p.ignore_index);
        var k = u32(0);
        if !ignored && (tgt < 0 || u32(tgt) >= p.n) {
            // Every thread of the row sees the same target; the stores agree.
            raise_fault(FAULT_CROSS_ENTROPY_TARGET, bitcast<u32>(tgt), p.n);
            k = u32(clamp(tgt, 0, i32(max(p.n, 1u)) - 1));
        } else if !ignored {
            k = u32(tgt);
        }
        let out_base = row * p.n;
        for (var e = t; e < p.n; e += lanes) {
            var d = 0.0;
            if !ignored {
                let x = logits[base + e * p.x_col_stride];
                var hit = 0.0;
                if e == k {
                    hit = 1.0 - smoothing;
                }
                d = g * (exp(x - row_max) / total - hit - uniform_part);
            }
            out[out_base + e] = d;
        }
    }
}
