// Row sums, or with PRODUCT = 1 row products, of a contiguous [rows, inner]
// integer matrix (I32 `sum` and `prod`; written against `elem`), wrapping on
// overflow like the CPU. One workgroup per row (grid folded by the host);
// each thread strides over the row, then a tree in workgroup memory.
// Wrapping addition and multiplication are associative and commutative, so
// the order does not change the result. Bindings: 0 src (read), 1 out
// (read_write). Immediates: rows, inner, offset, pad.

struct SumParams {
    rows: u32,
    inner: u32,
    offset: u32,
    pad: u32,
}

var<immediate> p: SumParams;

// 1: multiply (`prod`, starting from 1); 0: add (`sum`, from 0).
override PRODUCT: u32 = 0u;

fn combine(a: elem, b: elem) -> elem {
    if PRODUCT == 1u {
        return a * b;
    }
    return a + b;
}

@group(0) @binding(0) var<storage, read> src: array<elem>;
@group(0) @binding(1) var<storage, read_write> out: array<elem>;

var<workgroup> partial: array<elem, 256>;

@compute @workgroup_size(256)
fn sum_rows_int(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    // Uniform per workgroup: every thread of a row past the end leaves together.
    if row >= p.rows {
        return;
    }
    var s = select(elem(0), elem(1), PRODUCT == 1u);
    let base = p.offset + row * p.inner;
    for (var j = lid; j < p.inner; j += 256u) {
        s = combine(s, src[base + j]);
    }
    partial[lid] = s;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if lid < half {
            partial[lid] = combine(partial[lid], partial[lid + half]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        out[row] = partial[0];
    }
}
