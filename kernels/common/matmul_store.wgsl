// The stores of the register-tiled matmul kernels (matmul_64, matmul_128):
// the `store_block` that common/gemm_64.wgsl and gemm_128.wgsl hand each
// thread's 4 x 4 outputs to, bounds-checked at the edges, with the bias
// row of `linear` added to the finished sums (HAS_BIAS, a pipeline
// constant: kernels without it compile no bias code) and then, with
// ACT_RELU, the ReLU of a following `ReLU` module, or with OUT_RELU_MASK
// the gradient mask of a ReLU before the product's layer. Needs
// common/matmul_params.wgsl (out, bias, out_base, ONES_COLUMN, ACT_RELU).

//! include common/relu4.wgsl

// Where output (row, col) goes: row-major [M, n], or with ONES_COLUMN the
// real columns as [M, n - 1] and the last column after them.
fn out_at(row: u32, col: u32) -> u32 {
    if ONES_COLUMN == 1u {
        let cols = p.n - 1u;
        if col == cols {
            return out_base + p.m * cols + row;
        }
        return out_base + row * cols + col;
    }
    return out_base + row * p.n + col;
}

// One output through the OUT_RELU_MASK epilogue.
fn write1(at: u32, v: f32) {
    out[at] = out_relu_masked(v, at);
}

fn write4(row: u32, col: u32, v: vec4<f32>) {
    if row >= p.m {
        return;
    }
    if col < p.n { write1(out_at(row, col), v.x); }
    if col + 1u < p.n { write1(out_at(row, col + 1u), v.y); }
    if col + 2u < p.n { write1(out_at(row, col + 2u), v.z); }
    if col + 3u < p.n { write1(out_at(row, col + 3u), v.w); }
}

// vR: row row+R, columns col..col+3.
fn store_block(row: u32, col: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    var w0 = v0;
    var w1 = v1;
    var w2 = v2;
    var w3 = v3;
    if HAS_BIAS == 1u {
        // Added only when set: adding zeros would turn -0.0 sums into +0.0.
        let bv = vec4<f32>(bias_at(col), bias_at(col + 1u), bias_at(col + 2u), bias_at(col + 3u));
        w0 += bv;
        w1 += bv;
        w2 += bv;
        w3 += bv;
    }
    if ACT_RELU == 1u {
        w0 = relu4(w0);
        w1 = relu4(w1);
        w2 = relu4(w2);
        w3 = relu4(w3);
    }
    write4(row, col, w0);
    write4(row + 1u, col, w1);
    write4(row + 2u, col, w2);
    write4(row + 3u, col, w3);
}
