//! Differentiable ops on `Tensor`: compute on the storage, record the node.

pub(crate) mod attention;
pub(crate) mod conv;
mod einsum;
mod elementwise;
mod indexing;
pub(crate) mod inplace;
pub(crate) mod layer_norm;
mod linalg;
pub(crate) mod linear;
mod logical;
mod loss;
pub(crate) mod math;
pub(crate) mod math_grad;
mod operators;
mod pool;
mod reduce;
pub(crate) mod resample;
pub(crate) mod scatter;
mod sort;
pub(crate) mod structure;
mod views;
