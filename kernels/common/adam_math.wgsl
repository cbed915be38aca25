// One element of torch.optim.Adam / AdamW (amsgrad off), shared by
// optim/adam.wgsl (one parameter per dispatch) and optim/adam_foreach.wgsl
// (several per dispatch):
//   g = maximize ? -grad : grad
//   WEIGHT_DECAY: DECOUPLED ? param *= decay (= 1 - lr * wd) : g += weight_decay * param
//   m = lerp(m, g, 1 - beta1);  v = v * beta2 + (1 - beta2) * g * g
//   param += neg_step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)
// with neg_step_size = -lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t)
// computed on the host in f64 (as torch does in Python).
// The arithmetic is CpuTensor::adam_step's (crates/wgrad-cpu/src/optim.rs), op for op;
// optim/adam_amsgrad.wgsl repeats it with the running max: keep them in step.

const ADAM_MAXIMIZE: u32 = 1u;
// Set only when weight_decay != 0 (torch skips the term entirely then).
const ADAM_WEIGHT_DECAY: u32 = 2u;
const ADAM_DECOUPLED: u32 = 4u;

// The per-step coefficients, as the kernels' immediates carry them.
struct AdamCoefficients {
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

// The updated parameter and moments of one element.
struct AdamElement {
    param: f32,
    exp_avg: f32,
    exp_avg_sq: f32,
}

// torch.lerp: the formula switches at weight 0.5 so that both ends are exact.
fn adam_lerp(start: f32, end: f32, weight: f32) -> f32 {
    if abs(weight) < 0.5 {
        return start + weight * (end - start);
    }
    return end - (end - start) * (1.0 - weight);
}

fn adam_update(k: AdamCoefficients, param: f32, grad: f32, exp_avg: f32, exp_avg_sq: f32) -> AdamElement {
    var w = param;
    var g = grad;
    if (k.flags & ADAM_MAXIMIZE) != 0u {
        g = -g;
    }
    if (k.flags & ADAM_WEIGHT_DECAY) != 0u {
        if (k.flags & ADAM_DECOUPLED) != 0u {
            w *= k.decay;
        } else {
            g += k.weight_decay * w;
        }
    }
    let m = adam_lerp(exp_avg, g, k.one_minus_beta1);
    let v = exp_avg_sq * k.beta2 + k.one_minus_beta2 * g * g;
    let denom = sqrt(v) / k.bias_correction2_sqrt + k.eps;
    return AdamElement(w + k.neg_step_size * m / denom, m, v);
}
