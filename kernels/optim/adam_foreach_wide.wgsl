// adam_foreach.wgsl over up to 8 parameters in one dispatch, for devices
// that allow 32 storage buffers per stage, with each parameter and its
// state starting at element 0 of their buffers (the usual parameters and
// the optimizer's own state; gradients may lie anywhere, e.g. a bias
// gradient after its weight gradient): only the gradients' offsets, so
// the immediates stay within 128 bytes. A small network's whole Adam step
// is then one dispatch.
// Bindings, per slot s (4 s + 0..3): grad (read), param, exp_avg,
// exp_avg_sq (read_write).
//! include common/adam_math.wgsl

struct AdamForeachWideParams {
    ends: array<u32, 8>,
    grad_offsets: array<u32, 8>,
    flags: u32,
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
    eps: f32,
    weight_decay: f32,
    decay: f32,
    neg_step_size: f32,
    bias_correction2_sqrt: f32,
}

var<immediate> p: AdamForeachWideParams;

@group(0) @binding(0) var<storage, read> grad0: array<f32>;
@group(0) @binding(1) var<storage, read_write> param0: array<f32>;
@group(0) @binding(2) var<storage, read_write> exp_avg0: array<f32>;
@group(0) @binding(3) var<storage, read_write> exp_avg_sq0: array<f32>;
@group(0) @binding(4) var<storage, read> grad1: array<f32>;
@group(0) @binding(5) var<storage, read_write> param1: array<f32>;
@group(0) @binding(6) var<storage, read_write> exp_avg1: array<f32>;
@group(0) @binding(7) var<storage, read_write> exp_avg_sq1: array<f32>;
@group(0) @binding(8) var<storage, read> grad2: array<f32>;
@group(0) @binding(9) var<storage, read_write> param2: array<f32>;
@group(0) @binding(10) var<storage, read_write> exp_avg2: array<f32>;
@group(0) @binding(11) var<storage, read_write> exp_avg_sq2: array<f32>;
@group(0) @binding(12) var<storage, read> grad3: array<f32>;
@group(0) @binding(13) var<storage, read_write> param3: array<f32>;
@group(0) @binding(14) var<storage, read_write> exp_avg3: array<f32>;
@group(0) @binding(15) var<storage, read_write> exp_avg_sq3: array<f32>;
@group(0) @binding(16) var<storage, read> grad4: array<f32>;
@group(0) @binding(17) var<storage, read_write> param4: array<f32>;
@group(0) @binding(18) var<storage, read_write> exp_avg4: array<f32>;
@group(0) @binding(19) var<storage, read_write> exp_avg_sq4: array<f32>;
@group(0) @binding(20) var<storage, read> grad5: array<f32>;
@group(0) @binding(21) var<storage, read_write> param5: array<f32>;
@group(0) @binding(22) var<storage, read_write> exp_avg5: array<f32>;
@group(0) @binding(23) var<storage, read_write> exp_avg_sq5: array<f32>;
@group(0) @binding(24) var<storage, read> grad6: array<f32>;
@group(0) @binding(25) var<storage, read_write> param6: array<f32>;
@group(0) @binding(26) var<storage, read_write> exp_avg6: array<f32>;
@group(0) @binding(27) var<storage, read_write> exp_avg_sq6: array<f32>;
@group(0) @binding(28) var<storage, read> grad7: array<f32>;
@group(0) @binding(29) var<storage, read_write> param7: array<f32>;
@group(0) @binding(30) var<storage, read_write> exp_avg7: array<f32>;
@group(0) @binding(31) var<storage, read_write> exp_avg_sq7: array<f32>;

@compute @workgroup_size(256)
fn adam_foreach_wide(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.ends[7] {
        return;
    }
    let k = AdamCoefficients(p.flags, p.one_minus_beta1, p.beta2, p.one_minus_beta2, p.eps,
        p.weight_decay, p.decay, p.neg_step_size, p.bias_correction2_sqrt);
    // WGSL cannot index bindings, so each slot is its own branch.
    if i < p.ends[0] {
        let j = i;
        let r = adam_update(k, param0[j], grad0[p.grad_offsets[0] + j], exp_avg0[j], exp_avg_sq0[j]);
        param0[j] = r.param;
        exp_avg0[j] = r.exp_avg;
        exp_avg_sq0[j] = r.exp_avg_sq;
    } else if i < p.ends[1] {
        let j = i - p.ends[0];
        let r = adam_update(k, param1[j], grad1[p.grad_offsets[1] + j], exp_avg1[j], exp_avg_sq1[j]);
        param1[j] = r.param;
        exp_avg1[j] = r.exp_avg;
        exp_avg_sq1[j] = r.exp_avg_sq;
    } else if i < p.ends[2] {
        let j = i - p.ends[1];
        let r = adam_update(k, param2[j], grad2[p.grad_offsets[2] + j], exp_avg2[j], exp_avg_sq2[j]);
        param2[j] = r.param;
        exp_avg2[j] = r.exp_avg;
        exp_avg_sq2[j] = r.exp_avg_sq;
    } else if i < p.ends[3] {
        let j = i - p.ends[2];
        let r = adam_update(k, param3[j], grad3[p.grad_offsets[3] + j], exp_avg3[j], exp_avg_sq3[j]);
        param3[j] = r.param;
        exp_avg3[j] = r.exp_avg;
        exp_avg_sq3[j] = r.exp_avg_sq;
    } else if i < p.ends[4] {
        let j = i - p.ends[3];
        let r = adam_update(k, param4[j], grad4[p.grad_offsets[4] + j], exp_avg4[j], exp_avg_sq4[j]);
        param4[j] = r.param;
        exp_avg4[j] = r.exp_avg;
        exp_avg_sq4[j] = r.exp_avg_sq;
    } else if i < p.ends[5] {
        let j = i - p.ends[4];
        let r = adam_update(k, param5[j], grad5[p.grad_offsets[5] + j], exp_avg5[j], exp_avg_sq5[j]);
        param5[j] = r.param;
        exp_avg5[j] = r.exp_avg;
        exp_avg_sq5[j] = r.exp_avg_sq;
    } else if i < p.ends[6] {
        let j = i - p.ends[5];
        let r = adam_update(k, param6[j], grad6[p.grad_offsets[6] + j], exp_avg6[j], exp_avg_sq6[j]);
        param6[j] = r.param;
        exp_avg6[j] = r.exp_avg;
        exp_avg_sq6[j] = r.exp_avg_sq;
    } else {
        let j = i - p.ends[6];
        let r = adam_update(k, param7[j], grad7[p.grad_offsets[7] + j], exp_avg7[j], exp_avg_sq7[j]);
        param7[j] = r.param;
        exp_avg7[j] = r.exp_avg;
        exp_avg_sq7[j] = r.exp_avg_sq;
    }
}
