// Input gradient of a 2-D convolution (read conv2d_input_grad.wgsl) on
// 32 x 128 tiles, for 32 or fewer input channels per group: a 64-row tile
// would leave half its rows (input channels) empty. Same immediates,
// gathers and stores (common/conv2d_input_grad_body.wgsl); the GEMM is
// common/gemm_32x128.wgsl, whose threads gather 2 weight and 8 grad_out
// values a K step (the `fetch` below).
//
// Bindings: 0 grad_out (read), 1 weight (read), 2 dx (read_write).
// Immediates: ConvInputGradParams (tiles_n = ceil(N / 128), tiles_mn =
// tiles_n * ceil(cin_g / 32)).

//! include common/gemm_32x128.wgsl
//! include common/conv2d_input_grad_body.wgsl

fn fetch(k0: u32) {
    let kl = tid / TILE_N;
    if ALIGNED == 1u {
        // The whole step lies within one tap.
        let o0 = k0 % p.cout_g;
        let ij = tap(k0 / p.cout_g);
        let s0 = a_slot(0u);
        let s1 = a_slot(1u);
        ra0 = load_w(k0 + s0.y, row0 + s0.x, o0 + s0.y, ij);
        ra1 = load_w(k0 + s1.y, row0 + s1.x, o0 + s1.y, ij);
        let o = o0 + kl;
        rb0 = load_dy(k0 + kl, o, ij);
        rb1 = load_dy(k0 + kl + KSTRIDE, o + KSTRIDE, ij);
        rb2 = load_dy(k0 + kl + 2u * KSTRIDE, o + 2u * KSTRIDE, ij);
        rb3 = load_dy(k0 + kl + 3u * KSTRIDE, o + 3u * KSTRIDE, ij);
        rb4 = load_dy(k0 + kl + 4u * KSTRIDE, o + 4u * KSTRIDE, ij);
        rb5 = load_dy(k0 + kl + 5u * KSTRIDE, o + 5u * KSTRIDE, ij);
        rb6 = load_dy(k0 + kl + 6u * KSTRIDE, o + 6u * KSTRIDE, ij);
        rb7 = load_dy(k0 + kl + 7u * KSTRIDE, o + 7u * KSTRIDE, ij);
    } else {
        ra0 = load_wk(0u, k0);
        ra1 = load_wk(1u, k0);
        rb0 = load_dyk(k0 + kl);
        rb1 = load_dyk(k0 + kl + KSTRIDE);
        rb2 = load_dyk(k0 + kl + 2u * KSTRIDE);
        rb3 = load_dyk(k0 + kl + 3u * KSTRIDE);
        rb4 = load_dyk(k0 + kl + 4u * KSTRIDE);
        rb5 = load_dyk(k0 + kl + 5u * KSTRIDE);
        rb6 = load_dyk(k0 + kl + 6u * KSTRIDE);
        rb7 = load_dyk(k0 + kl + 7u * KSTRIDE);
    }
}

@compute @workgroup_size(256)
fn conv2d_input_grad_32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.groups {
        return;
    }
    conv2d_input_grad_main(g, lid);
}
