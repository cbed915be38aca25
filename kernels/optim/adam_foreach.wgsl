// torch.optim.Adam / AdamW (amsgrad off) over up to 4 parameters in one
// dispatch (torch's foreach path): the parameters' elements are numbered
// one after another, ends[s] is the running total through slot s (an
// unused slot repeats the previous end), and each thread updates one
// element of the slot its number falls in, with common/adam_math.wgsl's
// arithmetic. A step is then a quarter of the dispatches; on a GPU where
// each dispatch costs microseconds of launch and barrier, that is most of
// the optimizer's time for small parameters.
// Bindings, per slot s (4 s + 0..3): grad (read), param, exp_avg,
// exp_avg_sq (read_write); offsets per slot in the immediates.
//! include common/adam_math.wgsl

struct AdamForeachParams {
    ends: array<u32, 4>,
    grad_offsets: array<u32, 4>,
    param_offsets: array<u32, 4>,
    m_offsets: array<u32, 4>,
    v_offsets: array<u32, 4>,
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

var<immediate> p: AdamForeachParams;

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

@compute @workgroup_size(256)
fn adam_foreach(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.ends[3] {
        return;
    }
    let k = AdamCoefficients(p.flags, p.one_minus_beta1, p.beta2, p.one_minus_beta2, p.eps,
        p.weight_decay, p.decay, p.neg_step_size, p.bias_correction2_sqrt);
    // WGSL cannot index bindings, so each slot is its own branch; the
    // branches differ only in the buffers they name.
    if i < p.ends[0] {
        let pi = p.param_offsets[0] + i;
        let mi = p.m_offsets[0] + i;
        let vi = p.v_offsets[0] + i;
        let r = adam_update(k, param0[pi], grad0[p.grad_offsets[0] + i], exp_avg0[mi], exp_avg_sq0[vi]);
        param0[pi] = r.param;
        exp_avg0[mi] = r.exp_avg;
        exp_avg_sq0[vi] = r.exp_avg_sq;
    } else if i < p.ends[1] {
        let j = i - p.ends[0];
        let pi = p.param_offsets[1] + j;
        let mi = p.m_offsets[1] + j;
        let vi = p.v_offsets[1] + j;
        let r = adam_update(k, param1[pi], grad1[p.grad_offsets[1] + j], exp_avg1[mi], exp_avg_sq1[vi]);
        param1[pi] = r.param;
        exp_avg1[mi] = r.exp_avg;
        exp_avg_sq1[vi] = r.exp_avg_sq;
    } else if i < p.ends[2] {
        let j = i - p.ends[1];
        let pi = p.param_offsets[2] + j;
        let mi = p.m_offsets[2] + j;
        let vi = p.v_offsets[2] + j;
        let r = adam_update(k, param2[pi], grad2[p.grad_offsets[2] + j], exp_avg2[mi], exp_avg_sq2[vi]);
        param2[pi] = r.param;
        exp_avg2[mi] = r.exp_avg;
        exp_avg_sq2[vi] = r.exp_avg_sq;
    } else {
        let j = i - p.ends[2];
        let pi = p.param_offsets[3] + j;
        let mi = p.m_offsets[3] + j;
        let vi = p.v_offsets[3] + j;
        let r = adam_update(k, param3[pi], grad3[p.grad_offsets[3] + j], exp_avg3[mi], exp_avg_sq3[vi]);
        param3[pi] = r.param;
        exp_avg3[mi] = r.exp_avg;
        exp_avg_sq3[vi] = r.exp_avg_sq;
    }
}
