// The forward convolution's operand gathers and output stores, shared by
// conv/conv2d.wgsl (64 x 64 tiles, after common/gemm_64.wgsl) and
// conv/conv2d_128.wgsl (128 x 128, after common/gemm_128.wgsl); read
// conv/conv2d.wgsl for the GEMM. The including file declares the entry
// point, which calls conv2d_main.

//! include common/conv_params.wgsl
//! include common/conv_tile.wgsl
//! include common/relu4.wgsl

// 1 when cin_g % TILE_K == 0: every K step lies within one tap.
override ALIGNED: u32 = 0u;
// 1: add bias[channel] to every output of that channel in the store (the
// bias of F.conv2d, fused so that it costs no pass over the output). With 0
// the bias binding is bound (to any buffer) but never read.
override HAS_BIAS: u32 = 0u;
// 1: ReLU on every output after the bias (a `Conv2d` and the `ReLU` after
// it in one pass).
override ACT_RELU: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>; // [C_out], dense from 0

var<private> w_group: u32; // weight offset of this workgroup's first row
var<private> row0: u32;    // this workgroup's first row (output channel)
var<private> px_ok: bool;  // this thread's column is a pixel
var<private> px_base: u32; // input offset of its image and channel group
var<private> iy0: u32;     // y*sh - pt (wrapping: "negative" is huge)
var<private> ix0: u32;
var<private> cur_group: u32; // this workgroup's channel group

// The weight [C_out, kh, kw, cin_g] is contiguous along k: A is loaded
// k-fast (8 neighbouring threads read 8 neighbouring floats).
fn a_slot(i: u32) -> vec2<u32> {
    return k_fast_slot(tid + i * THREADS);
}

fn b_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

// A value number i of the K step at k0: weight[row, k].
fn load_w(i: u32, k0: u32) -> f32 {
    let s = a_slot(i);
    let row = row0 + s.x;
    let k = k0 + s.y;
    if row < p.cout_g && k < p.k {
        return w[w_group + row * p.k + k];
    }
    return 0.0;
}

// The input at K index k for this thread's column; c is the channel, r the
// tap.
fn load_x(k: u32, c: u32, r: u32) -> f32 {
    let h = iy0 + (r / p.kw) * p.dil_h;
    let ww = ix0 + (r % p.kw) * p.dil_w;
    if k < p.k && px_ok && h < p.in_h && ww < p.in_w {
        return x[px_base + c * p.x_strides[1] + h * p.x_strides[2] + ww * p.x_strides[3]];
    }
    return 0.0;
}

fn load_xk(k: u32) -> f32 {
    return load_x(k, k % p.cin_g, k / p.cin_g);
}

fn fetch(k0: u32) {
    ra0 = load_w(0u, k0);
    ra1 = load_w(1u, k0);
    ra2 = load_w(2u, k0);
    ra3 = load_w(3u, k0);
    let kl = tid / TILE_N;
    if ALIGNED == 1u {
        let c = k0 % p.cin_g + kl;
        let r = k0 / p.cin_g;
        rb0 = load_x(k0 + kl, c, r);
        rb1 = load_x(k0 + kl + KSTRIDE, c + KSTRIDE, r);
        rb2 = load_x(k0 + kl + 2u * KSTRIDE, c + 2u * KSTRIDE, r);
        rb3 = load_x(k0 + kl + 3u * KSTRIDE, c + 3u * KSTRIDE, r);
    } else {
        rb0 = load_xk(k0 + kl);
        rb1 = load_xk(k0 + kl + KSTRIDE);
        rb2 = load_xk(k0 + kl + 2u * KSTRIDE);
        rb3 = load_xk(k0 + kl + 3u * KSTRIDE);
    }
}

// The entry points' body: workgroup `g` (linear), thread `lid`.
fn conv2d_main(g: u32, lid: u32) {
    tid = lid;
    let t = conv_tile(g);
    cur_group = t.group;

    // This workgroup's weight rows and this thread's column (output pixel).
    row0 = t.row0;
    w_group = t.group * p.cout_g * p.k;
    let px = t.col0 + tid % TILE_N;
    px_ok = px < p.n;
    let ohw = p.out_h * p.out_w;
    let img = px / ohw;
    let yx = px % ohw;
    px_base = p.x_offset + img * p.x_strides[0] + t.group * p.cin_g * p.x_strides[1];
    iy0 = (yx / p.out_w) * p.stride_h - p.pad_top;
    ix0 = (yx % p.out_w) * p.stride_w - p.pad_left;

    gemm_k_loop(0u, p.k);
    gemm_store(t.row0, t.col0);
}

// out[img, group*cout_g + o, yx] for rows row..row+3 (vR: row + R) and
// columns col..col+3 of this workgroup's group.
fn store_block(row: u32, col: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    let ohw = p.out_h * p.out_w;
    let c_out = p.cout_g * p.conv_groups;
    let chan = cur_group * p.cout_g + row;
    var b0 = v0;
    var b1 = v1;
    var b2 = v2;
    var b3 = v3;
    if HAS_BIAS == 1u {
        // Channels past this group's rows are never stored: clamp the read.
        let last = c_out - 1u;
        b0 += bias[min(chan, last)];
        b1 += bias[min(chan + 1u, last)];
        b2 += bias[min(chan + 2u, last)];
        b3 += bias[min(chan + 3u, last)];
    }
    if ACT_RELU == 1u {
        b0 = relu4(b0);
        b1 = relu4(b1);
        b2 = relu4(b2);
        b3 = relu4(b3);
    }
    for (var dc = 0u; dc < 4u; dc++) {
        let q = col + dc;
        if q >= p.n {
            break;
        }
        let base = ((q / ohw) * c_out + chan) * ohw + q % ohw;
        if row < p.cout_g { out[base] = b0[dc]; }
        if row + 1u < p.cout_g { out[base + ohw] = b1[dc]; }
        if row + 2u < p.cout_g { out[base + 2u * ohw] = b2[dc]; }
        if row + 3u < p.cout_g { out[base + 3u * ohw] = b3[dc]; }
    }
}
