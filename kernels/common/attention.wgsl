// What the fused scaled-dot-product-attention kernels share
// (kernels/attention/attention_forward.wgsl, attention_backward.wgsl): the
// parameters, the bindings (one layout for all three entry points, unused
// ones bound to aliases), the workgroup tiles and the tile primitives.
//
// A workgroup of 256 threads owns a 64 x 64 tile of scores: thread
// (ty, tx) = (lid / 16, lid % 16) holds rows ty*4.. and columns tx*4.. as
// four vec4 (one per row). Features are staged 16 at a time, transposed,
// in tile_a / tile_b; the probabilities (or score gradients) of a tile go
// through tile_p, transposed, to be multiplied into a 64-column slab of
// values (or keys, queries, output gradients) staged in tile_b.
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

// Staged features: [16 features][17 vec4 (16 + 1 pad)] -> rows r as
// component r % 4 of vec4 r / 4.
var<workgroup> tile_a: array<vec4<f32>, 272>;
var<workgroup> tile_b: array<vec4<f32>, 272>;
// Transposed probabilities: [64 columns][16 vec4 of rows].
var<workgroup> tile_p: array<vec4<f32>, 1024>;
// Row reductions: [64 rows][16 lanes].
var<workgroup> red: array<f32, 1024>;

var<private> lid: u32;
var<private> tx: u32;
var<private> ty: u32;

// Element offsets of one batch item's matrices.
struct ItemBase {
    q: u32,
    k: u32,
    v: u32,
    mask: u32,
}

fn item_base(item: u32) -> ItemBase {
    let c0 = item / p.inner;
    let c1 = item % p.inner;
    return ItemBase(
        p.q_offset + c0 * p.q_batch[0] + c1 * p.q_batch[1],
        p.k_offset + c0 * p.k_batch[0] + c1 * p.k_batch[1],
        p.v_offset + c0 * p.v_batch[0] + c1 * p.v_batch[1],
        p.mask_offset + c0 * p.mask_batch[0] + c1 * p.mask_batch[1],
    );
}

fn load(src: u32, idx: u32) -> f32 {
    switch src {
        case SRC_Q: { return q[idx]; }
        case SRC_K: { return k[idx]; }
        case SRC_V: { return v[idx]; }
        case SRC_DOUT, default: { return dout[idx]; }
    }
}

// Stages features f0..f0+16 of rows row0..row0+64 of a [rows, width]
// matrix (row stride `stride`, from element `base`) into tile_a (`into_b`
// false) or tile_b, transposed; zero outside.
fn stage_features(into_b: bool, src: u32, base: u32, stride: u32, row0: u32, rows: u32, f0: u32, width: u32) {
    let r = lid / 4u;
    let fq = (lid % 4u) * 4u;
    for (var c = 0u; c < 4u; c++) {
        let f = fq + c;
        var x = 0.0;
        if row0 + r < rows && f0 + f < width {
            x = load(src, base + (row0 + r) * stride + f0 + f);
        }
        if into_b {
            tile_b[f * 17u + r / 4u][r % 4u] = x;
        } else {
            tile_a[f * 17u + r / 4u][r % 4u] = x;
        }
    }
}

// The 64 x 64 tile of dot products A[row] . B[col] over `width` features,
// A rows row0_a.. of src_a, B rows row0_b.. of src_b.
fn tile_dot(src_a: u32, base_a: u32, stride_a: u32, row0_a: u32, rows_a: u32,
            src_b: u32, base_b: u32, stride_b: u32, row0_b: u32, rows_b: u32,
            width: u32) -> array<vec4<f32>, 4> {
    var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var f0 = 0u; f0 < width; f0 += 16u) {
        workgroupBarrier();
        stage_features(false, src_a, base_a, stride_a, row0_a, rows_a, f0, width);
        stage_features(true, src_b, base_b, stride_b, row0_b, rows_b, f0, width);
        workgroupBarrier();
        for (var f = 0u; f < 16u; f++) {
            let a = tile_a[f * 17u + ty];
            let b = tile_b[f * 17u + tx];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
    }
    return acc;
}

// Writes the thread's 4 x 4 block into tile_p transposed (column-major).
fn store_p(t: array<vec4<f32>, 4>) {
    for (var j = 0u; j < 4u; j++) {
        tile_p[(tx * 4u + j) * 16u + ty] = vec4<f32>(t[0][j], t[1][j], t[2][j], t[3][j]);
    }
}

// acc[row] += sum_t tile_p[t][row] * M[t0 + t][col0 + tx*4 ..] for the 64
// columns t of tile_p, M a [rows_m, width] matrix of src (row stride
// `stride`, from `base`), zero outside. tile_p must be written and
// visible (barrier) before the call.
fn accumulate_p_times(acc: ptr<function, array<vec4<f32>, 4>>, src: u32, base: u32, stride: u32,
                      t0: u32, rows_m: u32, col0: u32, width: u32) {
    for (var kb = 0u; kb < 64u; kb += 16u) {
        // Stage rows t0+kb.. (16) x columns col0.. (64) into tile_b as
        // [t][16 vec4 of columns].
        let t = lid / 16u;
        let cg = lid % 16u;
        var x = vec4<f32>(0.0);
        let row = t0 + kb + t;
        if row < rows_m {
            for (var c = 0u; c < 4u; c++) {
                let col = col0 + cg * 4u + c;
                if col < width {
                    x[c] = load(src, base + row * stride + col);
                }
            }
        }
        workgroupBarrier();
        tile_b[t * 17u + cg] = x;
        workgroupBarrier();
        for (var s = 0u; s < 16u; s++) {
            let pv = tile_p[(kb + s) * 16u + ty];
            let m = tile_b[s * 17u + tx];
            (*acc)[0] += pv.x * m;
            (*acc)[1] += pv.y * m;
            (*acc)[2] += pv.z * m;
            (*acc)[3] += pv.w * m;
        }
    }
}

// Sum over the 16 threads of each row of the thread's per-row values.
fn row_sum(x: vec4<f32>) -> vec4<f32> {
    workgroupBarrier();
    for (var i = 0u; i < 4u; i++) {
        red[(ty * 4u + i) * 16u + tx] = x[i];
    }
    workgroupBarrier();
    var s = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        for (var l = 0u; l < 16u; l++) {
            s[i] += red[(ty * 4u + i) * 16u + l];
        }
    }
    return s;
}

// Largest of the row over its 16 threads, NaN winning.
fn row_max(x: vec4<f32>) -> vec4<f32> {
    workgroupBarrier();
    for (var i = 0u; i < 4u; i++) {
        red[(ty * 4u + i) * 16u + tx] = x[i];
    }
    workgroupBarrier();
    var m = vec4<f32>(neg_inf());
    for (var i = 0u; i < 4u; i++) {
        for (var l = 0u; l < 16u; l++) {
            let y = red[(ty * 4u + i) * 16u + l];
            m[i] = select(m[i], y, y > m[i] || is_nan(y));
        }
    }
    return m;
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

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

fn thread_ids(local: u32) {
    lid = local;
    tx = local % 16u;
    ty = local / 16u;
}
