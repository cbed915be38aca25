// Sorts rows longer than SORT_TILE: the bitonic network over (key, index)
// pairs in a scratch buffer of rows * padded pairs. sort_init writes the
// pairs; sort_tiles runs every stage up to SORT_TILE within each tile
// (k = 0), or the steps j < SORT_TILE of a later stage k, in workgroup
// memory; sort_step runs one step j >= SORT_TILE of stage k across the
// whole row; sort_write gathers the values and writes the indices.
// Bindings (every entry): 0 src (read), 1 pairs (read_write, vec2 key/index),
// 2 values, 3 indices (read_write; raw u32 bits). Immediates: SortParams.
// Override: KIND.

//! include common/sort_key.wgsl
//! include common/bitonic.wgsl
//! include common/sort_params.wgsl

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> pairs: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> values: array<u32>;
@group(0) @binding(3) var<storage, read_write> indices: array<u32>;

fn thread_id(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * SORT_THREADS + lid;
}

@compute @workgroup_size(256)
fn sort_init(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = thread_id(wid, nwg, lid);
    if g >= p.rows * p.padded {
        return;
    }
    let r = g / p.padded;
    let t = g % p.padded;
    if t < p.n {
        pairs[g] = vec2<u32>(sort_key(src[p.offset + row_at(r, t)], p.descending != 0u), t);
    } else {
        pairs[g] = vec2<u32>(PAD, PAD);
    }
}

@compute @workgroup_size(256)
fn sort_tiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if tile >= p.rows * (p.padded / SORT_TILE) {
        return;
    }
    let start = tile * SORT_TILE;
    // Position of the tile within its row (rows are whole tiles).
    let base = start % p.padded;
    for (var t = lid; t < SORT_TILE; t += SORT_THREADS) {
        let pair = pairs[start + t];
        tile_key[t] = pair.x;
        tile_idx[t] = pair.y;
    }
    workgroupBarrier();
    if p.k == 0u {
        tile_sort(SORT_TILE, base, p.padded - 1u, 2u, SORT_TILE, 1u, lid);
    } else {
        tile_sort(SORT_TILE, base, p.padded - 1u, p.k, p.k, SORT_TILE / 2u, lid);
    }
    for (var t = lid; t < SORT_TILE; t += SORT_THREADS) {
        pairs[start + t] = vec2<u32>(tile_key[t], tile_idx[t]);
    }
}

@compute @workgroup_size(256)
fn sort_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = thread_id(wid, nwg, lid);
    let half = p.padded / 2u;
    if g >= p.rows * half {
        return;
    }
    let row_start = (g / half) * p.padded;
    let t = g % half;
    let i = 2u * t - (t & (p.j - 1u));
    let a = pairs[row_start + i];
    let b = pairs[row_start + i + p.j];
    let ascending = (i & p.k) == 0u;
    if pair_less(b.x, b.y, a.x, a.y) == ascending {
        pairs[row_start + i] = b;
        pairs[row_start + i + p.j] = a;
    }
}

@compute @workgroup_size(256)
fn sort_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = thread_id(wid, nwg, lid);
    if g >= p.rows * p.n {
        return;
    }
    let r = g / p.n;
    let t = g % p.n;
    let i = pairs[r * p.padded + t].y;
    values[row_at(r, t)] = src[p.offset + row_at(r, i)];
    indices[row_at(r, t)] = i;
}
