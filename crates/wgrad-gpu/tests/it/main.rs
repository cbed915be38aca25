//! The integration tests of wgrad-gpu, one binary: every GPU op against the
//! CPU reference (`parity_*`), creation and the recording model (`basics`),
//! device faults (`faults`), the 16-bit float dtypes (`half_storage`,
//! `half_casts`). Tests that count `DeviceStats` open their own device
//! (`own_gpu`); the others share one.

mod adam_foreach;
mod basics;
mod bench_dispatch;
mod bench_fma_peak;
mod bits;
mod conv;
mod faults;
mod half_binary;
mod half_casts;
mod half_storage;
mod int_ops;
mod parity_backward;
mod parity_elementwise;
mod parity_linear;
mod parity_matmul;
mod parity_movement;
mod parity_nn;
mod parity_optim;
mod parity_reduce;
mod pool;
mod tensor_cores;
