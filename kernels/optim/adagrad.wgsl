// Fused torch.optim.Adagrad update, in place, one thread per element:
//   g = maximize ? -grad : grad;  if WEIGHT_DECAY { g += weight_decay * param }
//   sum += g * g
//   param += neg_clr * g / (sqrt(sum) + eps)
// with neg_clr = -lr / (1 + (t - 1) * lr_decay) computed on the host in f64.
// Bindings: 0 grad (read), 1 param, 2 sum (read_write). Immediates: AdagradParams.
// The arithmetic is CpuTensor::adagrad_step's (crates/wgrad-cpu/src/optim_adaptive.rs), op for op.

struct AdagradParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    sum_offset: u32,
    eps: f32,
    weight_decay: f32,
    neg_clr: f32,
}

var<immediate> p: AdagradParams;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> sum: array<f32>;

const MAXIMIZE: u32 = 1u;
// Set only when weight_decay != 0 (torch skips the term entirely then).
const WEIGHT_DECAY: u32 = 2u;

@compute @workgroup_size(256)
fn adagrad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let si = p.sum_offset + i;
    let w = param[pi];
    var g = grad[p.grad_offset + i];
    if (p.flags & MAXIMIZE) != 0u {
        g = -g;
    }
    if (p.flags & WEIGHT_DECAY) != 0u {
        g += p.weight_decay * w;
    }
    let s = sum[si] + g * g;
    sum[si] = s;
    param[pi] = w + p.neg_clr * g / (sqrt(s) + p.eps);
}
