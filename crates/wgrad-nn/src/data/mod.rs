//! Data loading and datasets (in progress).
