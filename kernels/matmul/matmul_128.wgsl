// Batched f32 GEMM, large-tile variant: out[s, b] = A[b] @ B[b] restricted
// to split s of K. Same operands, bindings, immediates and overrides as
// matmul_64.wgsl (read its header); only the tiling differs.
//
// Bindings: 0 a (read), 1 b (read), 2 out (read_write), 3 bias (read).
// Immediates: MatmulParams.
//
// Tiling: common/gemm_128.wgsl (shared with the convolutions): 256
// threads, each an 8 x 8 block made of 2 x 2 sub-blocks of 4 x 4 lying 64
// rows / columns apart, K steps of 8 double-buffered in workgroup memory
// (16.5 KiB). This file supplies the strided loads; the stores (and the
// bias of `linear`) are common/matmul_store.wgsl.

//! include common/matmul_params.wgsl
//! include common/gemm_128.wgsl
//! include common/matmul_store.wgsl

// (m, k) within the A slice of the element this thread loads as number `i`.
fn a_slot(i: u32) -> vec2<u32> {
    let e = tid + i * THREADS;
    if A_M_FAST == 1u {
        return mn_fast_slot(e);
    }
    return k_fast_slot(e);
}

// (n, k) within the B slice of the element this thread loads as number `i`.
fn b_slot(i: u32) -> vec2<u32> {
    let e = tid + i * THREADS;
    if B_K_FAST == 1u {
        return k_fast_slot(e);
    }
    return mn_fast_slot(e);
}

fn load_a(i: u32, k0: u32) -> f32 {
    let s = a_slot(i);
    let r = row0 + s.x;
    let c = k0 + s.y;
    if r < p.m && c < k_stop {
        let at = a_base + r * p.a_rs + c * p.a_cs;
        return relu_masked(a[at], at);
    }
    return 0.0; // zero padding makes edge tiles exact without special cases
}

fn load_b(i: u32, k0: u32) -> f32 {
    let s = b_slot(i);
    let c = col0 + s.x;
    let r = k0 + s.y;
    if r < k_stop && c < p.n {
        if ONES_COLUMN == 1u && c == p.n - 1u {
            return 1.0;
        }
        return b[b_base + r * p.b_rs + c * p.b_cs];
    }
    return 0.0;
}

fn fetch(k0: u32) {
    ra0 = load_a(0u, k0);
    ra1 = load_a(1u, k0);
    ra2 = load_a(2u, k0);
    ra3 = load_a(3u, k0);
    rb0 = load_b(0u, k0);
    rb1 = load_b(1u, k0);
    rb2 = load_b(2u, k0);
    rb3 = load_b(3u, k0);
}

@compute @workgroup_size(256)
fn matmul_128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Whole workgroups past the end leave together (uniform: before any barrier).
    if g >= p.groups {
        return;
    }
    tid = lid;
    let split = place(g, TILE, TILE);

    // This split's share of K (a `let`: the loop below holds a barrier, so
    // its bound must be visibly workgroup-uniform).
    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;

    gemm_k_loop(k_begin, k_end);

    gemm_store(row0, col0);
}
