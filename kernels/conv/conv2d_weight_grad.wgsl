// Weight gradient of a 2-D convolution as an implicit GEMM, per channel
// group g:
//   dw[g*cout_g + o, q] = sum_s DY[o, s] * X[s, q]
// M = cout_g output channels (rows), N = cin_g * kh * kw taps q = c*kh*kw +
// i*kw + j (columns, the weight's own order), K = batch * out_h * out_w
// output pixels s = (n, y, x). Gathered while the tiles load:
// DY[o, s] = grad_out[n, g*cout_g + o, y, x] and X[s, q] =
// input[n, g*cin_g + c, y*sh - pt + i*dh, x*sw - pl + j*dw] (zero outside),
// both through their strides. K is long, so it is split: workgroups of
// split s sum the pixels [s * k_chunk, (s + 1) * k_chunk) into
// out[s, C_out, cin_g*kh*kw]; matmul/sum_splits.wgsl adds the splits
// (unsplit: k_chunk >= K, out is dw itself). Tiling: common/gemm_64.wgsl.
//
// With ONES_COLUMN (common/conv_weight_grad_store.wgsl) one more column of
// ones gives the bias gradient alongside.
//
// Bindings: 0 input (read), 1 grad_out (read), 2 out (read_write).
// Immediates: ConvParams (m = cout_g, n = cin_g*kh*kw, k = pixels).

//! include common/gemm_64.wgsl
//! include common/conv_params.wgsl
//! include common/conv_tile.wgsl
//! include common/conv_weight_grad_store.wgsl
//! include common/conv_pixel_walk.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<private> k_stop: u32;
// This thread's two rows (output channels tid/8 and tid/8 + 32 of the
// tile): grad_out channel offsets, and whether they exist.
var<private> o_off0: u32;
var<private> o_off1: u32;
var<private> o_ok0: bool;
var<private> o_ok1: bool;
// Its two columns (taps): input channel offset, i*dh, j*dw, existence.
var<private> q_off0: u32;
var<private> q_off1: u32;
var<private> q_dh0: u32;
var<private> q_dh1: u32;
var<private> q_dw0: u32;
var<private> q_dw1: u32;
var<private> q_ok0: bool;
var<private> q_ok1: bool;
// Its columns are the ones column (ONES_COLUMN: the bias gradient's).
var<private> q_one0: bool;
var<private> q_one1: bool;
// Its two pixels of the next fetch, (img, y, x) of k0 + tid % 8 and of
// 8 more (common/conv_pixel_walk.wgsl): the GEMM core fetches the K steps
// in order, from k_begin on.
var<private> pix0: vec3<u32>;
var<private> pix1: vec3<u32>;

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

// Loads the four values (rows 0/1 x columns 0/1) of pixel s = (img, y,
// xx) = pix; `first` picks ra0, ra1, rb0, rb1 (else ra2, ra3, rb2, rb3).
fn fetch_pixel(s: u32, pix: vec3<u32>, first: bool) {
    var a0 = 0.0;
    var a1 = 0.0;
    var b0 = 0.0;
    var b1 = 0.0;
    if s < k_stop {
        let img = pix.x;
        let y = pix.y;
        let xx = pix.z;
        let dy_base = p.dy_offset + img * p.dy_strides[0] + y * p.dy_strides[2] + xx * p.dy_strides[3];
        if o_ok0 { a0 = dy[dy_base + o_off0]; }
        if o_ok1 { a1 = dy[dy_base + o_off1]; }
        let iy = y * p.stride_h - p.pad_top;
        let ix = xx * p.stride_w - p.pad_left;
        let x_base = p.x_offset + img * p.x_strides[0];
        b0 = select(input_at(q_ok0, x_base + q_off0, iy + q_dh0, ix + q_dw0), 1.0, q_one0);
        b1 = select(input_at(q_ok1, x_base + q_off1, iy + q_dh1, ix + q_dw1), 1.0, q_one1);
    }
    if first {
        ra0 = a0;
        ra1 = a1;
        rb0 = b0;
        rb1 = b1;
    } else {
        ra2 = a0;
        ra3 = a1;
        rb2 = b0;
        rb3 = b1;
    }
}

fn fetch(k0: u32) {
    let s = k0 + tid % 8u;
    fetch_pixel(s, pix0, true);
    fetch_pixel(s + 8u, pix1, false);
    pix0 = pixel_advance(pix0, TILE_K);
    pix1 = pixel_advance(pix1, TILE_K);
}

@compute @workgroup_size(256)
fn conv2d_weight_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    tid = lid;
    let t = conv_tile(g);
    let split = t.mat / p.conv_groups;

    let o0 = t.row0 + tid / 8u;
    let o1 = o0 + 32u;
    o_ok0 = o0 < p.cout_g;
    o_ok1 = o1 < p.cout_g;
    o_off0 = (t.group * p.cout_g + o0) * p.dy_strides[1];
    o_off1 = (t.group * p.cout_g + o1) * p.dy_strides[1];
    let qa = t.col0 + tid / 8u;
    let qb = qa + 32u;
    let taps = p.n - ONES_COLUMN;
    q_ok0 = qa < taps;
    q_ok1 = qb < taps;
    q_one0 = ONES_COLUMN == 1u && qa == taps;
    q_one1 = ONES_COLUMN == 1u && qb == taps;
    let ra = qa % p.khkw;
    let rb = qb % p.khkw;
    q_off0 = (t.group * p.cin_g + qa / p.khkw) * p.x_strides[1];
    q_off1 = (t.group * p.cin_g + qb / p.khkw) * p.x_strides[1];
    q_dh0 = (ra / p.kw) * p.dil_h;
    q_dh1 = (rb / p.kw) * p.dil_h;
    q_dw0 = (ra % p.kw) * p.dil_w;
    q_dw1 = (rb % p.kw) * p.dil_w;

    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;
    pix0 = pixel_decode(k_begin + tid % 8u);
    pix1 = pixel_decode(k_begin + tid % 8u + 8u);
    gemm_k_loop(k_begin, k_end);

    set_out_matrix(t.mat);
    gemm_store(t.row0, t.col0);
}
