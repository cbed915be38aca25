// The 'mean' reduction of the per-sample cross-entropy
// (kernels/nn/cross_entropy.wgsl's output): the sum of the losses of the
// samples whose target is not ignore_index, divided by their count, as
// torch.nn.functional.cross_entropy(..., reduction='mean') (0 / 0 = NaN when
// every sample is ignored). One workgroup does it all in one dispatch: the
// composite (compare, cast, two sums, divide) took five, and a loss has few
// enough samples (one per row of the logits) for one workgroup to read them.
// Each thread sums its samples with Kahan compensation, so the result
// stays accurate for long batches; the counts are exact integers.
// Bindings: 0 losses (read, contiguous from l_offset), 1 target (read,
// i32, strided), 2 out (read_write): out[0] the mean, out[1] the count.

struct LossMeanParams {
    rows: u32,
    l_offset: u32,
    t_offset: u32,
    t_stride: u32,
    ignore_index: u32,   // i32 bits
}

const WG: u32 = 256u;

var<immediate> p: LossMeanParams;

@group(0) @binding(0) var<storage, read> losses: array<f32>;
@group(0) @binding(1) var<storage, read> labels: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<f32, 256>;
var<workgroup> counts: array<u32, 256>;

@compute @workgroup_size(256)
fn cross_entropy_mean(@builtin(local_invocation_index) lid: u32) {
    let ignore = bitcast<i32>(p.ignore_index);
    var sum = 0.0;
    var compensation = 0.0;
    var count = 0u;
    for (var i = lid; i < p.rows; i += WG) {
        if labels[p.t_offset + i * p.t_stride] != ignore {
            let y = losses[p.l_offset + i] - compensation;
            let t = sum + y;
            compensation = (t - sum) - y;
            sum = t;
            count += 1u;
        }
    }
    sums[lid] = sum;
    counts[lid] = count;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
        if lid < half {
            sums[lid] += sums[lid + half];
            counts[lid] += counts[lid + half];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let n = f32(counts[0]);
        out[0] = sums[0] / n;
        out[1] = n;
    }
}
