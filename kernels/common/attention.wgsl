// What the fused scaled-dot-product-attention kernels share
// (kernels/attention/attention_forward.wgsl, attention_backward.wgsl): the
// parameters, the bindings (one layout for all three entry points, unused
// ones bound to aliases), the workgroup memory and the tile primitives.
//
// A workgroup of 128 threads owns a 64 x 64 tile of scores: thread
// (ty, tx) = (lid / 8, lid % 8) holds rows ty*4.. and columns tx*4.. and
// 32+tx*4.. in the private vec4s c0..c3 and e0..e3 (cR, eR: row ty*4+R),
// and the products run the way the GEMM core (common/gemm_64.wgsl) does:
// - `dot_loop` (scores, A[row] . B[col] over the features): features in
//   steps of 16, double-buffered in workgroup memory with one barrier per
//   step, the next step's values fetched into registers (coalesced: 8
//   neighbouring threads read 8 neighbouring features of a row) while the
//   current step is multiplied;
// - `pv_loop` (c/e += P M, P the 64 x 64 tile of probabilities or score
//   gradients, M 64 rows of values, keys, queries or output gradients):
//   P written once to workgroup memory, transposed (swizzled so the
//   transposing writes do not collide on banks), M staged 16 rows at a
//   time, double-buffered, one barrier per step.
// So a 64-key block of the forward costs 10 barriers, with 2 x 64^3
// multiply-adds between them; 4 x 8 outputs per thread read half the
// workgroup memory per multiply-add that 4 x 4 would. The staging buffers
// of the two loops share memory with the P tile (a loop starts with a
// barrier where that matters), keeping the total at 26.5 KiB, under
// lavapipe's 32 KiB. The kernels are bound by this on-chip work and by
// registers (see `multiply_dot`), not by memory: docs/BENCHMARKS.md,
// "Fused attention".
//
// Semantics (wgrad_core::checks::attention): score(i, j) = scale * q_i . k_j
// + bias, the bias being the additive mask, or -inf where a boolean mask
// is 0 or causality forbids j > i; a row whose every score is -inf gives
// zeros; dropout keeps weight (item, i, j) when the uniform draw of
// counter (item * L + i) * S + j is >= dropout_p and scales it by
// keep_scale.
//
// Bindings: 0 q, 1 k, 2 v, 3 mask (u32 bits; f32 for an additive mask),
// 4 dout, 5 stats (per query row: the forward's log-sum-exp, then
// delta = rowsum(dout * out)), all read; 6 out0, 7 out1 read_write
// (forward: out, lse; dq pass: dq, alias; dk/dv pass: dk, dv).

//! include common/nan.wgsl

struct AttentionParams {
    q_len: u32,
    kv_len: u32,
    head_dim: u32,
    v_dim: u32,
    scale: f32,
    flags: u32,
    dropout_p: f32,
    key0: u32,
    key1: u32,
    blocks: u32,      // 64-row blocks per item
    chunks: u32,      // 64-column output chunks per block
    items: u32,       // batch items (product of the batch dims)
    inner: u32,       // size of the inner of the two merged batch dims
    q_row: u32,       // row strides (the last dim has stride 1)
    k_row: u32,
    v_row: u32,
    mask_row: u32,    // mask strides over (i, j); 0 = broadcast
    mask_col: u32,
    q_offset: u32,
    k_offset: u32,
    v_offset: u32,
    mask_offset: u32,
    // Strides over the (outer, inner) batch dims; 0 = broadcast.
    q_batch: array<u32, 2>,
    k_batch: array<u32, 2>,
    v_batch: array<u32, 2>,
    mask_batch: array<u32, 2>,
}

