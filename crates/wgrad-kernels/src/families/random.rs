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

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[&RAND_UNIFORM, &RAND_NORMAL];
