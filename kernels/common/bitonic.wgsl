// Bitonic sorting network over (key, index) pairs in workgroup memory, for
// workgroups of SORT_THREADS threads and tiles of up to SORT_TILE pairs.
// Pairs are ordered by key, then index: every pair is distinct (the index
// is the element's position), so the network's result is the stable order.
// Pad pairs are (0xffffffff, 0xffffffff): they sort after every element.

const SORT_TILE: u32 = 2048u;
const SORT_THREADS: u32 = 256u;
const PAD: u32 = 0xffffffffu;

var<workgroup> tile_key: array<u32, 2048>;
var<workgroup> tile_idx: array<u32, 2048>;

fn pair_less(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka < kb || (ka == kb && ia < ib);
}

// One step of the network on the first `len` pairs: pairs i and i + j
// (i without bit j) are put in ascending order where the pair's position in
// its row, (base + i) & row_mask, has bit k clear, else descending. A tile
// may hold several rows of row_mask + 1 pairs (a power of two): masking the
// position makes each row's last stage ascending, so each row ends sorted.
fn tile_step(len: u32, base: u32, row_mask: u32, k: u32, j: u32, lid: u32) {
    for (var t = lid; t < len / 2u; t += SORT_THREADS) {
        let i = 2u * t - (t & (j - 1u));
        let l = i + j;
        let ka = tile_key[i];
        let ia = tile_idx[i];
        let kb = tile_key[l];
        let ib = tile_idx[l];
        let ascending = ((base + i) & row_mask & k) == 0u;
        if pair_less(kb, ib, ka, ia) == ascending {
            tile_key[i] = kb;
            tile_idx[i] = ib;
            tile_key[l] = ka;
            tile_idx[l] = ia;
        }
    }
    workgroupBarrier();
}

// Stages k_lo, 2 k_lo, ..., k_hi of the network; the first stage starts at
// step j_first (the steps above it ran elsewhere), later ones at k / 2.
fn tile_sort(len: u32, base: u32, row_mask: u32, k_lo: u32, k_hi: u32, j_first: u32, lid: u32) {
    var k = k_lo;
    var j0 = j_first;
    loop {
        if k > k_hi {
            break;
        }
        for (var j = j0; j > 0u; j = j >> 1u) {
            tile_step(len, base, row_mask, k, j, lid);
        }
        k = k << 1u;
        j0 = k >> 1u;
    }
}
