//! `kernels/backward/` kernel specs.

use crate::spec::KernelSpec;

pub static ALL: &[&KernelSpec] = &[];
