// The workgroup -> output tile mapping of the implicit-GEMM convolutions
// (TILE_M x TILE_N tiles: the GEMM core they include says). Each dispatch runs
// `p.conv_groups` independent GEMMs (one per channel group) over K,
// optionally cut into chunks (split K). Workgroup g = (split * conv_groups + group) * tiles_mn + tile, tiles
// column-major (M tiles fastest: neighbouring workgroups share the B
// columns, the gathered activations). The including kernel's immediates
// `p` carry tiles_n, tiles_mn and conv_groups.

// This workgroup's tile: first row, first column, channel group, and
// split*conv_groups + group (the index of its [M, N] output matrix).
struct ConvTile {
    row0: u32,
    col0: u32,
    group: u32,
    mat: u32,
}

fn conv_tile(g: u32) -> ConvTile {
    let mat = g / p.tiles_mn;
    let t = g % p.tiles_mn;
    let tiles_m = p.tiles_mn / p.tiles_n;
    return ConvTile((t % tiles_m) * TILE_M, (t / tiles_m) * TILE_N, mat % p.conv_groups, mat);
}
