// ReLU on four lanes, as elementwise/unary.wgsl's UNARY_RELU computes it:
// NaN passes through, everything else not above 0 becomes +0.0. The
// epilogue of products that run a `Linear` or `Conv2d` and the `ReLU`
// after it in one pass (the ACT_RELU override of the matmul, sum_splits and
// conv2d kernels), so their outputs are bit-identical to the two ops'.
// NaN is tested on the bits (WGSL may assume no NaN in comparisons).

fn relu4(v: vec4<f32>) -> vec4<f32> {
    let bits = bitcast<vec4<u32>>(v);
    let nan = ((bits & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u))
        & ((bits & vec4<u32>(0x007fffffu)) != vec4<u32>(0u));
    return select(select(vec4<f32>(0.0), v, v > vec4<f32>(0.0)), v, nan);
}