const FLAG_CAUSAL: u32 = 1u;
const FLAG_MASK_BOOL: u32 = 2u;
const FLAG_MASK_ADD: u32 = 4u;
const FLAG_DROPOUT: u32 = 8u;
// Backward only: the dk/dv pass writes dk and dv into out0 (dv after dk)
// and every score-gradient tile into out1, which the dq pass then reads
// (`attention_backward_dq_saved`) instead of recomputing P and dP.
const FLAG_SAVE_DS: u32 = 16u;
// ROWS_OUTER = 1: the dense tensors (the output and its gradient, dq, dk,
// dv; not lse or stats) are [outer, rows, inner, width] in memory rather
// than [items, rows, width] (items = outer x inner, as `item_base` splits
// them): a [B, T, H, D] tensor seen as [B, H, T, D], the layout of q, k
// and v split out of one [B, T, 3 C] projection. The caller's transposes
// back to [B, T, H, D] then copy nothing. Pipeline constants rather than
// flags, so that the usual kernels compile without these paths (H100: the
// dk/dv pass 4% slower with them as flags).
override ROWS_OUTER: u32 = 0u;
// GRADS_AS_INPUTS = 1 (backward): dq, dk and dv are written where q, k
// and v are read (their offsets, row and batch strides), all three into
// out0: q, k and v are disjoint views of one buffer (split out of one
// [B, T, 3 C] projection), so the three gradients fill one buffer laid out
// as that projection's, and the caller's split backward copies nothing.
override GRADS_AS_INPUTS: u32 = 0u;

const SRC_Q: u32 = 0u;
const SRC_K: u32 = 1u;
const SRC_V: u32 = 2u;
const SRC_DOUT: u32 = 3u;


var<immediate> p: AttentionParams;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<u32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> out0: array<f32>;
@group(0) @binding(7) var<storage, read_write> out1: array<f32>;

const ROW4: u32 = 17u;     // vec4s per staged row (16 + 1 pad)
const STAGE: u32 = 272u;   // 16 * ROW4: one staged operand step
// Workgroup memory, in vec4s: the dot loop's staging A0 B0 A1 B1
// [0, 1088); the P tile [0, 1024) ([64 columns][16 vec4 of rows],
// swizzled); the pv loop's staging M0 M1 [1024, 1568); the row reductions
// [1568, 1696) ([8 lanes][16 vec4 of rows]).
const SM_A: u32 = 0u;
const SM_B: u32 = 272u;
const SM_P: u32 = 0u;
const SM_M: u32 = 1024u;
const SM_RED: u32 = 1568u;
var<workgroup> sm: array<vec4<f32>, 1696>;

var<private> lid: u32;
var<private> tx: u32;
var<private> ty: u32;
// The thread's 4 x 8 block of the product being computed: cR row ty*4+R,
// columns tx*4..; eR the same row, columns 32+tx*4...
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;
var<private> e0: vec4<f32>;
var<private> e1: vec4<f32>;
var<private> e2: vec4<f32>;
var<private> e3: vec4<f32>;
// The next step's values, fetched ahead of staging (8 of A, 8 of B).
var<private> ra0: vec4<f32>;
var<private> ra1: vec4<f32>;
var<private> rb0: vec4<f32>;
var<private> rb1: vec4<f32>;

// Element offsets of one batch item's matrices.
struct ItemBase {
    q: u32,
    k: u32,
    v: u32,
    mask: u32,
}

fn item_base(item: u32) -> ItemBase {
    let o = item / p.inner;
    let n = item % p.inner;
    return ItemBase(
        p.q_offset + o * p.q_batch[0] + n * p.q_batch[1],
        p.k_offset + o * p.k_batch[0] + n * p.k_batch[1],
        p.v_offset + o * p.v_batch[0] + n * p.v_batch[1],
        p.mask_offset + o * p.mask_batch[0] + n * p.mask_batch[1],
    );
}

// Element 0 of row `row` of item `item` of a dense [items, rows, width]
// tensor (see ROWS_OUTER).
fn dense_row(item: u32, row: u32, rows: u32, width: u32) -> u32 {
    if ROWS_OUTER == 1u {
        return ((item / p.inner * rows + row) * p.inner + item % p.inner) * width;
    }
    return (item * rows + row) * width;
}

