// Depthwise conv2d forward (see common/depthwise_params.wgsl): a workgroup
// per 4 * OUT_PER output rows of one (n, o) plane, each thread summing its
// outputs' windows in row-major tap order, then adding bias[o] (HAS_BIAS)
// and applying ReLU (ACT_RELU), as the implicit-GEMM forward's store does.
// A GEMM tile would leave all but one of its rows idle here (one input
// channel per group). Workgroups: N * C_out * ceil(out_h / (4 * OUT_PER)).
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

// The forward's workgroup: F_ROWS output rows of F_COLS threads, each
// thread OUT_PER (1, 2 or 4) neighbouring outputs of its row (their windows
// overlap, so the compiler can share the loads), every 64th group.
override OUT_PER: u32 = 4u;
const GROUP_COLS: u32 = 64u;

@compute @workgroup_size(256)
fn depthwise_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = depthwise_group(wid, nwg);
    if g >= p.total {
        return;
    }
    let f_cols = GROUP_COLS / OUT_PER;
    let f_rows = 256u / f_cols;
    let blocks = (p.out_h + f_rows - 1u) / f_rows;
    let plane = g / blocks;
    let oy = (g % blocks) * f_rows + lid / f_cols;
    if oy >= p.out_h {
        return;
    }
    let channels_out = p.channels * p.mult;
    let o = plane % channels_out;
    let n = plane / channels_out;
    let base = p.x_offset + n * p.x_strides[0] + (o / p.mult) * p.x_strides[1];
    let y0 = i32(oy * SH) - i32(p.pad_top);
    let w0 = o * KH * KW;
    var b_o = 0.0;
    if HAS_BIAS == 1u {
        b_o = bias[o];
    }
    let out_row = (plane * p.out_h + oy) * p.out_w;
    for (var ox0 = (lid % f_cols) * OUT_PER; ox0 < p.out_w; ox0 += GROUP_COLS) {
        let x0 = i32(ox0 * SW) - i32(p.pad_left);
        var acc = vec4<f32>(0.0);
        for (var a = 0u; a < KH; a++) {
            let y = y0 + i32(a * DH);
            if y < 0 || y >= i32(p.in_h) {
                continue;
            }
            let row = base + u32(y) * p.x_strides[2];
            for (var b = 0u; b < KW; b++) {
                let wv = w[w0 + a * KW + b];
                for (var j = 0u; j < OUT_PER; j++) {
                    let xx = x0 + i32(j * SW + b * DW);
                    if xx >= 0 && xx < i32(p.in_w) {
                        acc[j] += x[row + u32(xx) * p.x_strides[3]] * wv;
                    }
                }
            }
        }
        if HAS_BIAS == 1u {
            acc += vec4<f32>(b_o);
        }
        if ACT_RELU == 1u {
            acc = relu4(acc);
        }
        for (var j = 0u; j < OUT_PER; j++) {
            if ox0 + j < p.out_w {
                out[out_row + ox0 + j] = acc[j];
            }
        }
    }
}
