// Immediates of the sort kernels (sort/sort_rows.wgsl, sort/sort_global.wgsl).
// A tensor is sorted as `rows` rows of `n` elements; element j of row r
// sits at offset + (r / inner) * n * inner + r % inner + j * inner of the
// source and at the same place without offset in the outputs.
struct SortParams {
    rows: u32,
    n: u32,
    inner: u32,
    offset: u32,
    // Row length rounded up to a power of two.
    padded: u32,
    // 1: descending keys.
    descending: u32,
    // Network stage (sort_tiles: 0 = sort each tile whole) and step.
    k: u32,
    j: u32,
}

var<immediate> p: SortParams;

fn row_at(r: u32, j: u32) -> u32 {
    return (r / p.inner) * p.n * p.inner + r % p.inner + j * p.inner;
}
