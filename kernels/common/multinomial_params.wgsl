// Immediates of the multinomial kernels (random/multinomial*.wgsl).
struct MultinomialParams {
    rows: u32,
    cats: u32,
    num_samples: u32,
    replacement: u32,
    key0: u32,
    key1: u32,
    // Element offset of the dense weights (or CDF).
    offset: u32,
}

var<immediate> p: MultinomialParams;
