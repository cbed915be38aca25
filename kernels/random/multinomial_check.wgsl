// Validates multinomial weights, one workgroup per row: a negative,
// infinite or NaN weight, an all-zero row, or (without replacement) fewer
// non-zero weights than samples raises fault 9 with index = the row and
// size = the reason (wgrad_core::checks::sort::BadWeights codes 1, 2, 3).
// The samplers clamp instead of failing, so the fault surfaces at the next
// readback, like CUDA's device assert.
// Bindings: 0 weights (read, f32, dense [rows, cats]), 1 fault.
// Immediates: MultinomialParams.

//! include common/multinomial_params.wgsl
//! include common/fault.wgsl

const FAULT_MULTINOMIAL: u32 = 9u;

@group(0) @binding(0) var<storage, read> weights: array<f32>;
@group(0) @binding(1) var<storage, read_write> fault: array<atomic<u32>, 4>;

var<workgroup> bad: array<u32, 256>;
var<workgroup> nonzero: array<u32, 256>;

@compute @workgroup_size(256)
fn multinomial_check(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if r >= p.rows {
        return;
    }
    var b = 0u;
    var count = 0u;
    for (var j = lid; j < p.cats; j += 256u) {
        let bits = bitcast<u32>(weights[p.offset + r * p.cats + j]);
        // Negative (sign set, not -0.0), infinite or NaN.
        if (bits > 0x80000000u) || (bits & 0x7fffffffu) >= 0x7f800000u {
            b = 1u;
        }
        if (bits & 0x7fffffffu) != 0u {
            count += 1u;
        }
    }
    bad[lid] = b;
    nonzero[lid] = count;
    workgroupBarrier();
    for (var d = 128u; d > 0u; d = d >> 1u) {
        if lid < d {
            bad[lid] = max(bad[lid], bad[lid + d]);
            nonzero[lid] += nonzero[lid + d];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        if bad[0] != 0u {
            raise_fault(FAULT_MULTINOMIAL, r, 1u);
        } else if nonzero[0] == 0u {
            raise_fault(FAULT_MULTINOMIAL, r, 2u);
        } else if p.replacement == 0u && nonzero[0] < p.num_samples {
            raise_fault(FAULT_MULTINOMIAL, r, 3u);
        }
    }
}
