// The input gradient of cumprod, exact when the row holds zeros (no
// division): grad[k] = E[k] * S[k] with E[k] = x[0] * ... * x[k-1] and
// S[k] = g[k] + x[k+1] * S[k+1] (S past the end is 0), the sum over j >= k
// of g[j] * x[k+1] * ... * x[j]. One thread walks one row twice (S from
// the end, then E from the start), so rows run in parallel and each row's
// cost is linear in its length.
// Bindings: 0 x (read, f32), 1 g (read, f32), 2 grad (read_write, f32);
// all dense with the rows of ScanParams (offset unused). Immediates:
// ScanParams.

//! include common/scan_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> grad: array<f32>;

@compute @workgroup_size(256)
fn cumprod_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * SCAN_THREADS + lid;
    if r >= p.rows || p.n == 0u {
        return;
    }
    var s = 0.0;
    for (var q = p.n; q > 0u; q--) {
        let k = q - 1u;
        var next = 0.0;
        if k + 1u < p.n {
            next = x[scan_at(r, k + 1u)] * s;
        }
        s = g[scan_at(r, k)] + next;
        grad[scan_at(r, k)] = s;
    }
    var e = 1.0;
    for (var k = 0u; k < p.n; k++) {
        let at = scan_at(r, k);
        grad[at] = e * grad[at];
        e = e * x[at];
    }
}
