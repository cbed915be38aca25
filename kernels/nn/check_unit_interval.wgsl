// binary_cross_entropy's input check, as PyTorch's "all elements of input
// should be between 0 and 1": one thread per element of a dense view; an
// element outside [0, 1] (NaN included) raises fault code 11 with its
// index, reported by the next readback (like CUDA's device assert). The
// test is on the bits (WGSL may assume no NaN in comparisons): the
// non-negative floats up to 1.0 are the bit patterns 0 ..= 0x3f800000, and
// -0.0 is 0x80000000.
// Bindings: 0 x (read), 1 fault. Immediates: CheckParams.

//! include common/fault.wgsl

struct CheckParams {
    numel: u32,
    offset: u32,
}

const FAULT_UNIT_INTERVAL: u32 = 11u;

var<immediate> p: CheckParams;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> fault: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn check_unit_interval(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    let bits = bitcast<u32>(x[p.offset + i]);
    if bits > 0x3f800000u && bits != 0x80000000u {
        raise_fault(FAULT_UNIT_INTERVAL, i, 0u);
    }
}
