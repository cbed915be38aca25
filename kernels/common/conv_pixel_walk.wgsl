// Output pixels s = (img, y, x) of a convolution walked in steps, for the
// weight-gradient kernels, whose K index is the pixel: a thread decodes its
// first pixel once (two divisions) and then advances it by the K step,
// where a fresh decode per load would cost two integer divisions per
// gathered pixel, more than the multiply-adds they feed (H100: those
// divisions held the 64 x 64 weight gradient to ~11 TFLOP/s).
// Needs common/conv_params.wgsl (p.out_h, p.out_w).

// (img, y, x) of pixel s.
fn pixel_decode(s: u32) -> vec3<u32> {
    let ohw = p.out_h * p.out_w;
    let yx = s % ohw;
    return vec3<u32>(s / ohw, yx / p.out_w, yx % p.out_w);
}

// (v mod n, v div n), dividing only when v reaches 2n.
fn wrap(v: u32, n: u32) -> vec2<u32> {
    if v < n {
        return vec2<u32>(v, 0u);
    }
    if v < 2u * n {
        return vec2<u32>(v - n, 1u);
    }
    return vec2<u32>(v % n, v / n);
}

// The pixel d places after v (v.y < out_h, v.z < out_w). Divides only
// where the step crosses more than one row or image at once.
fn pixel_advance(v: vec3<u32>, d: u32) -> vec3<u32> {
    let xx = wrap(v.z + d, p.out_w);
    let y = wrap(v.y + xx.y, p.out_h);
    return vec3<u32>(v.x + y.y, y.x, xx.x);
}
