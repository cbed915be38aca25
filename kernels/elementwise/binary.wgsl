// Broadcasting binary arithmetic on f32 over strided views.
// Bindings: 0 a (read), 1 b (read), 2 out (read_write, contiguous).
// Immediates: BinaryParams. Override OP selects the operation
// (codes of wgrad_core::BinaryOp: 0 add, 1 sub, 2 mul, 3 div, 4 pow, 5 maximum, 6 minimum).

struct BinaryParams {
    numel: u32,
    rank: u32,
    a_offset: u32,
    b_offset: u32,
    shape: array<u32, 6>,
    a_strides: array<u32, 6>,
    b_strides: array<u32, 6>,
}

var<immediate> p: BinaryParams;
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn is_nan(x: f32) -> bool {
    // WGSL may assume no NaNs in comparisons; test the bit pattern instead.
    let bits = bitcast<u32>(x);
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u;
}

fn apply(x: f32, y: f32) -> f32 {
    switch OP {
        case 0u: { return x + y; }
        case 1u: { return x - y; }
        case 2u: { return x * y; }
        case 3u: { return x / y; }
        case 4u: {
            // pow with powf semantics: x^0 = 1, negative base needs an integer exponent.
            if y == 0.0 { return 1.0; }
            if x < 0.0 {
                if y != trunc(y) { return bitcast<f32>(0x7fc00000u); }
                let m = pow(-x, y);
                if (i32(y) & 1) == 1 { return -m; }
                return m;
            }
            return pow(x, y);
        }
        case 5u: { if is_nan(x) || is_nan(y) { return bitcast<f32>(0x7fc00000u); } return max(x, y); }
        default: { if is_nan(x) || is_nan(y) { return bitcast<f32>(0x7fc00000u); } return min(x, y); }
    }
}

@compute @workgroup_size(256)
fn binary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
    if i >= p.numel {
        return;
    }
    var rem = i;
    var ia = p.a_offset;
    var ib = p.b_offset;
    for (var d = i32(p.rank) - 1; d >= 0; d--) {
        let dim = p.shape[d];
        let k = rem % dim;
        rem /= dim;
        ia += k * p.a_strides[d];
        ib += k * p.b_strides[d];
    }
    out[i] = apply(a[ia], b[ib]);
}
