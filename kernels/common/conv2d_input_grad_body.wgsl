// The input gradient's immediates, operand gathers and output stores,
// shared by conv/conv2d_input_grad.wgsl (64 x 64 tiles, after
// common/gemm_64.wgsl), conv/conv2d_input_grad_128.wgsl (128 x 128,
// after common/gemm_128.wgsl) and conv/conv2d_input_grad_32.wgsl (32 x
// 128, after common/gemm_32x128.wgsl); read conv/conv2d_input_grad.wgsl
// for the GEMM. The including file declares the entry point, which calls
// conv2d_input_grad_main, and supplies the core's `fetch` (four A and four
// B values a thread: common/conv2d_input_grad_fetch4.wgsl).

//! include common/conv_tile.wgsl

struct ConvInputGradParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    cin_g: u32,       // input channels per group (GEMM rows)
    cout_g: u32,      // output channels per group
    kw: u32,
    khkw: u32,        // kh * kw
    stride_h: u32,
    stride_w: u32,
    base_h: i32,      // (h0 + pt - i0*dh) / sh: grad_out row of the phase's
    base_w: i32,      // first pixel and first tap (and column)
    step_h: u32,      // i_step * dh / sh: grad_out rows per tap step
    step_w: u32,      // and columns
    n: u32,           // GEMM columns: batch * rows * cols
    k: u32,           // GEMM inner size: phase taps * cout_g
    tiles_n: u32,     // ceil(N / 64)
    tiles_mn: u32,    // tiles_n * ceil(cin_g / 64)
    groups: u32,      // workgroups: tiles_mn * conv_groups
    conv_groups: u32, // channel groups
    dy_offset: u32,   // grad_out's element offset
    h0: u32,          // the phase's first input row
    w0: u32,          // and column
    rows: u32,        // its rows (h0, h0 + sh, ...)
    cols: u32,        // and columns
    tap0: u32,        // its first tap: i0 | j0 << 16
    tap_step: u32,    // tap steps: i_step | j_step << 16
    n_tj: u32,        // its taps along the width
    dy_strides: array<u32, 4>, // grad_out's N, C, H, W strides
}

var<immediate> p: ConvInputGradParams;

// 1 when cout_g % TILE_K == 0: every K step lies within one tap.
override ALIGNED: u32 = 0u;

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

var<private> w_group: u32; // weight offset of this workgroup's channel group
var<private> row0: u32;    // this workgroup's first row (input channel)
var<private> px_ok: bool;  // this thread's column is an input pixel
var<private> px_base: u32; // grad_out offset of its image and channel group
var<private> py0: i32;    // grad_out row of this pixel at the phase's first tap
var<private> px0: i32;    // and column
var<private> cur_group: u32; // this workgroup's channel group

// The weight [G, cin_g, kh, kw, cout_g] is contiguous along o: A is loaded
// k-fast (8 neighbouring threads read 8 neighbouring floats when aligned).
fn a_slot(i: u32) -> vec2<u32> {
    return k_fast_slot(tid + i * THREADS);
}

fn b_slot(i: u32) -> vec2<u32> {
    return mn_fast_slot(tid + i * THREADS);
}

// Tap (i, j) of phase tap index r, and its place (ti, tj) among the
// phase's taps.
fn tap(r: u32) -> vec4<u32> {
    let ti = r / p.n_tj;
    let tj = r % p.n_tj;
    let i = (p.tap0 & 0xffffu) + ti * (p.tap_step & 0xffffu);
    let j = (p.tap0 >> 16u) + tj * (p.tap_step >> 16u);
    return vec4<u32>(i, j, ti, tj);
}

// weight[g*cout_g + o, c, ij] for input channel c of the group, output
// channel o, tap (i, j); k is the K index (0 past the end).
fn load_w(k: u32, c: u32, o: u32, ij: vec4<u32>) -> f32 {
    if c < p.cin_g && k < p.k {
        return w[w_group + (c * p.khkw + ij.x * p.kw + ij.y) * p.cout_g + o];
    }
    return 0.0;
}

// A value number n of the K step at k0, K index decoded per element.
fn load_wk(n: u32, k0: u32) -> f32 {
    let s = a_slot(n);
    let k = k0 + s.y;
    return load_w(k, row0 + s.x, k % p.cout_g, tap(k / p.cout_g));
}

// grad_out at K index k for this thread's column; o is the output channel
// within the group, ij the tap. The phase makes h + pt - i*dh a multiple
// of sh: the row is py0 - ti * step_h, no division.
fn load_dy(k: u32, o: u32, ij: vec4<u32>) -> f32 {
    let y = py0 - i32(ij.z * p.step_h);
    let xx = px0 - i32(ij.w * p.step_w);
    if k < p.k && px_ok && y >= 0 && xx >= 0 && u32(y) < p.out_h && u32(xx) < p.out_w {
        return dy[px_base + o * p.dy_strides[1] + u32(y) * p.dy_strides[2] + u32(xx) * p.dy_strides[3]];
    }
    return 0.0;
}

fn load_dyk(k: u32) -> f32 {
    return load_dy(k, k % p.cout_g, tap(k / p.cout_g));
}

// dx offset of phase pixel q (q < p.n) at input channel 0 of its image,
// plus the pixel's row and column.
fn dx_pixel(q: u32, c_in: u32) -> u32 {
    let rc = p.rows * p.cols;
    let t = q % rc;
    let h = p.h0 + (t / p.cols) * p.stride_h;
    let ww = p.w0 + (t % p.cols) * p.stride_w;
    return (q / rc) * c_in * p.in_h * p.in_w + h * p.in_w + ww;
}

// The entry points' body: workgroup `g` (linear), thread `lid`.
fn conv2d_input_grad_main(g: u32, lid: u32) {
    tid = lid;
    let t = conv_tile(g);
    cur_group = t.group;

    // This workgroup's weight rows and this thread's column (phase pixel).
    row0 = t.row0;
    w_group = t.group * p.cout_g * p.cin_g * p.khkw;
    let px = t.col0 + tid % TILE_N;
    px_ok = px < p.n;
    let rc = p.rows * p.cols;
    let img = px / rc;
    let s = px % rc;
    px_base = p.dy_offset + img * p.dy_strides[0] + t.group * p.cout_g * p.dy_strides[1];
    py0 = i32(s / p.cols) + p.base_h;
    px0 = i32(s % p.cols) + p.base_w;

    gemm_k_loop(0u, p.k);
    gemm_store(t.row0, t.col0);
}

// dx[img, group*cin_g + c, h, w] for rows row..row+3 (vR: row + R) and
// phase pixels col..col+3 of this workgroup's group.
fn store_block(row: u32, col: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    let c_in = p.cin_g * p.conv_groups;
    let ihw = p.in_h * p.in_w;
    let chan = (cur_group * p.cin_g + row) * ihw;
    for (var dc = 0u; dc < 4u; dc++) {
        let q = col + dc;
        if q >= p.n {
            break;
        }
        let base = dx_pixel(q, c_in) + chan;
        if row < p.cin_g { dx[base] = v0[dc]; }
        if row + 1u < p.cin_g { dx[base + ihw] = v1[dc]; }
        if row + 2u < p.cin_g { dx[base + 2u * ihw] = v2[dc]; }
        if row + 3u < p.cin_g { dx[base + 3u * ihw] = v3[dc]; }
    }
}
