//! The integration tests of wgrad-nn that do not depend on the order of the
//! process-wide generator's draws, one binary: modules, losses, init, data,
//! saving, and the GPU device layer under training loops. Tests that reseed
//! the generator and compare draws live in `tests/seeded`.

mod data_loader;
mod data_mnist;
mod data_synthetic;
mod derive;
mod gpu_device_hardening;
mod gpu_steady_state;
mod init;
mod losses;
mod losses_more;
mod modules;
mod norm;
mod save_atomic;
mod serialization;
