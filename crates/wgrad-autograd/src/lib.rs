//! wgrad's autograd layer: [`Tensor`], one handle over CPU or GPU storage
//! that records the ops applied to it and runs them backwards.
//!
//! ```no_run
//! use wgrad_autograd::{Device, Tensor};
//! let device = Device::best()?;
//! let w = Tensor::randn(&[3, 2], &device)?.with_requires_grad(true)?;
//! let x = Tensor::ones(&[4, 3], &device)?;
//! let loss = x.matmul(&w)?.relu()?.mean_all()?;
//! loss.backward()?;
//! println!("{:?}", w.grad().map(|g| g.to_vec_f32()));
//! # Ok::<(), wgrad_core::Error>(())
//! ```

#![deny(missing_docs)]

mod backward;
mod device;
mod display;
mod grad;
mod grad_mode;
pub mod gradcheck;
mod graph;
mod ops;
pub mod optim;
mod storage;
mod tensor;

pub use backward::BackwardOptions;
pub use device::Device;
pub use grad::{GradOptions, grad};
pub use grad_mode::{NoGradGuard, is_grad_enabled, no_grad};
pub use ops::conv::ConvPadding;
pub use ops::resample::{InterpolateMode, PadMode};
pub use storage::Storage;
pub use tensor::{Tensor, manual_seed, next_seed};
pub use wgrad_core::checks::attention::AttentionArgs;
pub use wgrad_core::checks::conv::{Conv2dArgs, ConvTranspose2dArgs};
pub use wgrad_core::checks::pool::Pool2dArgs;
pub use wgrad_core::{BinaryOp, CompareOp, DType, Dims, Error, Result, UnaryOp};
