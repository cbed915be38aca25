// Fused torch.optim.SGD update with momentum, in place, one thread per element:
//   d = maximize ? -grad : grad;  if WEIGHT_DECAY { d += weight_decay * param }
//   buf = FIRST ? d : momentum * buf + (1 - dampening) * d   (torch clones the first gradient)
//   d = NESTEROV ? d + momentum * buf : buf
//   param += neg_lr * d
// Bindings: 0 grad (read), 1 param (read_write), 2 momentum buffer (read_write).
// Immediates: SgdMomentumParams.
// The arithmetic is CpuTensor::sgd_step's (crates/wgrad-cpu/src/optim.rs), op for op;
// keep it in step with sgd.wgsl.

struct SgdMomentumParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    buf_offset: u32,
    neg_lr: f32,
    weight_decay: f32,
    momentum: f32,
    one_minus_dampening: f32,
}

var<immediate> p: SgdMomentumParams;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> buf: array<f32>;

const MAXIMIZE: u32 = 1u;
const WEIGHT_DECAY: u32 = 2u;
const NESTEROV: u32 = 4u;
// First step: the buffer is uninitialised and becomes the gradient.
const FIRST: u32 = 8u;

@compute @workgroup_size(256)
fn sgd_momentum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let bi = p.buf_offset + i;
    let w = param[pi];
    var d = grad[p.grad_offset + i];
    if (p.flags & MAXIMIZE) != 0u {
        d = -d;
    }
    if (p.flags & WEIGHT_DECAY) != 0u {
        d += p.weight_decay * w;
    }
    var b = d;
    if (p.flags & FIRST) == 0u {
        b = buf[bi] * p.momentum + p.one_minus_dampening * d;
    }
    buf[bi] = b;
    if (p.flags & NESTEROV) != 0u {
        d += p.momentum * b;
    } else {
        d = b;
    }
    param[pi] = w + p.neg_lr * d;
}
