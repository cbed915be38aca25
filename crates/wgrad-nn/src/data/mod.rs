//! Data loading and datasets, like `torch.utils.data` and `torchvision.datasets`.
//!
//! Data stays on the host as plain `Vec<f32>` / `Vec<i32>` in a [`Dataset`];
//! a [`DataLoader`] assembles each mini-batch on the host and uploads it as
//! one features tensor `[B, ..sample_shape]` (f32) and one labels tensor
//! `[B]` (i32). [`mnist`] reads the IDX files of MNIST-style datasets;
//! [`synthetic`] generates seeded datasets that need no download.
//!
//! ```
//! use wgrad_autograd::Device;
//! use wgrad_nn::data::{DataLoader, Dataset, synthetic};
//! // Four 2-feature samples with their classes.
//! let data = Dataset::new(vec![0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[2], vec![0, 1, 1, 0])?;
//! assert_eq!((data.len(), data.num_classes()), (4, 2));
//! let (train, test) = data.split_at(3)?;
//! assert_eq!((train.len(), test.len()), (3, 1));
//! let moons = synthetic::moons(100, 0.1, 0); // seeded: the same points everywhere
//! assert_eq!(moons.features_shape(), &[2]);
//! let (x, y) = DataLoader::new(&moons, 32)?.iter(&Device::Cpu).next().expect("a batch")?;
//! assert_eq!(x.shape(), [32, 2]);
//! assert_eq!(y.shape(), [32]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

mod dataset;
mod loader;
pub mod mnist;
mod preview;
mod shuffle;
pub mod synthetic;
mod tensor_dataset;

pub use dataset::Dataset;
pub use loader::{Batches, DataLoader};
pub use preview::ascii_preview;
pub use shuffle::permutation;
pub use tensor_dataset::{TensorDataset, TensorLoader};
