//! GPU ops, one family per file. Each records dispatches; none reads back.

mod arange;
pub(crate) mod attention;
mod backward;
mod binary;
mod cast;
mod compare;
mod concat;
mod conv;
mod conv_phase;
mod conv_weight_grad;
mod indexing;
mod int_ops;
mod layer_norm;
mod matmul;
mod nn;
mod optim;
pub(crate) mod optim_foreach;
mod pool;
pub(crate) mod probe;
mod random;
mod reduce;
mod sample;
mod scalar;
mod select;
mod softmax;
mod sort;
mod unary;
