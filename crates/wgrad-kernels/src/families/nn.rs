//! `kernels/nn/` kernel specs.

use crate::spec::KernelSpec;

pub static ALL: &[&KernelSpec] = &[];
