// Fused torch.optim.Adam / AdamW update with amsgrad, in place, one thread per element:
// as adam.wgsl, plus vmax = maximum(vmax, v) (NaN-propagating like torch.maximum),
// and the denominator uses vmax instead of v.
// Bindings: 0 grad (read), 1 param, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (read_write).
// Immediates: AdamAmsgradParams.
// The arithmetic is CpuTensor::adam_step's (crates/wgrad-cpu/src/optim.rs), op for op;
// keep it in step with common/adam_math.wgsl.

//! include common/nan.wgsl

struct AdamAmsgradParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    m_offset: u32,
    v_offset: u32,
    vmax_offset: u32,
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
    eps: f32,
    weight_decay: f32,
    decay: f32,
    neg_step_size: f32,
    bias_correction2_sqrt: f32,
}

var<immediate> p: AdamAmsgradParams;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> exp_avg: array<f32>;
@group(0) @binding(3) var<storage, read_write> exp_avg_sq: array<f32>;
@group(0) @binding(4) var<storage, read_write> max_exp_avg_sq: array<f32>;

const MAXIMIZE: u32 = 1u;
const WEIGHT_DECAY: u32 = 2u;
const DECOUPLED: u32 = 4u;

fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if abs(weight) < 0.5 {
        return start + weight * (end - start);
    }
    return end - (end - start) * (1.0 - weight);
}

@compute @workgroup_size(256)
fn adam_amsgrad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let mi = p.m_offset + i;
    let vi = p.v_offset + i;
    let xi = p.vmax_offset + i;
    var w = param[pi];
    var g = grad[p.grad_offset + i];
    if (p.flags & MAXIMIZE) != 0u {
        g = -g;
    }
    if (p.flags & WEIGHT_DECAY) != 0u {
        if (p.flags & DECOUPLED) != 0u {
            w *= p.decay;
        } else {
            g += p.weight_decay * w;
        }
    }
    let m = lerp(exp_avg[mi], g, p.one_minus_beta1);
    let v = exp_avg_sq[vi] * p.beta2 + p.one_minus_beta2 * g * g;
    let old_max = max_exp_avg_sq[xi];
    var vmax = max(old_max, v);
    if is_nan(old_max) || is_nan(v) {
        vmax = bitcast<f32>(NAN_BITS);
    }
    exp_avg[mi] = m;
    exp_avg_sq[vi] = v;
    max_exp_avg_sq[xi] = vmax;
    let denom = sqrt(vmax) / p.bias_correction2_sqrt + p.eps;
    param[pi] = w + p.neg_step_size * m / denom;
}
