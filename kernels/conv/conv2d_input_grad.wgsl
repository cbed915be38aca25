// Input gradient of a 2-D convolution (the adjoint of conv2d.wgsl in its
// input; also conv_transpose2d) as an implicit GEMM, per channel group g:
//   dx[n, g*cin_g + c, h, w] = sum_k W[c, k] * DY[k, (n, h, w)]
// M = cin_g input channels (rows), N = batch * in_h * in_w input pixels
// (columns), K = kh * kw * cout_g ordered k = (i * kw + j) * cout_g + o
// (output channel fastest; ALIGNED when cout_g % 16 == 0). Gathered while
// the tiles load: W[c, k] = weight[g*cout_g + o, c, i, j] and DY[k, (n, h,
// w)] = grad_out[n, g*cout_g + o, y, x] where h + pt = y*sh + i*dh and
// w + pl = x*sw + j*dw exactly (zero when no such y, x in range).
// grad_out is read through its strides; the weight is contiguous; dx is
// contiguous [N, C_in, in_h, in_w]. Tiling: common/conv_gemm.wgsl.
//
// Bindings: 0 grad_out (read), 1 weight (read), 2 dx (read_write).
// Immediates: ConvParams (m = cin_g, n = input pixels, k = kh*kw*cout_g).

//! include common/conv_gemm.wgsl
//! include common/conv_params.wgsl

// 1 when cout_g % 16 == 0: every K step lies within one tap.
override ALIGNED: u32 = 0u;

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

var<private> w_row: u32;   // weight offset of this thread's row (input channel)
var<private> row_ok: bool;
var<private> w_group: u32; // weight offset of the group's first output channel
var<private> px_ok: bool;  // this thread's column is an input pixel
var<private> px_base: u32; // grad_out offset of its image and channel group
var<private> hp: u32;      // h + pt
var<private> wp: u32;      // w + pl

fn a_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

fn b_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

// (weight, grad_out) of K index k for this thread's row and column; o is
// the output channel within the group, r the tap.
fn load(k: u32, o: u32, r: u32) -> vec2<f32> {
    var v = vec2<f32>(0.0);
    if k >= p.k {
        return v;
    }
    if row_ok {
        v.x = w[w_group + o * p.cin_g * p.khkw + w_row + r];
    }
    let dh = (r / p.kw) * p.dil_h;
    let dw = (r % p.kw) * p.dil_w;
    if px_ok && hp >= dh && wp >= dw {
        let ty = hp - dh;
        let tx = wp - dw;
        let y = ty / p.stride_h;
        let xx = tx / p.stride_w;
        if y * p.stride_h == ty && xx * p.stride_w == tx && y < p.out_h && xx < p.out_w {
            v.y = dy[px_base + o * p.dy_strides[1] + y * p.dy_strides[2] + xx * p.dy_strides[3]];
        }
    }
    return v;
}

fn load_k(k: u32) -> vec2<f32> {
    return load(k, k % p.cout_g, k / p.cout_g);
}

fn fetch(k0: u32) {
    let kl = tid / TILE;
    var v0: vec2<f32>;
    var v1: vec2<f32>;
    var v2: vec2<f32>;
    var v3: vec2<f32>;
    if ALIGNED == 1u {
        let o = k0 % p.cout_g + kl;
        let r = k0 / p.cout_g;
        v0 = load(k0 + kl, o, r);
        v1 = load(k0 + kl + 4u, o + 4u, r);
        v2 = load(k0 + kl + 8u, o + 8u, r);
        v3 = load(k0 + kl + 12u, o + 12u, r);
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
fn conv2d_input_grad(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    tid = lid;
    let t = conv_tile(g);
    let ihw = p.in_h * p.in_w;

    // This thread's gather row (input channel) and column (input pixel).
    let c = t.row0 + tid % TILE;
    row_ok = c < p.cin_g;
    w_row = select(0u, c * p.khkw, row_ok);
    w_group = t.group * p.cout_g * p.cin_g * p.khkw;
    let px = t.col0 + tid % TILE;
    px_ok = px < p.n;
    let img = px / ihw;
    let hw = px % ihw;
    px_base = p.dy_offset + img * p.dy_strides[0] + t.group * p.cout_g * p.dy_strides[1];
    hp = hw / p.in_w + p.pad_top;
    wp = hw % p.in_w + p.pad_left;

    conv_gemm(0u, p.k);

    // dx[img, group*cin_g + c, hw] for rows ty*4.. and columns tx*4...
    let c_in = p.cin_g * p.conv_groups;
    let r = t.row0 + (tid / 16u) * 4u;
    let col = t.col0 + (tid % 16u) * 4u;
    let chan = t.group * p.cin_g + r;
    for (var dc = 0u; dc < 4u; dc++) {
        let q = col + dc;
        if q >= p.n {
            break;
        }
        let base = ((q / ihw) * c_in + chan) * ihw + q % ihw;
        if r < p.cin_g { dx[base] = c0[dc]; }
        if r + 1u < p.cin_g { dx[base + ihw] = c1[dc]; }
        if r + 2u < p.cin_g { dx[base + 2u * ihw] = c2[dc]; }
        if r + 3u < p.cin_g { dx[base + 3u * ihw] = c3[dc]; }
    }
}
