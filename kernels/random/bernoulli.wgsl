// bernoulli: element i is 1.0 when the uniform draw of counter i (the one
// rand draws) is below the probability, else 0.0. A probability outside
// [0, 1] or NaN raises fault 8 (index = the element) and is clamped
// (below 0 never, above 1 always, NaN never).
// Bindings: 0 probs (read, f32), 1 out (read_write, f32), 2 fault.
// Immediates: BernoulliParams.

//! include common/counter_rng.wgsl
//! include common/nan.wgsl
//! include common/fault.wgsl

const FAULT_BERNOULLI: u32 = 8u;

struct BernoulliParams {
    numel: u32,
    key0: u32,
    key1: u32,
    // Element offset of the (dense) probabilities.
    offset: u32,
}

var<immediate> p: BernoulliParams;

@group(0) @binding(0) var<storage, read> probs: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> fault: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn bernoulli(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let prob = probs[p.offset + i];
    if is_nan(prob) || prob < 0.0 || prob > 1.0 {
        raise_fault(FAULT_BERNOULLI, i, 0u);
    }
    let u = bits_to_unit(counter_bits(p.key0, p.key1, 0u, i));
    out[i] = select(0.0, 1.0, u < prob && !is_nan(prob));
}
