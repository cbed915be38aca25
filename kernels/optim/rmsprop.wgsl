// Fused torch.optim.RMSprop update without extra state (not centered, no
// momentum), in place, one thread per element; the arithmetic is in
// common/rmsprop.wgsl. Bindings: 0 grad (read), 1 param, 2 square_avg
// (read_write). Immediates: RmsPropParams.

//! include common/rmsprop.wgsl

@group(0) @binding(0) var<storage, read> grad: array<f32>;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read_write> square_avg: array<f32>;

@compute @workgroup_size(256)
fn rmsprop(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = rmsprop_index(wid, nwg, lid);
    if i >= p.numel {
        return;
    }
    let pi = p.param_offset + i;
    let vi = p.v_offset + i;
    let w = param[pi];
    let g = rmsprop_grad(grad[p.grad_offset + i], w);
    let v = rmsprop_square(square_avg[vi], g);
    square_avg[vi] = v;
    let avg = sqrt(v) + p.eps;
    param[pi] = w + p.neg_lr * g / avg;
}
