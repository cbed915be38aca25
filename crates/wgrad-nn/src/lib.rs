//! Neural-network building blocks on top of `wgrad-autograd` (in progress).

pub mod data;
