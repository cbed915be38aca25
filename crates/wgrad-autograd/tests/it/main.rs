//! The integration tests of wgrad-autograd, one binary: gradients of every
//! op against finite differences and across devices (`grad_ops`),
//! optimizers and schedulers (`optim`), device selection (`device_select`).

mod device_select;
mod grad_ops;
mod optim;
