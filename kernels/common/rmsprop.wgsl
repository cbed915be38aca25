// torch.optim.RMSprop's per-element arithmetic, shared by optim/rmsprop.wgsl
// (no extra state), rmsprop_aux.wgsl (grad_avg or momentum buffer) and
// rmsprop_full.wgsl (both). The arithmetic is CpuTensor::rmsprop_step's
// (crates/wgrad-cpu/src/optim_adaptive.rs), op for op:
//   g = maximize ? -grad : grad;  if WEIGHT_DECAY { g += weight_decay * param }
//   square_avg = square_avg * alpha + (1 - alpha) * g * g
//   CENTERED: grad_avg = lerp(grad_avg, g, 1 - alpha); avg = sqrt(square_avg - grad_avg^2) + eps
//   else:     avg = sqrt(square_avg) + eps
//   MOMENTUM: buf = buf * momentum + g / avg; param += neg_lr * buf
//   else:     param += neg_lr * g / avg

struct RmsPropParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    v_offset: u32,
    ga_offset: u32,
    buf_offset: u32,
    alpha: f32,
    one_minus_alpha: f32,
    eps: f32,
    weight_decay: f32,
    momentum: f32,
    neg_lr: f32,
}

var<immediate> p: RmsPropParams;

const RMSPROP_MAXIMIZE: u32 = 1u;
// Set only when weight_decay != 0 (torch skips the term entirely then).
const RMSPROP_WEIGHT_DECAY: u32 = 2u;
const RMSPROP_CENTERED: u32 = 4u;
const RMSPROP_MOMENTUM: u32 = 8u;

// The element index of a 1-D dispatch folded by dispatch_1d.
fn rmsprop_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
}

// The gradient the update uses (maximize, L2 weight decay).
fn rmsprop_grad(grad: f32, w: f32) -> f32 {
    var g = grad;
    if (p.flags & RMSPROP_MAXIMIZE) != 0u {
        g = -g;
    }
    if (p.flags & RMSPROP_WEIGHT_DECAY) != 0u {
        g += p.weight_decay * w;
    }
    return g;
}

// square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
fn rmsprop_square(v: f32, g: f32) -> f32 {
    return v * p.alpha + p.one_minus_alpha * g * g;
}

// grad_avg.lerp_(grad, 1 - alpha), torch.lerp's two formulas.
fn rmsprop_lerp(start: f32, end: f32) -> f32 {
    let weight = p.one_minus_alpha;
    if abs(weight) < 0.5 {
        return start + weight * (end - start);
    }
    return end - (end - start) * (1.0 - weight);
}
