//! wgrad: a PyTorch-like deep-learning stack in Rust.
//!
//! Tensors live on the CPU (ndarray) or on any GPU wgpu can open (Vulkan,
//! Metal, DX12), with the same ops and the same numbers on both; reverse-mode
//! autograd, SGD/Adam/AdamW, and `nn` modules on top.
//!
//! ```
//! use wgrad::nn::loss::{Reduction, mse_loss};
//! use wgrad::nn::{Linear, Module};
//! use wgrad::optim::{Optimizer, Sgd, SgdConfig};
//! use wgrad::prelude::*;
//! manual_seed(0);
//! // Device::best()? picks a hardware GPU when there is one; the examples
//! // here use the CPU so that they run everywhere.
//! let device = Device::Cpu;
//! let x = Tensor::randn(&[8, 4], &device)?;
//! let w = Tensor::randn(&[4, 2], &device)?.with_requires_grad(true)?;
//! let loss = x.matmul(&w)?.relu()?.mean_all()?;
//! loss.backward()?;
//! assert_eq!(w.grad().expect("w requires grad").shape(), [4, 2]);
//!
//! // The same with a layer, a loss and an optimizer.
//! let model = Linear::new(4, 1, true, &device)?;
//! let target = x.sum(&[1], true)?; // learn y = x0 + x1 + x2 + x3
//! let mut opt = Sgd::new(model.parameters(), SgdConfig::new(0.1))?;
//! for _ in 0..200 {
//!     opt.zero_grad();
//!     let loss = mse_loss(&model.forward(&x)?, &target, Reduction::Mean)?;
//!     loss.backward()?;
//!     opt.step()?;
//! }
//! let l = mse_loss(&model.forward(&x)?, &target, Reduction::Mean)?.item()?;
//! assert!(l < 1e-2, "loss {l}");
//! # Ok::<(), wgrad::Error>(())
//! ```
//!
//! Where things are: [`Tensor`] (its methods in groups, each with an
//! example: creation, math, reductions, views, indexing, matmul,
//! convolution, pooling, attention, sorting, in-place ops, autograd),
//! [`nn`] (`Module`, layers, [`nn::loss`], [`nn::init`], [`nn::data`],
//! [`nn::state_dict`], [`nn::checkpoint`]), [`optim`] (optimizers,
//! schedulers, clipping, the mixed-precision [`optim::GradScaler`]),
//! [`autograd`] and [`gradcheck()`]. `docs/PYTORCH.md`
//! in the repository maps common PyTorch idioms to these names.
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
/// The host types of [`DType::F16`] and [`DType::BF16`] (the `half` crate's):
/// `Tensor::from_vec(vec![f16::from_f32(1.5)], ..)`, `t.to_vec::<bf16>()`.
pub use half::{bf16, f16};
#[doc(inline)]
pub use wgrad_autograd::{
    AttentionArgs, BackwardOptions, Conv2dArgs, ConvPadding, ConvTranspose2dArgs, Device,
    InterpolateMode, NoGradGuard, PadMode, Pool2dArgs, Storage, Tensor, enable_grad, gradcheck,
    inference_mode, is_grad_enabled, manual_seed, no_grad, optim, set_grad_enabled,
};
/// Automatic mixed precision, as `torch.autocast` / `torch.amp`:
/// `wgrad::autocast(DType::BF16, || ..)` or an [`AutocastGuard`].
#[doc(inline)]
pub use wgrad_autograd::{AutocastGuard, autocast, autocast_dtype, is_autocast_enabled};
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

/// Mixed precision, as `torch.amp`: [`autocast`](amp::autocast) regions
/// and the [`GradScaler`](amp::GradScaler) that keeps float16 gradients
/// from underflowing.
pub mod amp {
    pub use wgrad_autograd::optim::{GradScaler, GradScalerConfig};
    pub use wgrad_autograd::{AutocastGuard, autocast, autocast_dtype, is_autocast_enabled};
}

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
