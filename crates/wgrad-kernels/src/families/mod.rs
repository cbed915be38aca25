//! Kernel specs, one module per family (mirroring `kernels/<family>/`).

pub mod attention;
pub mod backward;
pub mod conv;
pub mod elementwise;
pub mod matmul;
pub mod movement;
pub mod nn;
pub mod optim;
pub mod pool;
pub mod probe;
pub mod random;
pub mod reduce;
pub mod sort;

use crate::spec::KernelSpec;

/// Every kernel spec of every family (the validation test checks them all).
pub fn all() -> Vec<&'static KernelSpec> {
    [
        elementwise::ALL,
        movement::ALL,
        reduce::ALL,
        matmul::ALL,
        random::ALL,
        backward::ALL,
        optim::ALL,
        nn::ALL,
        pool::ALL,
        conv::ALL,
        attention::ALL,
        sort::ALL,
        probe::ALL,
    ]
    .concat()
}
