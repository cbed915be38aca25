//! Optimizers (in progress).
