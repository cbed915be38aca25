//! `CpuTensor`: wgrad's CPU device, built on ndarray, and the reference
//! oracle the GPU kernels are tested against.
//!
//! The op set and its semantics are the contract in `docs/OPS.md`; the
//! scalar definition of every elementwise op comes from `wgrad_core::ops`,
//! so this crate only decides how to walk shapes, never what an op means.

#![deny(missing_docs)]

/// Runs `$body` with the type alias `$T` bound to the Rust element type of
/// `$dtype`, for ops that are generic over every dtype (data movement).
macro_rules! with_dtype {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            wgrad_core::DType::F32 => {
                type $T = f32;
                $body
            }
            wgrad_core::DType::U32 => {
                type $T = u32;
                $body
            }
            wgrad_core::DType::I32 => {
                type $T = i32;
                $body
            }
            wgrad_core::DType::F16 => {
                type $T = half::f16;
                $body
            }
            wgrad_core::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
        }
    };
}

mod alloc;
mod attention;
mod backward;
mod buffer_cache;
mod conv;
mod creation;
mod dense;
mod elementwise;
mod indexing;
mod int_ops;
mod layer_norm;
mod matmul;
mod nn;
mod optim;
mod optim_adaptive;
mod parallel;
mod pool;
mod reduce;
mod sample;
mod softmax;
mod sort;
mod tensor;
mod views;

pub use buffer_cache::{cached_bytes, empty_cache};
pub use int_ops::BufferRef;
pub use tensor::CpuTensor;
pub use wgrad_core::{BinaryOp, CompareOp, DType, Element, Error, Result, UnaryOp};
