// Sorts rows of up to SORT_TILE elements, one workgroup per row, entirely
// in workgroup memory: load the keys, run the whole bitonic network, write
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
    let r = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if r >= p.rows {
        return;
    }
    let descending = p.descending != 0u;
    for (var t = lid; t < p.padded; t += SORT_THREADS) {
        if t < p.n {
            tile_key[t] = sort_key(src[p.offset + row_at(r, t)], descending);
            tile_idx[t] = t;
        } else {
            tile_key[t] = PAD;
            tile_idx[t] = PAD;
        }
    }
    workgroupBarrier();
    tile_sort(p.padded, 0u, 2u, p.padded, 1u, lid);
    for (var t = lid; t < p.n; t += SORT_THREADS) {
        let i = tile_idx[t];
        values[row_at(r, t)] = src[p.offset + row_at(r, i)];
        indices[row_at(r, t)] = i;
    }
}
