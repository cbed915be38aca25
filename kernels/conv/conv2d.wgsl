// Forward 2-D convolution as an implicit GEMM (no im2col buffer), per
// channel group g:
//   out[n, g*cout_g + o, y, x] = sum_k W[o, k] * X[k, (n, y, x)]
// M = cout_g output channels (rows), N = batch * out_h * out_w output
// pixels (columns), K = kh * kw * cin_g taps ordered k = (i * kw + j) *
// cin_g + c' (channel fastest, so that with cin_g % 16 == 0 a whole K step
// shares one tap: ALIGNED). The B operand is gathered from the input,
// through its strides, while the tile is loaded: X[k, (n, y, x)] =
// input[n, g*cin_g + c', y*sh - pt + i*dh, x*sw - pl + j*dw], zero outside.
// The weight is contiguous [C_out, cin_g, kh, kw]. The output is contiguous
// [N, C_out, out_h, out_w]. Tiling: common/conv_gemm.wgsl (64 x 64).
//
// Bindings: 0 input (read), 1 weight (read), 2 out (read_write).
// Immediates: ConvParams (m = cout_g, n = pixels, k = kh*kw*cin_g).

//! include common/conv_gemm.wgsl
//! include common/conv_params.wgsl

// 1 when cin_g % 16 == 0: every K step lies within one tap.
override ALIGNED: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<private> w_row: u32;   // weight offset of this thread's row (0 if past cout_g)
var<private> row_ok: bool;
var<private> px_ok: bool;  // this thread's column is a pixel
var<private> px_base: u32; // input offset of its image and channel group
var<private> iy0: u32;     // y*sh - pt (wrapping: "negative" is huge)
var<private> ix0: u32;

fn a_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

fn b_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

// (weight, input) of K index k for this thread's row and column; c is the
// channel, r the tap.
fn load(k: u32, c: u32, r: u32) -> vec2<f32> {
    var v = vec2<f32>(0.0);
    if k >= p.k {
        return v;
    }
    if row_ok {
        v.x = w[w_row + c * p.khkw + r];
    }
    let h = iy0 + (r / p.kw) * p.dil_h;
    let ww = ix0 + (r % p.kw) * p.dil_w;
    if px_ok && h < p.in_h && ww < p.in_w {
        v.y = x[px_base + c * p.x_strides[1] + h * p.x_strides[2] + ww * p.x_strides[3]];
    }
    return v;
}

fn load_k(k: u32) -> vec2<f32> {
    return load(k, k % p.cin_g, k / p.cin_g);
}

fn fetch(k0: u32) {
    let kl = tid / TILE;
    var v0: vec2<f32>;
    var v1: vec2<f32>;
    var v2: vec2<f32>;
    var v3: vec2<f32>;
    if ALIGNED == 1u {
        let c = k0 % p.cin_g + kl;
        let r = k0 / p.cin_g;
        v0 = load(k0 + kl, c, r);
        v1 = load(k0 + kl + 4u, c + 4u, r);
        v2 = load(k0 + kl + 8u, c + 8u, r);
        v3 = load(k0 + kl + 12u, c + 12u, r);
    } else {
        v0 = load_k(k0 + kl);
        v1 = load_k(k0 + kl + 4u);
        v2 = load_k(k0 + kl + 8u);
        v3 = load_k(k0 + kl + 12u);
    }
    ra0 = v0.x;
    rb0 = v0.y;
    ra1 = v1.x;
    rb1 = v1.y;
    ra2 = v2.x;
    rb2 = v2.y;
    ra3 = v3.x;
    rb3 = v3.y;
}

@compute @workgroup_size(256)
fn conv2d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    tid = lid;
    let t = conv_tile(g);
    let ohw = p.out_h * p.out_w;

    // This thread's gather row (output channel) and column (output pixel).
    let o = t.row0 + tid % TILE;
    row_ok = o < p.cout_g;
    w_row = select(0u, (t.group * p.cout_g + o) * p.k, row_ok);
    let px = t.col0 + tid % TILE;
    px_ok = px < p.n;
    let img = px / ohw;
    let yx = px % ohw;
    px_base = p.x_offset + img * p.x_strides[0] + t.group * p.cin_g * p.x_strides[1];
    iy0 = (yx / p.out_w) * p.stride_h - p.pad_top;
    ix0 = (yx % p.out_w) * p.stride_w - p.pad_left;

    conv_gemm(0u, p.k);

    // out[img, group*cout_g + o, yx] for rows ty*4.. and columns tx*4...
    let c_out = p.cout_g * p.conv_groups;
    let r = t.row0 + (tid / 16u) * 4u;
    let col = t.col0 + (tid % 16u) * 4u;
    let chan = t.group * p.cout_g + r;
    for (var dc = 0u; dc < 4u; dc++) {
        let q = col + dc;
        if q >= p.n {
            break;
        }
        let base = ((q / ohw) * c_out + chan) * ohw + q % ohw;
        if r < p.cout_g { out[base] = c0[dc]; }
        if r + 1u < p.cout_g { out[base + ohw] = c1[dc]; }
        if r + 2u < p.cout_g { out[base + 2u * ohw] = c2[dc]; }
        if r + 3u < p.cout_g { out[base + 3u * ohw] = c3[dc]; }
    }
}
