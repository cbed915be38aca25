// Fused torch.optim.Adam / AdamW update (amsgrad off) of one parameter, in
// place, one thread per element; the arithmetic is common/adam_math.wgsl's.
// Bindings: 0 grad (read), 1 param, 2 exp_avg, 3 exp_avg_sq (read_write). Immediates: AdamParams.
//! include common/adam_math.wgsl

struct AdamParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    m_offset: u32,
    v_offset: u32,
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
    eps: f32,
    weight_decay: f32,
    decay: f32,
    neg_step_size: f32,
    bias_correction2_sqrt: f32,
}

var<immediate> p: AdamParams;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> exp_avg: array<f32>;
@group(0) @binding(3) var<storage, read_write> exp_avg_sq: array<f32>;

@compute @workgroup_size(256)
fn adam(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let k = AdamCoefficients(p.flags, p.one_minus_beta1, p.beta2, p.one_minus_beta2, p.eps,
        p.weight_decay, p.decay, p.neg_step_size, p.bias_correction2_sqrt);
    let pi = p.param_offset + i;
    let mi = p.m_offset + i;
    let vi = p.v_offset + i;
    let r = adam_update(k, param[pi], grad[p.grad_offset + i], exp_avg[mi], exp_avg_sq[vi]);
    param[pi] = r.param;
    exp_avg[mi] = r.exp_avg;
    exp_avg_sq[vi] = r.exp_avg_sq;
}