// The row stride of a dense tensor of rows `width` wide.
fn dense_stride(width: u32) -> u32 {
    if ROWS_OUTER == 1u {
        return p.inner * width;
    }
    return width;
}

fn load(src: u32, idx: u32) -> f32 {
    switch src {
        case SRC_Q: { return q[idx]; }
        case SRC_K: { return k[idx]; }
        case SRC_V: { return v[idx]; }
        case SRC_DOUT, default: { return dout[idx]; }
    }
}

// A [rows, width] matrix of one source (row stride `stride`, from element
// `base`); what is outside reads as zero.
struct Mat {
    src: u32,
    base: u32,
    stride: u32,
    rows: u32,
    width: u32,
}

fn mat_at(m: Mat, row: u32, col: u32) -> f32 {
    if row < m.rows && col < m.width {
        return load(m.src, m.base + row * m.stride + col);
    }
    return 0.0;
}

// In a feature-contiguous step (64 rows x 16 features), value i (0..8) of
// a thread is feature lid % 8 + 8 * (i / 4) of row lid / 8 + 16 * (i % 4),
// so 8 neighbours read 32 contiguous bytes.
fn fetch_rows4(m: Mat, row0: u32, f: u32) -> vec4<f32> {
    let r = row0 + lid / 8u;
    return vec4<f32>(mat_at(m, r, f), mat_at(m, r + 16u, f), mat_at(m, r + 32u, f), mat_at(m, r + 48u, f));
}

// Stores fetch_rows4's values (features f..) transposed: [feature][row / 4].
fn stage_rows4(buf: u32, f: u32, x: vec4<f32>) {
    let r = lid / 8u;
    let at = buf + f * ROW4 + r / 4u;
    let c = r % 4u;
    sm[at][c] = x.x;
    sm[at + 4u][c] = x.y;
    sm[at + 8u][c] = x.z;
    sm[at + 12u][c] = x.w;
}

fn fetch_a(m: Mat, row0: u32, f0: u32) {
    ra0 = fetch_rows4(m, row0, f0 + lid % 8u);
    ra1 = fetch_rows4(m, row0, f0 + 8u + lid % 8u);
}

fn fetch_b(m: Mat, row0: u32, f0: u32) {
    rb0 = fetch_rows4(m, row0, f0 + lid % 8u);
    rb1 = fetch_rows4(m, row0, f0 + 8u + lid % 8u);
}

fn stage_ab(buf: u32) {
    stage_rows4(SM_A + buf, lid % 8u, ra0);
    stage_rows4(SM_A + buf, 8u + lid % 8u, ra1);
    stage_rows4(SM_B + buf, lid % 8u, rb0);
    stage_rows4(SM_B + buf, 8u + lid % 8u, rb1);
}

// In a row-contiguous step of M (16 rows x 64 columns), value i (0..8) of
// a thread is column lid % 64 of row lid / 64 + 2 * i.
fn fetch_m(m: Mat, t0: u32, col0: u32) {
    let col = col0 + lid % 64u;
    let t = t0 + lid / 64u;
    rb0 = vec4<f32>(mat_at(m, t, col), mat_at(m, t + 2u, col), mat_at(m, t + 4u, col), mat_at(m, t + 6u, col));
    rb1 = vec4<f32>(mat_at(m, t + 8u, col), mat_at(m, t + 10u, col), mat_at(m, t + 12u, col), mat_at(m, t + 14u, col));
}

// Stores fetch_m's values: [row][column / 4] at `buf`.
fn stage_m(buf: u32) {
    let col = lid % 64u;
    let at = buf + (lid / 64u) * ROW4 + col / 4u;
    let c = col % 4u;
    sm[at][c] = rb0.x;
    sm[at + 2u * ROW4][c] = rb0.y;
    sm[at + 4u * ROW4][c] = rb0.z;
    sm[at + 6u * ROW4][c] = rb0.w;
    sm[at + 8u * ROW4][c] = rb1.x;
    sm[at + 10u * ROW4][c] = rb1.y;
    sm[at + 12u * ROW4][c] = rb1.z;
    sm[at + 14u * ROW4][c] = rb1.w;
}

