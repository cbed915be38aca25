// The input gradient's `fetch` for the GEMM cores whose threads gather 4
// A (weight) and 4 B (grad_out) values a K step (common/gemm_64.wgsl,
// gemm_128.wgsl), over the gathers of common/conv2d_input_grad_body.wgsl.

fn fetch(k0: u32) {
    let kl = tid / TILE_N;
    if ALIGNED == 1u {
        // The whole step lies within one tap.
        let o0 = k0 % p.cout_g;
        let ij = tap(k0 / p.cout_g);
        let s0 = a_slot(0u);
        let s1 = a_slot(1u);
        let s2 = a_slot(2u);
        let s3 = a_slot(3u);
        ra0 = load_w(k0 + s0.y, row0 + s0.x, o0 + s0.y, ij);
        ra1 = load_w(k0 + s1.y, row0 + s1.x, o0 + s1.y, ij);
        ra2 = load_w(k0 + s2.y, row0 + s2.x, o0 + s2.y, ij);
        ra3 = load_w(k0 + s3.y, row0 + s3.x, o0 + s3.y, ij);
        let o = o0 + kl;
        rb0 = load_dy(k0 + kl, o, ij);
        rb1 = load_dy(k0 + kl + KSTRIDE, o + KSTRIDE, ij);
        rb2 = load_dy(k0 + kl + 2u * KSTRIDE, o + 2u * KSTRIDE, ij);
        rb3 = load_dy(k0 + kl + 3u * KSTRIDE, o + 3u * KSTRIDE, ij);
    } else {
        ra0 = load_wk(0u, k0);
        ra1 = load_wk(1u, k0);
        ra2 = load_wk(2u, k0);
        ra3 = load_wk(3u, k0);
        rb0 = load_dyk(k0 + kl);
        rb1 = load_dyk(k0 + kl + KSTRIDE);
        rb2 = load_dyk(k0 + kl + 2u * KSTRIDE);
        rb3 = load_dyk(k0 + kl + 3u * KSTRIDE);
    }
}
