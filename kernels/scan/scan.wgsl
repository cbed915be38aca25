// Inclusive prefix sums (or products) of blocks of SCAN_BLOCK elements, one workgroup per
// (row, block): each thread sums its 4 consecutive elements, the workgroup
// scans the 256 thread totals (Hillis-Steele in workgroup memory), and each
// thread writes its elements plus the totals before it. The block's total
// goes to totals[row * blocks + block]; rows of several blocks then take
// the scanned totals as carries (scan/scan_carry.wgsl).
// Bindings: 0 src (read), 1 out (read_write), 2 totals (read_write); raw
// u32 bits. Immediates: ScanParams. Override: KIND.

//! include common/scan_params.wgsl

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;

var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if g >= p.rows * p.blocks {
        return;
    }
    let r = g / p.blocks;
    let b = g % p.blocks;
    let q0 = b * SCAN_BLOCK + lid * SCAN_PER_THREAD;
    var own: array<u32, 4>;
    var acc = identity();
    for (var e = 0u; e < SCAN_PER_THREAD; e++) {
        let q = q0 + e;
        if q < p.n {
            acc = combine(acc, src[p.offset + scan_at(r, q)]);
        }
        own[e] = acc;
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var d = 1u; d < SCAN_THREADS; d = d << 1u) {
        var v = partial[lid];
        if lid >= d {
            v = combine(partial[lid - d], v);
        }
        workgroupBarrier();
        partial[lid] = v;
        workgroupBarrier();
    }
    var before = identity();
    if lid > 0u {
        before = partial[lid - 1u];
    }
    for (var e = 0u; e < SCAN_PER_THREAD; e++) {
        let q = q0 + e;
        if q < p.n {
            out[scan_at(r, q)] = combine(before, own[e]);
        }
    }
    if lid == SCAN_THREADS - 1u {
        totals[g] = partial[lid];
    }
}