// c/e += a (4 rows) x (b, g) (columns tx*4.., 32+tx*4..).
fn mac(a: vec4<f32>, b: vec4<f32>, g: vec4<f32>) {
    c0 = fma(vec4<f32>(a.x), b, c0);
    c1 = fma(vec4<f32>(a.y), b, c1);
    c2 = fma(vec4<f32>(a.z), b, c2);
    c3 = fma(vec4<f32>(a.w), b, c3);
    e0 = fma(vec4<f32>(a.x), g, e0);
    e1 = fma(vec4<f32>(a.y), g, e1);
    e2 = fma(vec4<f32>(a.z), g, e2);
    e3 = fma(vec4<f32>(a.w), g, e3);
}

// One staged step of the dot loop (buffer offset `buf`).
fn mac_at(ai: u32, bi: u32) {
    mac(sm[ai], sm[bi], sm[bi + 8u]);
}

// How the 16 multiply-adds of a step are written: unrolled by hand, as
// in gemm_64.wgsl, so that the driver's compiler sees straight-line loads
// it can schedule ahead of the multiply-adds (fastest where registers
// allow), or as a loop (UNROLL_4: unrolled by 4), for the loops with the
// most live accumulators (the dk/dv pass's pv loops), where the full
// unroll costs more in registers than it gains.
const UNROLL_FULL: u32 = 0u;
const UNROLL_4: u32 = 1u;

fn multiply_dot(buf: u32, style: u32) {
    if style == UNROLL_FULL {
        multiply_dot_full(buf);
    } else {
        let ai = SM_A + buf + ty;
        let bi = SM_B + buf + tx;
        for (var f = 0u; f < 16u; f += 4u) {
            mac_at(ai + f * ROW4, bi + f * ROW4);
            mac_at(ai + (f + 1u) * ROW4, bi + (f + 1u) * ROW4);
            mac_at(ai + (f + 2u) * ROW4, bi + (f + 2u) * ROW4);
            mac_at(ai + (f + 3u) * ROW4, bi + (f + 3u) * ROW4);
        }
    }
}

fn multiply_dot_full(buf: u32) {
    let ai = SM_A + buf + ty;
    let bi = SM_B + buf + tx;
    mac_at(ai + 0u * ROW4, bi + 0u * ROW4);
    mac_at(ai + 1u * ROW4, bi + 1u * ROW4);
    mac_at(ai + 2u * ROW4, bi + 2u * ROW4);
    mac_at(ai + 3u * ROW4, bi + 3u * ROW4);
    mac_at(ai + 4u * ROW4, bi + 4u * ROW4);
    mac_at(ai + 5u * ROW4, bi + 5u * ROW4);
    mac_at(ai + 6u * ROW4, bi + 6u * ROW4);
    mac_at(ai + 7u * ROW4, bi + 7u * ROW4);
    mac_at(ai + 8u * ROW4, bi + 8u * ROW4);
    mac_at(ai + 9u * ROW4, bi + 9u * ROW4);
    mac_at(ai + 10u * ROW4, bi + 10u * ROW4);
    mac_at(ai + 11u * ROW4, bi + 11u * ROW4);
    mac_at(ai + 12u * ROW4, bi + 12u * ROW4);
    mac_at(ai + 13u * ROW4, bi + 13u * ROW4);
    mac_at(ai + 14u * ROW4, bi + 14u * ROW4);
    mac_at(ai + 15u * ROW4, bi + 15u * ROW4);
}

fn zero_acc() {
    c0 = vec4<f32>(0.0);
    c1 = vec4<f32>(0.0);
    c2 = vec4<f32>(0.0);
    c3 = vec4<f32>(0.0);
    e0 = vec4<f32>(0.0);
    e1 = vec4<f32>(0.0);
    e2 = vec4<f32>(0.0);
    e3 = vec4<f32>(0.0);
}

