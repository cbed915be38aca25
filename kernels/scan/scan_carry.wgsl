// Adds to each element of a multi-block row the inclusive scan of the
// totals of the blocks before its own (the carries, scanned by
// scan/scan.wgsl over the [rows, blocks] totals).
// Bindings: 0 out (read_write), 1 carries (read); raw u32 bits.
// Immediates: ScanParams (offset unused: out is dense). Override: KIND.

//! include common/scan_params.wgsl

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<storage, read> carries: array<u32>;

@compute @workgroup_size(256)
fn scan_carry(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * SCAN_THREADS + lid;
    if g >= p.rows * p.n {
        return;
    }
    let r = g / p.n;
    let q = g % p.n;
    let b = q / SCAN_BLOCK;
    if b > 0u {
        let at = scan_at(r, q);
        out[at] = combine(carries[r * p.blocks + b - 1u], out[at]);
    }
}
