// The staging shared by the square-tile GEMM cores (common/gemm_32.wgsl,
// gemm_64.wgsl, gemm_128.wgsl): each thread's 4 A and 4 B values of a K
// step written into the core's a_tile/b_tile, [buffer][k][row / 4] with
// ROW4 vec4s per k-row. B's slots are A's (square tiles, B_LOADS = 4).
// Include from the core, which declares TILE, ROW4, the tiles, ra0..rb3,
// k_fast_slot and mn_fast_slot; the including kernel supplies a_slot and
// b_slot (common/matmul_fetch.wgsl, or the convolutions' own).

const B_LOADS: u32 = 4u;

fn b_k_fast_slot(e: u32) -> vec2<u32> {
    return k_fast_slot(e);
}

fn b_mn_fast_slot(e: u32) -> vec2<u32> {
    return mn_fast_slot(e);
}

fn put_a(buf: u32, i: u32, v: f32) {
    let s = a_slot(i);
    a_tile[buf + s.y * ROW4 + s.x / 4u][s.x % 4u] = v;
}

fn put_b(buf: u32, i: u32, v: f32) {
    let s = b_slot(i);
    b_tile[buf + s.y * ROW4 + s.x / 4u][s.x % 4u] = v;
}

fn stage(buf: u32) {
    put_a(buf, 0u, ra0);
    put_a(buf, 1u, ra1);
    put_a(buf, 2u, ra2);
    put_a(buf, 3u, ra3);
    put_b(buf, 0u, rb0);
    put_b(buf, 1u, rb1);
    put_b(buf, 2u, rb2);
    put_b(buf, 3u, rb3);
}
