// multinomial sampling over dense [rows, cats] rows.
// multinomial_draw (with replacement): sample s of row r takes the uniform
// draw of counter r * num_samples + s, scales it by the row total (the
// CDF's last element) and binary-searches the first category whose CDF
// exceeds it (falling back to the first that reaches the total, should
// rounding put the draw at the total). out: I32 [rows, num_samples].
// multinomial_keys (without replacement): the exponential-race key
// -ln(1 - u) / w of category j (counter r * cats + j), +inf for w = 0;
// the host takes the num_samples smallest (a stable argsort), which is
// sampling without replacement (Gumbel-top-k). out: f32 [rows, cats].
// Bindings: 0 input (read: CDF or weights, f32), 1 out (read_write, raw
// u32 bits). Immediates: MultinomialParams.

//! include common/multinomial_params.wgsl
//! include common/counter_rng.wgsl

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn thread_id(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * 256u + lid;
}

// First j in [0, cats) with cdf[j] > x (or >= x when `inclusive`); cats if none.
fn search(base: u32, x: f32, inclusive: bool) -> u32 {
    var lo = 0u;
    var hi = p.cats;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let c = input[base + mid];
        if c > x || (inclusive && c >= x) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

@compute @workgroup_size(256)
fn multinomial_draw(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = thread_id(wid, nwg, lid);
    if g >= p.rows * p.num_samples {
        return;
    }
    let r = g / p.num_samples;
    let base = p.offset + r * p.cats;
    let total = input[base + p.cats - 1u];
    let x = bits_to_unit(counter_bits(p.key0, p.key1, 0u, g)) * total;
    var j = search(base, x, false);
    if j >= p.cats {
        j = min(search(base, total, true), p.cats - 1u);
    }
    out[g] = j;
}

@compute @workgroup_size(256)
fn multinomial_keys(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = thread_id(wid, nwg, lid);
    if g >= p.rows * p.cats {
        return;
    }
    let w = input[p.offset + g];
    let u = bits_to_unit(counter_bits(p.key0, p.key1, 0u, g));
    // 1 - u is in (0, 1]: the log is finite and <= 0.
    let e = -ln(1.0 - u);
    var key = 0x7f800000u;
    if w > 0.0 {
        key = bitcast<u32>(e / w);
    }
    out[g] = key;
}
