//! Differentiable ops on `Tensor`: compute on the storage, record the node.

mod elementwise;
mod indexing;
mod linalg;
mod loss;
mod operators;
mod reduce;
mod views;
