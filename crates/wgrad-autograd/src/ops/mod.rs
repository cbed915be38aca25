//! Differentiable ops on `Tensor`: compute on the storage, record the node.

pub(crate) mod conv;
mod elementwise;
mod indexing;
mod linalg;
mod loss;
mod operators;
mod pool;
mod reduce;
pub(crate) mod resample;
mod sort;
mod views;
