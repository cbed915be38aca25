//! The integration tests of wgrad-nn that reseed the process-wide generator
//! (`manual_seed`) and rely on the order of its draws: reproducibility, CPU
//! vs GPU parity of seeded models, state_dict and checkpoint round trips.
//! Every test here that draws from the generator holds
//! `wgrad_test_support::seed_lock()` while it does, so the tests still run in
//! parallel threads without interleaving draws. They are a binary of their
//! own because the tests in `tests/it` draw without that lock.

mod checkpoint;
mod checkpoint_more;
mod gpu_parity;
mod seeding;
mod state_dict;
mod train_parity;
