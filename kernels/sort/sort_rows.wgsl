// Sorts rows of up to SORT_TILE elements in workgroup memory, one row per
// workgroup or, for rows padded to P < SORT_TILE, SORT_TILE / P rows: load the keys, run the whole bitonic network, write
// the values (the source bits the indices pick) and the I32 indices.
// Bindings: 0 src (read), 1 values (read_write), 2 indices (read_write),
// all as raw u32 bits. Immediates: SortParams. Override: KIND.

//! include common/sort_key.wgsl
//! include common/bitonic.wgsl
//! include common/sort_params.wgsl

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> values: array<u32>;
@group(0) @binding(2) var<storage, read_write> indices: array<u32>;

@compute @workgroup_size(256)
fn sort_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Short rows share a workgroup: SORT_TILE / padded of them side by side.
    let per_group = SORT_TILE / p.padded;
    let first = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * per_group;
    if first >= p.rows {
        return;
    }
    let len = per_group * p.padded;
    let descending = p.descending != 0u;
    for (var t = lid; t < len; t += SORT_THREADS) {
        let r = first + t / p.padded;
        let j = t % p.padded;
        if r < p.rows && j < p.n {
            tile_key[t] = sort_key(src[p.offset + row_at(r, j)], descending);
            tile_idx[t] = j;
        } else {
            tile_key[t] = PAD;
            tile_idx[t] = PAD;
        }
    }
    workgroupBarrier();
    tile_sort(len, 0u, p.padded - 1u, 2u, p.padded, 1u, lid);
    for (var t = lid; t < len; t += SORT_THREADS) {
        let r = first + t / p.padded;
        let j = t % p.padded;
        if r < p.rows && j < p.n {
            let i = tile_idx[t];
            values[row_at(r, j)] = src[p.offset + row_at(r, i)];
            indices[row_at(r, j)] = i;
        }
    }
}
