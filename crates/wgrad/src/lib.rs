//! wgrad: a PyTorch-like deep-learning stack in Rust.
//!
//! Tensors live on the CPU (ndarray) or on any GPU wgpu can open (Vulkan,
//! Metal, DX12), with the same ops and the same numbers on both; reverse-mode
//! autograd, SGD/Adam/AdamW, and `nn` modules on top.
//!
//! ```no_run
//! use wgrad::prelude::*;
//! let device = Device::best()?;
//! let x = Tensor::randn(&[8, 4], &device)?;
//! let w = Tensor::randn(&[4, 2], &device)?.with_requires_grad(true)?;
//! let loss = x.matmul(&w)?.relu()?.mean_all()?;
//! loss.backward()?;
//! # Ok::<(), wgrad::Error>(())
//! ```
//!
//! Crates underneath, for users who want one layer only: `wgrad_core`
//! (dtypes, layouts, errors), `wgrad_device` (wgpu device, pool, recorder),
//! `wgrad_gpu::GpuTensor`, `wgrad_cpu::CpuTensor`, `wgrad_autograd`, `wgrad_nn`.

#![deny(missing_docs)]

/// `wgrad::gradcheck(f, &inputs, options)` as a function (the module of the
/// same name holds its options and report).
#[doc(inline)]
pub use wgrad_autograd::gradcheck::gradcheck;
// Inlined so that `cargo doc -p wgrad` shows every type's page here, not a
// `pub use` line pointing at another crate.
#[doc(inline)]
pub use wgrad_autograd::{
    AttentionArgs, BackwardOptions, Conv2dArgs, ConvPadding, ConvTranspose2dArgs, Device,
    InterpolateMode, NoGradGuard, PadMode, Pool2dArgs, Storage, Tensor, gradcheck, is_grad_enabled,
    manual_seed, no_grad, optim,
};
/// `torch.set_float32_matmul_precision` and friends: "medium" lets f32
/// products use f16 tensor cores on GPUs that have them.
#[doc(inline)]
pub use wgrad_core::precision::{
    MatmulPrecision, get_float32_matmul_precision, set_float32_matmul_precision,
};
#[doc(inline)]
pub use wgrad_core::{BinaryOp, CompareOp, DType, Dims, Error, Result, UnaryOp};
#[doc(inline)]
pub use wgrad_cpu::CpuTensor;
#[doc(inline)]
pub use wgrad_device::{DeviceStats, GpuDevice};
#[doc(inline)]
pub use wgrad_gpu::GpuTensor;
#[doc(inline)]
pub use wgrad_nn as nn;

/// Functional autograd, as `torch.autograd`: [`grad`](autograd::grad)
/// returns gradients instead of accumulating them into `.grad`.
pub mod autograd {
    pub use wgrad_autograd::{BackwardOptions, GradOptions, grad, gradcheck};
}

/// The names most programs need: `use wgrad::prelude::*;`. `Module` is both
/// the trait of `nn` layers and models and its derive
/// (`#[derive(Module)]`).
pub mod prelude {
    pub use crate::nn::Module;
    pub use crate::{DType, Device, Error, Result, Tensor, manual_seed, no_grad};
}
