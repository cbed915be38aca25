// Fused torch.optim.RMSprop update, centered with momentum, in place, one
// thread per element; the arithmetic is in common/rmsprop.wgsl.
// Bindings: 0 grad (read), 1 param, 2 square_avg, 3 grad_avg, 4 momentum
// buffer (read_write). Immediates: RmsPropParams.

//! include common/rmsprop.wgsl

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> square_avg: array<f32>;
@group(0) @binding(3) var<storage, read_write> grad_avg: array<f32>;
@group(0) @binding(4) var<storage, read_write> buf: array<f32>;

@compute @workgroup_size(256)
fn rmsprop_full(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = rmsprop_index(wid, nwg, lid);
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let vi = p.v_offset + i;
    let ai = p.ga_offset + i;
    let bi = p.buf_offset + i;
    let w = param[pi];
    let g = rmsprop_grad(grad[p.grad_offset + i], w);
    let v = rmsprop_square(square_avg[vi], g);
    square_avg[vi] = v;
    let ga = rmsprop_lerp(grad_avg[ai], g);
    grad_avg[ai] = ga;
    let avg = sqrt(v - ga * ga) + p.eps;
    let b = buf[bi] * p.momentum + g / avg;
    buf[bi] = b;
    param[pi] = w + p.neg_lr * b;
}
