// Fused torch.optim.Adam / AdamW update (amsgrad off), in place, one thread per element:
//   g = maximize ? -grad : grad
//   WEIGHT_DECAY: DECOUPLED ? param *= decay (= 1 - lr * wd) : g += weight_decay * param
//   m = lerp(m, g, 1 - beta1);  v = v * beta2 + (1 - beta2) * g * g
//   param += neg_step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)
// with neg_step_size = -lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t)
// computed on the host in f64 (as torch does in Python).
// Bindings: 0 grad (read), 1 param, 2 exp_avg, 3 exp_avg_sq (read_write). Immediates: AdamParams.
// The arithmetic is CpuTensor::adam_step's (crates/wgrad-cpu/src/optim.rs), op for op;
// adam_amsgrad.wgsl repeats it with the running max (WGSL has no includes): keep them in step.

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

const MAXIMIZE: u32 = 1u;
// Set only when weight_decay != 0 (torch skips the term entirely then).
const WEIGHT_DECAY: u32 = 2u;
const DECOUPLED: u32 = 4u;

// torch.lerp: the formula switches at weight 0.5 so that both ends are exact.
fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if abs(weight) < 0.5 {
        return start + weight * (end - start);
    }
    return end - (end - start) * (1.0 - weight);
}

@compute @workgroup_size(256)
fn adam(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let mi = p.m_offset + i;
    let vi = p.v_offset + i;
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
    exp_avg[mi] = m;
    exp_avg_sq[vi] = v;
    let denom = sqrt(v) / p.bias_correction2_sqrt + p.eps;
    param[pi] = w + p.neg_step_size * m / denom;
}