// c/e = the 64 x 64 tile of dot products A[row0_a + r] . B[row0_b + c]
// over `width` features. Workgroup-uniform arguments only (barriers).
fn dot_loop(a: Mat, row0_a: u32, b: Mat, row0_b: u32, width: u32, style: u32) {
    zero_acc();
    fetch_a(a, row0_a, 0u);
    fetch_b(b, row0_b, 0u);
    // The staging overlaps the P tile and the previous loop's buffers.
    workgroupBarrier();
    for (var f0 = 0u; f0 < width; f0 += 32u) {
        stage_ab(0u);
        workgroupBarrier();
        let f1 = f0 + 16u;
        if f1 < width {
            fetch_a(a, row0_a, f1);
            fetch_b(b, row0_b, f1);
        }
        multiply_dot(0u, style);
        if f1 < width {
            stage_ab(2u * STAGE);
            workgroupBarrier();
            if f1 + 16u < width {
                fetch_a(a, row0_a, f1 + 16u);
                fetch_b(b, row0_b, f1 + 16u);
            }
            multiply_dot(2u * STAGE, style);
        }
    }
}

// Index of P's column t, rows 4*r4.. : the row group is XORed with t / 4
// so that the threads of a row group, writing columns tx*4 + j, hit
// different banks.
fn p_index(t: u32, r4: u32) -> u32 {
    return SM_P + t * 16u + (r4 ^ ((t / 4u) % 16u));
}

// Writes 4 columns (t..t+4) x the thread's 4 rows, given as its rows
// x0..x3, into the P tile, transposed.
fn store_p4(t: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) {
    sm[p_index(t, ty)] = vec4<f32>(x0.x, x1.x, x2.x, x3.x);
    sm[p_index(t + 1u, ty)] = vec4<f32>(x0.y, x1.y, x2.y, x3.y);
    sm[p_index(t + 2u, ty)] = vec4<f32>(x0.z, x1.z, x2.z, x3.z);
    sm[p_index(t + 3u, ty)] = vec4<f32>(x0.w, x1.w, x2.w, x3.w);
}

// Writes the thread's 4 x 8 block (rows as (xR, yR): columns tx*4..,
// 32+tx*4..) into the P tile. The caller makes sure nobody still reads
// the memory.
fn store_p(x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>,
           y0: vec4<f32>, y1: vec4<f32>, y2: vec4<f32>, y3: vec4<f32>) {
    store_p4(tx * 4u, x0, x1, x2, x3);
    store_p4(32u + tx * 4u, y0, y1, y2, y3);
}

fn mac_pv(t: u32, mi: u32) {
    mac(sm[p_index(t, ty)], sm[mi], sm[mi + 8u]);
}

fn multiply_pv(t0: u32, buf: u32, style: u32) {
    if style == UNROLL_FULL {
        multiply_pv_full(t0, buf);
    } else {
        let mi = SM_M + buf + tx;
        for (var s = 0u; s < 16u; s += 4u) {
            mac_pv(t0 + s, mi + s * ROW4);
            mac_pv(t0 + s + 1u, mi + (s + 1u) * ROW4);
            mac_pv(t0 + s + 2u, mi + (s + 2u) * ROW4);
            mac_pv(t0 + s + 3u, mi + (s + 3u) * ROW4);
        }
    }
}

