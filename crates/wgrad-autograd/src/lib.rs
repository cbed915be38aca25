//! wgrad's autograd layer: [`Tensor`], one handle over CPU or GPU storage
//! that records the ops applied to it and runs them backwards.
//!
//! ```
//! use wgrad_autograd::{Device, Tensor};
//! // Device::best() would pick a hardware GPU when there is one.
//! let device = Device::Cpu;
//! let w = Tensor::randn(&[3, 2], &device)?.with_requires_grad(true)?;
//! let x = Tensor::ones(&[4, 3], &device)?;
//! let loss = x.matmul(&w)?.relu()?.mean_all()?;
//! loss.backward()?;
//! assert_eq!(w.grad().expect("w requires grad").shape(), [3, 2]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```
//!
//! The methods of [`Tensor`] come in groups, each with an example on its
//! `impl` block or key method: creation ([`Tensor::from_vec`]), reading
//! back and printing ([`Tensor::to_vec`]), elementwise math, reductions,
//! shapes and views, indexing, structure and index writes, matrix
//! products, math ops, convolution, pooling, padding, attention and the
//! fused cross-entropy, sorting and sampling, in-place ops, autograd
//! ([`Tensor::backward`], [`grad()`], [`gradcheck()`](gradcheck::gradcheck),
//! [`no_grad`]), and devices and dtypes ([`Device`]). Optimizers,
//! schedulers and the mixed-precision loss scaler are in [`optim`].

#![deny(missing_docs)]

pub mod autocast;
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

pub use autocast::{AutocastGuard, autocast, autocast_dtype, is_autocast_enabled};
pub use backward::BackwardOptions;
pub use device::Device;
pub use grad::{GradOptions, grad};
pub use grad_mode::{
    NoGradGuard, enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
};
pub use ops::conv::ConvPadding;
pub use ops::resample::{InterpolateMode, PadMode};
pub use storage::Storage;
pub use tensor::{HookHandle, Tensor, manual_seed, next_seed};
pub use wgrad_core::checks::attention::AttentionArgs;
pub use wgrad_core::checks::conv::{Conv2dArgs, ConvTranspose2dArgs};
pub use wgrad_core::checks::pool::Pool2dArgs;
pub use wgrad_core::{BinaryOp, CompareOp, DType, Dims, Error, Result, UnaryOp};
