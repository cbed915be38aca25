// The immediates of the Winograd F(2x2, 3x3) transforms
// (conv/winograd_weight.wgsl, conv/winograd_input.wgsl,
// conv/winograd_output.wgsl), which with a batched product between them
// compute a 3x3, stride-1, undilated, ungrouped convolution:
//   U[t, o, c] = (G g[o, c] G^T)[t]       (t = 4a + b, a 4 x 4 per pair)
//   V[t, c, q] = (B^T d[c, q] B)[t]       (d: the 4 x 4 input patch of tile q)
//   M[t]       = U[t] @ V[t]              (16 products, [O, C] x [C, P])
//   out tile q = A^T M[., o, q] A          (2 x 2 outputs)
// Tiles q = (n * tiles_h + ty) * tiles_w + tx cover the output in 2 x 2
// blocks; tile (ty, tx) reads input rows 2ty - pad_top .. + 3 (zero outside).

struct WinogradParams {
    channels: u32,      // channels of the input (U's and V's columns / rows)
    in_h: u32,
    in_w: u32,
    pad_top: u32,       // zero rows above the input
    pad_left: u32,      // zero columns left of it
    tiles_h: u32,       // ceil(out_h / 2)
    tiles_w: u32,       // ceil(out_w / 2)
    tiles: u32,         // batch * tiles_h * tiles_w (P)
    out_channels: u32,  // channels of the output (U's and M's rows)
    out_h: u32,
    out_w: u32,
    total: u32,         // threads this dispatch runs
    x_offset: u32,      // input transform: the input's element offset
    x_strides: array<u32, 4>, // and its N, C, H, W strides
}

var<immediate> p: WinogradParams;

fn winograd_thread(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
}

// Tile q's column, row and image: (tx, ty, n).
fn winograd_tile(q: u32) -> vec3<u32> {
    return vec3<u32>(q % p.tiles_w, (q / p.tiles_w) % p.tiles_h, q / (p.tiles_w * p.tiles_h));
}
