// Immediates and addressing of the scan kernels (scan/scan.wgsl,
// scan/scan_carry.wgsl). A tensor is scanned as `rows` rows of `n`
// elements; element q of row r sits at offset + (r / inner) * n * inner +
// r % inner + q * inner (the output: the same without offset). With
// `reverse` the row is scanned from its end (q counts from the last
// element), which is the backward pass of cumsum.
// Override KIND (wgrad_core::checks::sort::ScanKind::code): 0 f32 sums,
// 1 i32 sums, 2 f32 products, 3 i32 products (i32 wrapping); elements are
// raw u32.

override KIND: u32 = 0u;

const SCAN_THREADS: u32 = 256u;
const SCAN_PER_THREAD: u32 = 4u;
const SCAN_BLOCK: u32 = 1024u;

struct ScanParams {
    rows: u32,
    n: u32,
    inner: u32,
    offset: u32,
    // Blocks of SCAN_BLOCK elements per row.
    blocks: u32,
    reverse: u32,
}

var<immediate> p: ScanParams;

fn scan_at(r: u32, q: u32) -> u32 {
    var j = q;
    if p.reverse != 0u {
        j = p.n - 1u - q;
    }
    return (r / p.inner) * p.n * p.inner + r % p.inner + j * p.inner;
}

fn combine(a: u32, b: u32) -> u32 {
    switch KIND {
        case 0u: {
            return bitcast<u32>(bitcast<f32>(a) + bitcast<f32>(b));
        }
        case 2u: {
            return bitcast<u32>(bitcast<f32>(a) * bitcast<f32>(b));
        }
        case 3u: {
            return bitcast<u32>(bitcast<i32>(a) * bitcast<i32>(b));
        }
        default: {
            return a + b;
        }
    }
}

// The identity of `combine`: 0 for sums, 1 for products.
fn identity() -> u32 {
    switch KIND {
        case 2u: {
            return 0x3f800000u;
        }
        case 3u: {
            return 1u;
        }
        default: {
            return 0u;
        }
    }
}
