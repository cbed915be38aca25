// Weight gradient of a 2-D convolution on 128 x 128 output tiles:
// conv/conv2d_weight_grad.wgsl (read it) with the GEMM core of
// common/gemm_128.wgsl (8 x 8 outputs per thread, K steps of 8). A
// thread gathers one pixel per K step (k = tid % 8) for its 4 rows (output
// channels tid/8 + 32*i) and 4 columns (taps tid/8 + 32*i). Same bindings
// and immediates; split K the same way (k_chunk a multiple of 16).
//
// Bindings: 0 input (read), 1 grad_out (read), 2 out (read_write).
// Immediates: ConvParams (m = cout_g, n = cin_g*kh*kw, k = pixels).

//! include common/gemm_128.wgsl
//! include common/conv_params.wgsl
//! include common/conv_tile.wgsl
//! include common/conv_weight_grad_store.wgsl
//! include common/conv_pixel_walk.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<private> k_stop: u32;
// This thread's rows: grad_out channel offsets (o_off) and existence.
var<private> o_off: vec4<u32>;
var<private> o_ok: vec4<bool>;
// Its columns (taps): input channel offset, i*dh, j*dw, existence.
var<private> q_off: vec4<u32>;
var<private> q_dh: vec4<u32>;
var<private> q_dw: vec4<u32>;
var<private> q_ok: vec4<bool>;
// Which of them is the ones column (ONES_COLUMN: the bias gradient's).
var<private> q_one: vec4<bool>;
// (img, y, x) of this thread's pixel k0 + tid % 8 of the next fetch
// (common/conv_pixel_walk.wgsl): the GEMM core fetches the K steps in
// order, from k_begin on.
var<private> pix: vec3<u32>;

fn a_slot(i: u32) -> vec2<u32> {
    return k_fast_slot(tid + i * THREADS);
}

fn b_slot(i: u32) -> vec2<u32> {
    return k_fast_slot(tid + i * THREADS);
}

fn input_at(ok: bool, base: u32, h: u32, ww: u32) -> f32 {
    if ok && h < p.in_h && ww < p.in_w {
        return x[base + h * p.x_strides[2] + ww * p.x_strides[3]];
    }
    return 0.0;
}

fn grad_at(ok: bool, at: u32) -> f32 {
    if ok {
        return dy[at];
    }
    return 0.0;
}

fn fetch(k0: u32) {
    let s = k0 + tid % 8u;
    let img = pix.x;
    let y = pix.y;
    let xx = pix.z;
    pix = pixel_advance(pix, TILE_K);
    if s >= k_stop {
        ra0 = 0.0;
        ra1 = 0.0;
        ra2 = 0.0;
        ra3 = 0.0;
        rb0 = 0.0;
        rb1 = 0.0;
        rb2 = 0.0;
        rb3 = 0.0;
        return;
    }
    let g = p.dy_offset + img * p.dy_strides[0] + y * p.dy_strides[2] + xx * p.dy_strides[3];
    ra0 = grad_at(o_ok.x, g + o_off.x);
    ra1 = grad_at(o_ok.y, g + o_off.y);
    ra2 = grad_at(o_ok.z, g + o_off.z);
    ra3 = grad_at(o_ok.w, g + o_off.w);
    let iy = y * p.stride_h - p.pad_top;
    let ix = xx * p.stride_w - p.pad_left;
    let b = p.x_offset + img * p.x_strides[0];
    rb0 = select(input_at(q_ok.x, b + q_off.x, iy + q_dh.x, ix + q_dw.x), 1.0, q_one.x);
    rb1 = select(input_at(q_ok.y, b + q_off.y, iy + q_dh.y, ix + q_dw.y), 1.0, q_one.y);
    rb2 = select(input_at(q_ok.z, b + q_off.z, iy + q_dh.z, ix + q_dw.z), 1.0, q_one.z);
    rb3 = select(input_at(q_ok.w, b + q_off.w, iy + q_dh.w, ix + q_dw.w), 1.0, q_one.w);
}

@compute @workgroup_size(256)
fn conv2d_weight_grad_128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    tid = lid;
    let t = conv_tile(g);
    let split = t.mat / p.conv_groups;

    let lanes = vec4<u32>(0u, 32u, 64u, 96u) + tid / 8u;
    let o = t.row0 + lanes;
    o_ok = o < vec4<u32>(p.cout_g);
    o_off = (t.group * p.cout_g + o) * p.dy_strides[1];
    let q = t.col0 + lanes;
    let taps = p.n - ONES_COLUMN;
    q_ok = q < vec4<u32>(taps);
    q_one = (q == vec4<u32>(taps)) & vec4<bool>(ONES_COLUMN == 1u);
    let r = q % p.khkw;
    q_off = (t.group * p.cin_g + q / p.khkw) * p.x_strides[1];
    q_dh = (r / p.kw) * p.dil_h;
    q_dw = (r % p.kw) * p.dil_w;

    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;
    pix = pixel_decode(k_begin + tid % 8u);
    gemm_k_loop(k_begin, k_end);

    set_out_matrix(t.mat);
    gemm_store(t.row0, t.col0);
}
