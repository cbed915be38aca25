// Fused torch.optim.SGD update without momentum, in place, one thread per element:
//   d = maximize ? -grad : grad;  if WEIGHT_DECAY { d += weight_decay * param }
//   param += neg_lr * d
// Bindings: 0 grad (read), 1 param (read_write). Immediates: SgdParams.
// The arithmetic is CpuTensor::sgd_step's (crates/wgrad-cpu/src/optim.rs), op for op;
// sgd_momentum.wgsl repeats it with a momentum buffer (WGSL has no includes): keep them in step.

struct SgdParams {
    numel: u32,
    flags: u32,
    grad_offset: u32,
    param_offset: u32,
    neg_lr: f32,
    weight_decay: f32,
}

var<immediate> p: SgdParams;

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;

const MAXIMIZE: u32 = 1u;
// Set only when weight_decay != 0, so that 0 * inf never turns a parameter into NaN.
const WEIGHT_DECAY: u32 = 2u;

@compute @workgroup_size(256)
fn sgd(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let w = param[pi];
    var d = grad[p.grad_offset + i];
    if (p.flags & MAXIMIZE) != 0u {
        d = -d;
    }
    if (p.flags & WEIGHT_DECAY) != 0u {
        d += p.weight_decay * w;
    }
    param[pi] = w + p.neg_lr * d;
}