fn multiply_pv_full(t0: u32, buf: u32) {
    let mi = SM_M + buf + tx;
    mac_pv(t0 + 0u, mi + 0u * ROW4);
    mac_pv(t0 + 1u, mi + 1u * ROW4);
    mac_pv(t0 + 2u, mi + 2u * ROW4);
    mac_pv(t0 + 3u, mi + 3u * ROW4);
    mac_pv(t0 + 4u, mi + 4u * ROW4);
    mac_pv(t0 + 5u, mi + 5u * ROW4);
    mac_pv(t0 + 6u, mi + 6u * ROW4);
    mac_pv(t0 + 7u, mi + 7u * ROW4);
    mac_pv(t0 + 8u, mi + 8u * ROW4);
    mac_pv(t0 + 9u, mi + 9u * ROW4);
    mac_pv(t0 + 10u, mi + 10u * ROW4);
    mac_pv(t0 + 11u, mi + 11u * ROW4);
    mac_pv(t0 + 12u, mi + 12u * ROW4);
    mac_pv(t0 + 13u, mi + 13u * ROW4);
    mac_pv(t0 + 14u, mi + 14u * ROW4);
    mac_pv(t0 + 15u, mi + 15u * ROW4);
}

// The first step of a pv_loop over rows t0.. of m, columns col0..: fetch
// it early (before the P tile is ready) to hide the load latency.
fn pv_prefetch(m: Mat, t0: u32, col0: u32) {
    fetch_m(m, t0, col0);
}

// c/e += P M[t0 .., col0 ..] over the 64 columns of the P tile, after
// pv_prefetch(m, t0, col0). The P tile must be written (no barrier needed
// after it); the staging rows must be free (they are after any barrier
// that follows the previous pv_loop).
fn pv_loop(m: Mat, t0: u32, col0: u32, style: u32) {
    for (var s0 = 0u; s0 < 64u; s0 += 32u) {
        stage_m(SM_M);
        workgroupBarrier();
        fetch_m(m, t0 + s0 + 16u, col0);
        multiply_pv(s0, 0u, style);
        stage_m(SM_M + STAGE);
        workgroupBarrier();
        if s0 == 0u {
            fetch_m(m, t0 + 32u, col0);
        }
        multiply_pv(s0 + 16u, STAGE, style);
    }
}

// Per row of the thread, the sum (or NaN-winning max) over the 8 threads
// of the row group of their values. A barrier must separate two calls
// (any loop between does).
fn row_reduce(x: vec4<f32>, is_max: bool) -> vec4<f32> {
    sm[SM_RED + tx * 16u + ty] = x;
    workgroupBarrier();
    var m = sm[SM_RED + ty];
    for (var l = 1u; l < 8u; l++) {
        let y = sm[SM_RED + l * 16u + ty];
        if is_max {
            m = select(m, y, y > m | is_nan4(y));
        } else {
            m += y;
        }
    }
    return m;
}

fn is_nan4(x: vec4<f32>) -> vec4<bool> {
    return vec4<bool>(is_nan(x.x), is_nan(x.y), is_nan(x.z), is_nan(x.w));
}

// Whether the 64 x 64 tile at (i0, j0) needs `biased`: true unless it lies
// inside the matrix, under the causal diagonal, with no boolean mask.
fn tile_needs_mask(i0: u32, j0: u32) -> bool {
    if i0 + 64u > p.q_len || j0 + 64u > p.kv_len || (p.flags & FLAG_MASK_BOOL) != 0u {
        return true;
    }
    return (p.flags & FLAG_CAUSAL) != 0u && j0 + 63u > i0;
}

// The biased score of query i, key j (raw = q_i . k_j): -inf outside the
// matrix, where causality forbids it or a boolean mask is 0.
fn biased(raw: f32, i: u32, j: u32, mask_base: u32) -> f32 {
    if i >= p.q_len || j >= p.kv_len {
        return neg_inf();
    }
    if (p.flags & FLAG_CAUSAL) != 0u && j > i {
        return neg_inf();
    }
    var s = raw * p.scale;
    let at = mask_base + i * p.mask_row + j * p.mask_col;
    if (p.flags & FLAG_MASK_BOOL) != 0u && mask[at] == 0u {
        return neg_inf();
    }
    if (p.flags & FLAG_MASK_ADD) != 0u {
        s += bitcast<f32>(mask[at]);
    }
    return s;
}

