//! `kernels/random/`: the counter-based generator of `wgrad_core::random`.

use crate::spec::{Access::*, Elem, KernelSpec};

/// Uniform `[low, high)` f32, bit-exact with `wgrad_core::random::uniform`.
/// Immediates: numel, key0, key1, low bits, high bits, zero (anti-FMA guard, always 0).
pub static RAND_UNIFORM: KernelSpec = KernelSpec {
    file: "random/random.wgsl",
    entry: "rand_uniform",
    bindings: &[ReadWrite],
    immediate_bytes: 24,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Normal f32 via Box–Muller, as `wgrad_core::random::normal` (within f32 ulps).
/// Immediates: numel, key0, key1, mean bits, std bits, zero (always 0).
pub static RAND_NORMAL: KernelSpec = KernelSpec {
    file: "random/random.wgsl",
    entry: "rand_normal",
    bindings: &[ReadWrite],
    immediate_bytes: 24,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// `randint` (I32; also `randperm`'s 32-bit sort keys, range 0), bit-exact
/// with `wgrad_core::random::uniform_int`.
/// Immediates: numel, key0, key1, low bits, range.
pub static RANDINT: KernelSpec = KernelSpec {
    file: "random/randint.wgsl",
    entry: "randint",
    bindings: &[ReadWrite],
    immediate_bytes: 20,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// `bernoulli` of dense f32 probabilities; fault code 8 for one outside [0, 1].
/// Immediates: numel, key0, key1, offset.
pub static BERNOULLI: KernelSpec = KernelSpec {
    file: "random/bernoulli.wgsl",
    entry: "bernoulli",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 16,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `multinomial`'s weight check, one workgroup per row; fault code 9.
/// Immediates: `MultinomialParams` (28 bytes).
pub static MULTINOMIAL_CHECK: KernelSpec = KernelSpec {
    file: "random/multinomial_check.wgsl",
    entry: "multinomial_check",
    bindings: &[Read],
    immediate_bytes: 28,
    uses_fault: true,
    elem: Elem::F32,
    selector: None,
};

/// `multinomial` with replacement: inverse-CDF draws over a row's cumsum.
pub static MULTINOMIAL_DRAW: KernelSpec = KernelSpec {
    file: "random/multinomial.wgsl",
    entry: "multinomial_draw",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 28,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// `multinomial` without replacement: exponential-race keys `-ln(1-u) / w`.
pub static MULTINOMIAL_KEYS: KernelSpec = KernelSpec {
    file: "random/multinomial.wgsl",
    entry: "multinomial_keys",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 28,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &RAND_UNIFORM,
    &RAND_NORMAL,
    &RANDINT,
    &BERNOULLI,
    &MULTINOMIAL_CHECK,
    &MULTINOMIAL_DRAW,
    &MULTINOMIAL_KEYS,
];
