// The strided operand loads of the GEMM cores (common/gemm_32.wgsl,
// gemm_64.wgsl, gemm_128.wgsl, gemm_128x64.wgsl): the `a_slot`/`b_slot`/
// `fetch` those cores ask their including kernel for, over
// matmul_params.wgsl's operands, and the tile kernels' whole work
// (`matmul_tile`). Include after matmul_params.wgsl and the core (it reads
// the core's THREADS, TILE_M, TILE_N, B_LOADS (B values per thread and K
// step: 4, or 2 for the 64-column tile), tid, the slot functions and
// ra0..rb3).

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
        return b_k_fast_slot(e);
    }
    return b_mn_fast_slot(e);
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
    if B_LOADS == 4u {
        rb2 = load_b(2u, k0);
        rb3 = load_b(3u, k0);
    }
}

// A tile kernel's whole work after its bounds check: place workgroup `g`,
// sum its split of K (bounds as `let`s: the core's loop holds barriers, so
// they must be visibly workgroup-uniform) and store.
fn matmul_tile(g: u32) {
    let split = place(g, TILE_M, TILE_N);
    let k_begin = split * p.k_chunk;
    let k_end = min(k_begin + p.k_chunk, p.k);
    k_stop = k_end;
    gemm_k_loop(k_begin, k_end);
    gemm_store(row0, col0);
}