// `biased` over a row of 4: query i, keys j..j+4; `full` when the tile
// needs no masking (only the scale and an additive mask apply).
fn biased4(raw: vec4<f32>, i: u32, j: u32, mask_base: u32, full: bool) -> vec4<f32> {
    if full && (p.flags & FLAG_MASK_ADD) == 0u {
        return raw * p.scale;
    }
    return vec4<f32>(
        biased(raw.x, i, j, mask_base),
        biased(raw.y, i, j + 1u, mask_base),
        biased(raw.z, i, j + 2u, mask_base),
        biased(raw.w, i, j + 3u, mask_base),
    );
}

// `biased` over a column of 4: queries i..i+4, key j.
fn biased4_col(raw: vec4<f32>, i: u32, j: u32, mask_base: u32, full: bool) -> vec4<f32> {
    if full && (p.flags & FLAG_MASK_ADD) == 0u {
        return raw * p.scale;
    }
    return vec4<f32>(
        biased(raw.x, i, j, mask_base),
        biased(raw.y, i + 1u, j, mask_base),
        biased(raw.z, i + 2u, j, mask_base),
        biased(raw.w, i + 3u, j, mask_base),
    );
}

fn mix32(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    x ^= x >> 16u;
    return x;
}

// Whether dropout keeps weight (item, i, j) (wgrad_core::checks::attention::dropout_keep).
fn keep(item: u32, i: u32, j: u32) -> bool {
    let counter = (item * p.q_len + i) * p.kv_len + j;
    let bits = mix32((mix32(counter ^ p.key0) + p.key1) ^ 0x165667b1u);
    return f32(bits >> 8u) * (1.0 / 16777216.0) >= p.dropout_p;
}

fn keep_scale() -> f32 {
    return 1.0 / (1.0 - p.dropout_p);
}

// x with dropout applied to weights (item, i, j..j+4).
fn dropped4(x: vec4<f32>, item: u32, i: u32, j: u32) -> vec4<f32> {
    let z = vec4<bool>(keep(item, i, j), keep(item, i, j + 1u), keep(item, i, j + 2u), keep(item, i, j + 3u));
    return select(vec4<f32>(0.0), x * keep_scale(), z);
}

// x with dropout applied to weights (item, i..i+4, j).
fn dropped4_col(x: vec4<f32>, item: u32, i: u32, j: u32) -> vec4<f32> {
    let z = vec4<bool>(keep(item, i, j), keep(item, i + 1u, j), keep(item, i + 2u, j), keep(item, i + 3u, j));
    return select(vec4<f32>(0.0), x * keep_scale(), z);
}

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

fn thread_ids(local: u32) {
    lid = local;
    tx = local % 8u;
    ty = local / 8u;
}

// The workgroup's (block, chunk, item, 1), or w = 0 past the last one.
// Items vary fastest; the blocks go heaviest first under a causal mask
// (the last query blocks see the most keys, the first key blocks the
// most queries: `last_first` says which), so that the short ones fill
// the tail.
fn tile_of(wid: vec3<u32>, nwg: vec3<u32>, last_first: bool) -> vec4<u32> {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.blocks * p.chunks * p.items {
        return vec4<u32>(0u);
    }
    let rest = g / p.items;
    let b = rest % p.blocks;
    return vec4<u32>(select(b, p.blocks - 1u - b, last_first), rest / p.blocks, g % p.items, 1u);
}

// Largest of 4, NaN winning.
fn hmax(x: vec4<f32>) -> f32 {
    var m = x.x;
    m = select(m, x.y, x.y > m || is_nan(x.y));
    m = select(m, x.z, x.z > m || is_nan(x.z));
    m = select(m, x.w, x.w > m || is_nan(x.w));
    return m;
}

// End of the keys query block i0 (64 rows) attends to: all of them, or
// under FLAG_CAUSAL those up to its last row.
fn keys_end(i0: u32) -> u32 {
    if (p.flags & FLAG_CAUSAL) != 0u {
        return min(p.kv_len, i0 + 64u);
    }
    return p.kv_len;
}
