//! Data loading and datasets, like `torch.utils.data` and `torchvision.datasets`.
//!
//! Data stays on the host as plain `Vec<f32>` / `Vec<i32>` in a [`Dataset`];
//! a [`DataLoader`] assembles each mini-batch on the host and uploads it as
//! one features tensor `[B, ..sample_shape]` (f32) and one labels tensor
//! `[B]` (i32). [`mnist`] reads the IDX files of MNIST-style datasets;
//! [`synthetic`] generates seeded datasets that need no download.

mod dataset;
mod loader;
pub mod mnist;
mod preview;
mod shuffle;
pub mod synthetic;

pub use dataset::Dataset;
pub use loader::{Batches, DataLoader};
pub use preview::ascii_preview;
pub use shuffle::permutation;
