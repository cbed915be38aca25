// Fills a contiguous range of 32-bit words with one bit pattern.
// Bindings: 0 dst (read_write). Immediates: FillParams.

struct FillParams {
    numel: u32,
    offset: u32,
    bits: u32,
    _pad: u32,
}

var<immediate> p: FillParams;

@group(0) @binding(0) var<storage, read_write> dst: array<u32>;

// Eight elements per thread (`tile + lid + k * 256`), as in unary.wgsl: more
// stores in flight per thread. The host dispatches ceil(numel / 8) threads.
@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 2048u + lid;
    for (var k = 0u; k < 8u; k++) {
        let j = i + k * 256u;
        if j < p.numel {
            dst[p.offset + j] = p.bits;
        }
    }
}
