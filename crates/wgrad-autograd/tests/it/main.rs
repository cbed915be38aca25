//! The integration tests of wgrad-autograd, one binary: gradients of every
//! op against finite differences and across devices (`grad_ops`),
//! optimizers and schedulers (`optim`), the mixed-precision loss scaler
//! (`grad_scaler`), device selection (`device_select`).

mod adam_foreach;
mod device_select;
mod grad_ops;
mod grad_scaler;
mod optim;
