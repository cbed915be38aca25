// What the matmul kernels (matmul_64, matmul_128, matmul_coop) share: the
// immediate block, the operand bindings, the load-order and bias overrides
// and the per-workgroup placement they all compute the same way.
//
// A[b] is M x K, B[b] is K x N, both read through arbitrary row/col strides
// and per-batch offsets (transposed, narrowed and broadcast views need no
// copy); out is contiguous [batch, M, N] starting at element 0.
// Split K: with k_chunk < K, workgroup split s sums only k in
// [s * k_chunk, (s + 1) * k_chunk) and writes out[s, batch, M, N]; a second
// kernel (sum_splits.wgsl) adds the splits up. Unsplit: k_chunk >= K.
// Bias (HAS_BIAS = 1, `linear`): out[b, m, n] = (A[b] @ B[b])[m, n] +
// bias[bias_offset + n * bias_stride], the bias added to the finished dot
// product in the store, as a separate add would (bit-identical to it).
// Split products never set it: sum_splits adds the bias once, after the sum.

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    tiles_n: u32,   // ceil(N / tile columns)
    tiles_mn: u32,  // tiles_n * ceil(M / tile rows)
    groups: u32,    // tiles_mn * batch count * splits
    a_offset: u32,
    b_offset: u32,
    a_rs: u32,      // A row (m) stride
    a_cs: u32,      // A column (k) stride
    b_rs: u32,      // B row (k) stride
    b_cs: u32,      // B column (n) stride
    // Up to 4 batch dims, right-aligned (unused leading dims: size 1, stride 0).
    batch: array<u32, 4>,
    a_bstrides: array<u32, 4>,
    b_bstrides: array<u32, 4>,
    k_chunk: u32,   // K per split (a multiple of 16); >= K when not split
    batches: u32,   // number of batch matrices (product of `batch`)
    bias_offset: u32, // bias element of output column 0 (HAS_BIAS = 1)
    bias_stride: u32, // bias element step per output column (0: one value)
}

var<immediate> p: MatmulParams;

// Which index of each operand runs fastest in memory picks how the threads
// walk a staged slice, so that neighbouring threads read neighbouring
// addresses (coalesced) for both plain and transposed views.
// A_M_FAST = 1: A's rows are unit-stride (e.g. a transposed view).
// B_K_FAST = 1: B's rows are unit-stride (e.g. transposed weights, x @ W^T).
override A_M_FAST: u32 = 0u;
override B_K_FAST: u32 = 0u;
// HAS_BIAS = 1: add the bias row to every output row (see above). With 0
// the bias binding is bound (to any buffer) but never read.
override HAS_BIAS: u32 = 0u;
// ACT_RELU = 1 (matmul_64/matmul_128; never with split K, where sum_splits
// applies it, nor with the tensor-core kernel, which leaves it to a
// separate pass): ReLU on the finished output, after the bias (a `Linear`
// followed by `ReLU`, in one pass: common/relu4.wgsl).
override ACT_RELU: u32 = 0u;
// A_RELU_MASK = 1 (matmul_64/matmul_128; never with HAS_BIAS): each A
// element is kept where the element at the same index of binding 3 (the
// output of a fused `Linear` + ReLU, laid out as A's source) is not +0.0,
// and zeroed where it is: ReLU's backward (`out > 0`, NaN passing) folded
// into the products of a `linear_relu`'s gradients (the host checks the
// layouts match).
override A_RELU_MASK: u32 = 0u;
// OUT_RELU_MASK = 1 (never with HAS_BIAS, A_RELU_MASK or ONES_COLUMN; with
// split K, sum_splits applies it): each output element is kept where the
// element at bias_offset + its output index in binding 3 (a ReLU's
// output, contiguous, of the output's shape) is not +0.0, and zeroed
// where it is: the product is an input gradient that the ReLU producing
// that input would mask next (`x -> linear_relu -> h -> linear`: dh's
// producer applies the mask, and the ReLU's backward skips it).
override OUT_RELU_MASK: u32 = 0u;
// ONES_COLUMN = 1 (matmul_64/matmul_128, unbatched): B gets a last column
// of ones, so the product's last output column is the row sums of A
// (sum over k of A[m, k]: `linear`'s bias gradient alongside its weight
// gradient, in the same pass). The immediates' n counts that column; the
// store writes the real N = n - 1 columns as a contiguous [M, N] and the
// sums after them as [M] (a split writes the same layout into its part of
// the partial sums, which sum_splits adds element by element).
override ONES_COLUMN: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;

// `v` (an A element at index `at`) through A_RELU_MASK: ReLU's outputs
// are +0.0 exactly where its gradient is blocked (NaN and positives pass).
fn relu_masked(v: f32, at: u32) -> f32 {
    if A_RELU_MASK == 1u && bitcast<u32>(bias[at]) == 0u {
        return 0.0;
    }
    return v;
}

// Output element `v` at output index `at` through OUT_RELU_MASK.
fn out_relu_masked(v: f32, at: u32) -> f32 {
    if OUT_RELU_MASK == 1u && bitcast<u32>(bias[p.bias_offset + at]) == 0u {
        return 0.0;
    }
    return v;
}

// The bias of output column `col` (0 past N, for edge tiles).
fn bias_at(col: u32) -> f32 {
    if col < p.n {
        return bias[p.bias_offset + col * p.bias_stride];
    }
    return 0.0;
}

// Tile rows walked together: workgroups running at the same time share
// both A rows and B columns, which keeps the reused slices in L2.
const GROUP_ROWS: u32 = 8u;

var<private> row0: u32;
var<private> col0: u32;
var<private> a_base: u32;
var<private> b_base: u32;
var<private> k_stop: u32;
var<private> out_base: u32;

// Places this workgroup (g = (split * batches + batch index) * tiles_mn +
// tile): sets row0/col0 of its tile_m x tile_n output tile, walked in
// bands of GROUP_ROWS tile rows (column-major within a band), and
// a_base/b_base, its matrix's offsets in A and B (broadcast batch dims have
// stride 0). Returns its split of K. (Callers take K's bounds from the
// split as `let`s of their own: a loop holding barriers needs bounds that
// are visibly workgroup-uniform.)
fn place(g: u32, tile_m: u32, tile_n: u32) -> u32 {
    let mat = g / p.tiles_mn;
    let t = g % p.tiles_mn;
    let bi = mat % p.batches;

    let tiles_m = p.tiles_mn / p.tiles_n;
    let band = GROUP_ROWS * p.tiles_n;
    let first = (t / band) * GROUP_ROWS;
    let rows = min(tiles_m - first, GROUP_ROWS);
    let in_band = t % band;
    row0 = (first + in_band % rows) * tile_m;
    col0 = (in_band / rows) * tile_n;

    var rem = bi;
    var ab = p.a_offset;
    var bb = p.b_offset;
    for (var d = 3; d >= 0; d--) {
        let size = p.batch[d];
        let idx = rem % size;
        rem /= size;
        ab += idx * p.a_bstrides[d];
        bb += idx * p.b_bstrides[d];
    }
    a_base = ab;
    b_base = bb;
    out_base = mat * p.m * p.n;
    return mat / p.batches;
}
