// Second pass of a split-K matmul: out[i] = sum over s of part[s * numel + i],
// the splits added in order (deterministic); with HAS_BIAS = 1 (`linear`)
// plus the bias of i's column, once, after the sum (as a separate add).
//
// Bindings: 0 part (read, [splits, numel]), 1 out (read_write, [numel]),
// 2 bias (read; bound to any buffer and never read without HAS_BIAS or
// OUT_RELU_MASK).
// Immediates: SumParams. 1-D folded grid of 256-thread workgroups.

struct SumParams {
    numel: u32,
    splits: u32,
    n: u32,           // output columns: element i is in column i % n
    bias_offset: u32, // bias element of column 0
    bias_stride: u32, // bias element step per column (0: one value)
}

var<immediate> p: SumParams;

override HAS_BIAS: u32 = 0u;
// ACT_RELU = 1: ReLU after the bias (a `Linear` and its `ReLU` in one pass).
override ACT_RELU: u32 = 0u;
// OUT_RELU_MASK = 1 (never with HAS_BIAS): out[i] zeroed where binding 2
// holds +0.0 at bias_offset + i (common/matmul_params.wgsl's epilogue of
// the same name).
override OUT_RELU_MASK: u32 = 0u;

//! include common/relu4.wgsl

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;

@compute @workgroup_size(256)
fn sum_splits(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    // The splits are added in order, but their loads are issued eight at a
    // time: one load per add in a loop waits out a memory latency per
    // split (a conv1 weight gradient's 256 splits took 20 us on the H200).
    // Same adds, same order: bit-identical to a one-at-a-time loop.
    var s = part[i];
    var j = 1u;
    for (; j + 8u <= p.splits; j += 8u) {
        let at = j * p.numel + i;
        let v0 = part[at];
        let v1 = part[at + p.numel];
        let v2 = part[at + 2u * p.numel];
        let v3 = part[at + 3u * p.numel];
        let v4 = part[at + 4u * p.numel];
        let v5 = part[at + 5u * p.numel];
        let v6 = part[at + 6u * p.numel];
        let v7 = part[at + 7u * p.numel];
        s += v0;
        s += v1;
        s += v2;
        s += v3;
        s += v4;
        s += v5;
        s += v6;
        s += v7;
    }
    for (; j < p.splits; j++) {
        s += part[j * p.numel + i];
    }
    if HAS_BIAS == 1u {
        s += bias[p.bias_offset + (i % p.n) * p.bias_stride];
    }
    if ACT_RELU == 1u {
        s = relu4(vec4<f32>(s)).x;
    }
    if OUT_RELU_MASK == 1u && bitcast<u32>(bias[p.bias_offset + i]) == 0u {
        s = 0.0;
    }
    out[i] = s;
}

// The same sum for few outputs over many splits (a convolution's weight
// gradient: 320 values over 256 splits), where one thread per output
// waits out `splits` dependent adds: one workgroup per output, its 256
// threads each add every 256th split in order, then a tree in workgroup
// memory adds the 256 partial sums (a fixed order: deterministic, though
// not the bits of the in-order sum). Dispatch `numel` workgroups.
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn sum_splits_tree(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Uniform per workgroup: before any barrier.
    if i >= p.numel {
        return;
    }
    var s = 0.0;
    for (var j = lid; j < p.splits; j += 256u) {
        s += part[j * p.numel + i];
    }
    partial[lid] = s;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half /= 2u) {
        if lid < half {
            partial[lid] += partial[lid + half];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        var total = partial[0];
        if HAS_BIAS == 1u {
            total += bias[p.bias_offset + (i % p.n) * p.bias_stride];
        }
        if ACT_RELU == 1u {
            total = relu4(vec4<f32>(total)).x;
        }
        if OUT_RELU_MASK == 1u && bitcast<u32>(bias[p.bias_offset + i]) == 0u {
            total = 0.0;
        }
        out[i] = total;
    }
}
