// Depthwise conv2d forward (see common/depthwise_params.wgsl): one thread
// per output element sums its window's taps in row-major order, then adds
// bias[o] (HAS_BIAS) and applies ReLU (ACT_RELU), as the implicit-GEMM
// forward's store does. A GEMM tile would leave all but one of its rows
// idle here (one input channel per group).
// Bindings: 0 input (read, strided), 1 weight (read, contiguous), 2 out
// (read_write, contiguous NCHW), 3 bias (read; read only with HAS_BIAS).

//! include common/depthwise_params.wgsl
//! include common/relu4.wgsl

override HAS_BIAS: u32 = 0u;
override ACT_RELU: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;

@compute @workgroup_size(256)
fn depthwise_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = depthwise_index(wid, nwg, lid);
    if i >= p.total {
        return;
    }
    let ox = i % p.out_w;
    let oy = (i / p.out_w) % p.out_h;
    let o = (i / (p.out_w * p.out_h)) % (p.channels * p.mult);
    let n = i / (p.out_w * p.out_h * p.channels * p.mult);
    let base = p.x_offset + n * p.x_strides[0] + (o / p.mult) * p.x_strides[1];
    let y0 = i32(oy * SH) - i32(p.pad_top);
    let x0 = i32(ox * SW) - i32(p.pad_left);
    let w0 = o * KH * KW;
    var acc = 0.0;
    for (var a = 0u; a < KH; a++) {
        let y = y0 + i32(a * DH);
        if y < 0 || y >= i32(p.in_h) {
            continue;
        }
        let row = base + u32(y) * p.x_strides[2];
        for (var b = 0u; b < KW; b++) {
            let xx = x0 + i32(b * DW);
            if xx >= 0 && xx < i32(p.in_w) {
                acc += x[row + u32(xx) * p.x_strides[3]] * w[w0 + a * KW + b];
            }
        }
    }
    if HAS_BIAS == 1u {
        acc += bias[o];
    }
    if ACT_RELU == 1u {
        acc = relu4(vec4<f32>(acc)).x;
    }
    out[i] = acc;
}
