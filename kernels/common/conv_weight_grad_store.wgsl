// The stores of the weight-gradient kernels (conv/conv2d_weight_grad.wgsl
// and _128): the `store_block` their GEMM core hands each thread's 4 x 4
// outputs to. Needs common/conv_params.wgsl (p) and the kernel's `out`.
//
// Plain: out[mat, o, q], contiguous [splits * conv_groups, cout_g, n].
// ONES_COLUMN = 1 (conv2d's bias gradient in the same pass): the gathered
// input gets a last column of ones (q = n - 1, set by the kernel's loads),
// so that column of the product is sum over the pixels of grad_out, the
// bias gradient. Each split's part of `out` is then [C_out, n - 1] (the
// weight gradient, the weight's own layout) followed by [C_out] (the bias
// gradient), so sum_splits adds parts element by element as before.

override ONES_COLUMN: u32 = 0u;

var<private> out_mat: u32;        // this workgroup's output matrix: split * conv_groups + group
var<private> out_split_base: u32; // ONES_COLUMN: where its split's part of `out` starts
var<private> out_chan0: u32;      // ONES_COLUMN: its group's first output channel

// Called once per workgroup before the store (the divisions stay out of
// the per-element index).
fn set_out_matrix(mat: u32) {
    out_mat = mat;
    if ONES_COLUMN == 1u {
        out_split_base = (mat / p.conv_groups) * p.conv_groups * p.m * p.n;
        out_chan0 = (mat % p.conv_groups) * p.m;
    }
}

fn out_at(row: u32, col: u32) -> u32 {
    if ONES_COLUMN == 1u {
        let cols = p.n - 1u;
        let chan = out_chan0 + row;
        if col == cols {
            return out_split_base + p.conv_groups * p.m * cols + chan;
        }
        return out_split_base + chan * cols + col;
    }
    return (out_mat * p.m + row) * p.n + col;
}

fn write4(row: u32, col: u32, v: vec4<f32>) {
    if row >= p.m {
        return;
    }
    if col < p.n { out[out_at(row, col)] = v.x; }
    if col + 1u < p.n { out[out_at(row, col + 1u)] = v.y; }
    if col + 2u < p.n { out[out_at(row, col + 2u)] = v.z; }
    if col + 3u < p.n { out[out_at(row, col + 3u)] = v.w; }
}

// Rows row..row+3 (vR: row + R), columns col..col+3.
fn store_block(row: u32, col: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    write4(row, col, v0);
    write4(row + 1u, col, v1);
    write4(row + 2u, col, v2);
    write4(row + 3u, col, v3);
}
